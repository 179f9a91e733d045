"""Pooling: max (with indices), average and adaptive average, 1-D and 2-D."""

from __future__ import annotations

from typing import Any

from ...dtype import Kind
from ...tensor import Tensor
from ._check import (
    IntOrSeq,
    Padding,
    _check_out,
    _rank,
    _tensor,
    _window_pads,
    pairs_1d,
    tuple_of,
)


def _pool_args(op: str, x: Tensor, dims: int, kernel_size: IntOrSeq, stride: IntOrSeq | None,
               padding: Padding, dilation: IntOrSeq, ceil_mode: bool) -> tuple[Any, ...]:
    """(kernel, stride, padding pairs, dilation, extra): `extra` is what ceil mode adds after
    the input per dim, so that a last, partial window still gives an output."""
    _tensor(op, "input", x)
    _rank(op, "input", x, dims + 2, "NCHW" if dims == 2 else "NCL")
    k = tuple_of(op, "kernel_size", kernel_size, dims)
    s = k if stride is None else tuple_of(op, "stride", stride, dims)
    d = tuple_of(op, "dilation", dilation, dims)
    pads = _window_pads(op, pairs_1d(padding, dims), k, d, s)
    _check_out(op, x, x.shape[2:], pads, k, s, d)
    extra = tuple(0 for _ in k)
    if ceil_mode:
        extra = tuple(_ceil_extra(n, kk, ss, dd, lo, hi) for n, kk, ss, dd, (lo, hi) in
                      zip(x.shape[2:], k, s, d, pads, strict=True))
    return k, s, pads, d, extra


def _ceil_extra(size: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    """Padding ceil mode adds after the input: PyTorch's rule, under which the last window
    must start inside the input or its left padding."""
    span, total = d * (k - 1) + 1, size + lo + hi
    out = -(-(total - span) // s) + 1
    if (out - 1) * s >= size + lo:
        out -= 1
    return max(0, (out - 1) * s + span - total)


def _with_extra(pads: tuple[tuple[int, int], ...],
                extra: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra, strict=True))


def max_pool2d_with_indices(x: Tensor, kernel_size: IntOrSeq, *, stride: IntOrSeq | None = None,
                            padding: Padding = 0, dilation: IntOrSeq = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """Max over windows, and the flat index (into H*W) of each max (PyTorch's layout).

    Shapes: (N, C, H, W) -> (N, C, OH, OW) twice. `stride` defaults to the kernel size;
    `ceil_mode` rounds the output size up, as PyTorch and ONNX do.
    """
    k, s, pads, d, extra = _pool_args("max_pool2d", x, 2, kernel_size, stride, padding,
                                      dilation, ceil_mode)
    out, idx = x.device.max_pool2d_with_indices(x.into_primitive(), k, s,
                                                _with_extra(pads, extra), d)
    return x._new(out), x._new(idx, Kind.INT)


def max_pool2d(x: Tensor, kernel_size: IntOrSeq, *, stride: IntOrSeq | None = None,
               padding: Padding = 0, dilation: IntOrSeq = 1, ceil_mode: bool = False) -> Tensor:
    """Max over windows. Shapes: (N, C, H, W) -> (N, C, OH, OW); stride defaults to kernel."""
    k, s, pads, d, extra = _pool_args("max_pool2d", x, 2, kernel_size, stride, padding,
                                      dilation, ceil_mode)
    return x._new(x.device.max_pool2d(x.into_primitive(), k, s, _with_extra(pads, extra), d))


def max_pool1d_with_indices(x: Tensor, kernel_size: int, *, stride: int | None = None,
                            padding: Padding = 0, dilation: int = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """Max over windows and each max's index along L. Shapes: (N, C, L) -> (N, C, OL) twice."""
    k, s, pads, d, extra = _pool_args("max_pool1d", x, 1, kernel_size, stride, padding,
                                      dilation, ceil_mode)
    out, idx = x.device.max_pool1d_with_indices(x.into_primitive(), k[0], s[0],
                                                _with_extra(pads, extra)[0], d[0])
    return x._new(out), x._new(idx, Kind.INT)


def max_pool1d(x: Tensor, kernel_size: int, *, stride: int | None = None, padding: Padding = 0,
               dilation: int = 1, ceil_mode: bool = False) -> Tensor:
    """Max over windows. Shapes: (N, C, L) -> (N, C, OL)."""
    k, s, pads, d, extra = _pool_args("max_pool1d", x, 1, kernel_size, stride, padding,
                                      dilation, ceil_mode)
    return x._new(x.device.max_pool1d(x.into_primitive(), k[0], s[0],
                                      _with_extra(pads, extra)[0], d[0]))


def _avg_plan(x: Tensor, pads: tuple[tuple[int, int], ...], extra: tuple[int, ...],
              include_pad: bool) -> tuple[Tensor, tuple[tuple[int, int], ...], bool]:
    """Input, padding and count rule for the backend. With ceil mode, the extra padding never
    counts (PyTorch divides by the window clipped to input + padding), so padding that does
    count is applied here as zeros that are then part of the input."""
    if not any(extra):
        return x, pads, include_pad
    if include_pad and any(lo or hi for lo, hi in pads):
        flat = [p for lo_hi in reversed(pads) for p in lo_hi]
        return x.pad(flat), tuple((0, e) for e in extra), False
    return x, _with_extra(pads, extra), False


def avg_pool2d(x: Tensor, kernel_size: IntOrSeq, *, stride: IntOrSeq | None = None,
               padding: Padding = 0, count_include_pad: bool = True,
               ceil_mode: bool = False) -> Tensor:
    """Mean over windows. Shapes: (N, C, H, W) -> (N, C, OH, OW).

    Padded zeros count in the mean unless `count_include_pad=False` (Burn's and PyTorch's
    default is True); `ceil_mode` rounds the output size up, as PyTorch does."""
    k, s, pads, _, extra = _pool_args("avg_pool2d", x, 2, kernel_size, stride, padding, 1,
                                      ceil_mode)
    xin, pads, include = _avg_plan(x, pads, extra, bool(count_include_pad))
    return x._new(x.device.avg_pool2d(xin.into_primitive(), k, s, pads, include))


def avg_pool1d(x: Tensor, kernel_size: int, *, stride: int | None = None, padding: Padding = 0,
               count_include_pad: bool = True, ceil_mode: bool = False) -> Tensor:
    """Mean over windows. Shapes: (N, C, L) -> (N, C, OL)."""
    k, s, pads, _, extra = _pool_args("avg_pool1d", x, 1, kernel_size, stride, padding, 1,
                                      ceil_mode)
    xin, pads, include = _avg_plan(x, pads, extra, bool(count_include_pad))
    return x._new(x.device.avg_pool1d(xin.into_primitive(), k[0], s[0], pads[0], include))


def adaptive_avg_pool2d(x: Tensor, output_size: IntOrSeq) -> Tensor:
    """Mean over adaptive windows giving exactly `output_size`.

    Shapes: (N, C, H, W) -> (N, C, *output_size)."""
    op = "adaptive_avg_pool2d"
    _tensor(op, "input", x)
    _rank(op, "input", x, 4, "NCHW")
    out = tuple_of(op, "output_size", output_size, 2)
    return x._new(x.device.adaptive_avg_pool2d(x.into_primitive(), out))


def adaptive_avg_pool1d(x: Tensor, output_size: int) -> Tensor:
    """Mean over adaptive windows. Shapes: (N, C, L) -> (N, C, output_size)."""
    op = "adaptive_avg_pool1d"
    _tensor(op, "input", x)
    _rank(op, "input", x, 3, "NCL")
    (out,) = tuple_of(op, "output_size", output_size, 1)
    return x._new(x.device.adaptive_avg_pool1d(x.into_primitive(), out))
