"""Pooling: MaxPool (with Indices), AveragePool, LpPool and their global forms, over any number
of spatial dims; pyrite's 2-d pools where they compute exactly what ONNX asks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from ....creation import arange, tensor
from ....dtype import DType, Kind
from ....nn import functional as F
from ....tensor import Tensor
from ..registry import op
from ._util import as_i64, floated, pad_dim, restore, to_2d
from .conv import spatial_pads


class _Axis(NamedTuple):
    """One pooled dim: size, window, stride, dilation, pads, output size, ceil-mode extras."""

    size: int
    k: int
    s: int
    d: int
    lo: int
    hi: int
    out: int
    front: int
    back: int


def _geometry(x: Tensor, kernel: Sequence[int], strides: Sequence[int] | None,
              pads: Sequence[int] | None, auto_pad: str, dilations: Sequence[int] | None,
              ceil_mode: int, split_extra: bool) -> list[_Axis]:
    """The pooling geometry ONNX's reference computes, one _Axis per spatial dim."""
    n = len(kernel)
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    pairs = spatial_pads(pads, n)
    out: list[_Axis] = []
    for i, (size, k, s, d) in enumerate(zip(x.shape[2:], kernel, st, dl, strict=True)):
        span = d * (k - 1) + 1
        lo, hi = pairs[i]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            count = -(-size // s)
            total = max(0, (count - 1) * s + span - size)
            lo, hi = total // 2, total - total // 2
            if auto_pad == "SAME_LOWER":
                lo, hi = hi, lo
        elif auto_pad == "VALID":
            lo = hi = 0
            count = (size - span) // s + 1
        elif ceil_mode:
            count = -(-(size + lo + hi - span) // s) + 1
            if (count - 1) * s >= size + lo:
                count -= 1
        else:
            count = (size + lo + hi - span) // s + 1
        extra = max(0, (count - 1) * s + span - size - lo - hi)
        front = extra // 2 if split_extra else 0
        out.append(_Axis(size, k, s, d, lo, hi, count, front, extra - front))
    return out


def _padded(x: Tensor, geo: list[_Axis], value: float) -> Tensor:
    """x padded with `value` as the pooling geometry says."""
    for i, g in enumerate(geo):
        x = pad_dim(x, 2 + i, g.lo + g.front, g.hi + g.back, value)
    return x


def _windows(xp: Tensor, geo: list[_Axis]) -> Iterator[tuple[tuple[int, ...], Tensor]]:
    """(kernel offset, the strided view of xp each window reads at that offset)."""
    for offs in itertools.product(*(range(g.k) for g in geo)):
        ranges: list[Any] = [None, None]
        ranges += [slice(j * g.d, j * g.d + (g.out - 1) * g.s + 1, g.s)
                   for j, g in zip(offs, geo, strict=True)]
        yield offs, xp.slice(ranges)


def _grid(values: Sequence[Sequence[float]], like: Tensor, dtype: DType,
          product: bool = False) -> Tensor:
    """The outer sum (or product) of per-dim host vectors, shaped (1, 1, *lengths)."""
    n = len(values)
    out: Tensor | None = None
    for i, v in enumerate(values):
        shape = [1, 1] + [len(v) if j == i else 1 for j in range(n)]
        t = tensor(list(v), device=like.device, dtype=dtype).reshape(shape)
        out = t if out is None else (out * t if product else out + t)
    assert out is not None
    return out


def _lowest(x: Tensor) -> float:
    """The padding value max pooling never picks."""
    return -math.inf if x.kind is Kind.FLOAT else x.dtype.bounds[0]


def _max_windows(x: Tensor, geo: list[_Axis], storage_order: int) -> tuple[Tensor, Tensor]:
    """Window maxima and ONNX indices (flat over the whole input, first maximum wins)."""
    xp = _padded(x, geo, _lowest(x))
    best: Tensor | None = None
    index: Tensor | None = None
    order = range(len(geo)) if storage_order else reversed(range(len(geo)))
    step, strides = 1, [0] * len(geo)
    for i in order:
        strides[i], step = step, step * geo[i].size
    for offs, v in _windows(xp, geo):
        pos = [[(o * g.s + j * g.d - g.lo) * strides[i] for o in range(g.out)]
               for i, (j, g) in enumerate(zip(offs, geo, strict=True))]
        at = _grid(pos, x, x.device.int_dtype).expand(v.shape)
        if best is None or index is None:
            best, index = v, at
            continue
        better = v.greater(best)
        best, index = best.mask_where(better, v), index.mask_where(better, at)
    assert best is not None and index is not None
    planes = math.prod(x.shape[:2])
    base = arange(0, planes, device=x.device).cast(index.dtype) * step
    index = index + base.reshape(list(x.shape[:2]) + [1] * len(geo))
    return best, as_i64(index)


def _counts(geo: list[_Axis], include_pad: int) -> list[list[float]]:
    """Per dim and output position, how many window entries the average divides by."""
    out = []
    for g in geo:
        bound = g.size + g.lo + g.hi
        first, last = g.front + g.lo, g.front + g.lo + g.size
        row = []
        for o in range(g.out):
            taps = [o * g.s + j * g.d for j in range(g.k)]
            taps = [p for p in taps if p < bound]
            if not include_pad:
                taps = [p for p in taps if first <= p < last]
            row.append(float(max(1, len(taps))))
        out.append(row)
    return out


def _sum_windows(xp: Tensor, geo: list[_Axis]) -> Tensor:
    """The sum over every window of the padded input."""
    total: Tensor | None = None
    for _, v in _windows(xp, geo):
        total = v if total is None else total + v
    assert total is not None
    return total


def _fast_2d(x: Tensor, geo: list[_Axis], avg: bool) -> bool:
    """Whether pyrite's own 1-d/2-d pooling computes exactly what ONNX asks."""
    return (x.kind is Kind.FLOAT and len(geo) in (1, 2)
            and all(max(g.lo, g.hi) <= g.k // 2 and g.front == 0 for g in geo)
            and not (avg and any(g.d != 1 for g in geo)))


@op("MaxPool")
def max_pool(x: Tensor, *, kernel_shape: Sequence[int], strides: Sequence[int] | None = None,
             pads: Sequence[int] | None = None, auto_pad: str = "NOTSET", ceil_mode: int = 0,
             dilations: Sequence[int] | None = None, storage_order: int = 0,
             outputs: int = 2) -> tuple[Tensor, ...]:
    """Max pooling over any number of spatial dims; also the flat int64 Indices when the
    node asks for them."""
    geo = _geometry(x, kernel_shape, strides, pads, auto_pad, dilations, ceil_mode, False)
    if not _fast_2d(x, geo, avg=False) or storage_order:
        return _max_windows(x, geo, storage_order)
    ceil = bool(ceil_mode) and auto_pad in ("NOTSET", "")
    k = [g.k for g in geo]
    st = [g.s for g in geo]
    dl = [g.d for g in geo]
    pairs = [(g.lo, g.hi) for g in geo]
    if outputs < 2:
        if len(k) == 1:
            return (F.max_pool2d(to_2d(x), (1, k[0]), stride=(1, st[0]),
                                 padding=((0, 0), pairs[0]), dilation=(1, dl[0]),
                                 ceil_mode=ceil).squeeze_dims([2]),)
        return (F.max_pool2d(x, k, stride=st, padding=tuple(pairs), dilation=dl,
                             ceil_mode=ceil),)
    if len(k) == 1:
        y, idx = F.max_pool2d_with_indices(to_2d(x), (1, k[0]), stride=(1, st[0]),
                                           padding=((0, 0), pairs[0]), dilation=(1, dl[0]),
                                           ceil_mode=ceil)
        y, idx = y.squeeze_dims([2]), idx.squeeze_dims([2])
    else:
        y, idx = F.max_pool2d_with_indices(x, k, stride=st, padding=tuple(pairs), dilation=dl,
                                           ceil_mode=ceil)
    planes = math.prod(x.shape[:2])
    base = arange(0, planes, device=x.device).cast(idx.dtype) * math.prod(x.shape[2:])
    return y, as_i64(idx + base.reshape(list(x.shape[:2]) + [1] * len(k)))


@op("AveragePool")
def average_pool(x: Tensor, *, kernel_shape: Sequence[int],
                 strides: Sequence[int] | None = None, pads: Sequence[int] | None = None,
                 auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
                 dilations: Sequence[int] | None = None) -> Tensor:
    """Average pooling over any number of spatial dims."""
    geo = _geometry(x, kernel_shape, strides, pads, auto_pad, dilations, ceil_mode, True)
    if _fast_2d(x, geo, avg=True):
        ceil = bool(ceil_mode) and auto_pad in ("NOTSET", "")
        k = [g.k for g in geo]
        st = [g.s for g in geo]
        pairs = [(g.lo, g.hi) for g in geo]
        if len(k) == 1:
            y = F.avg_pool2d(to_2d(x), (1, k[0]), stride=(1, st[0]),
                             padding=((0, 0), pairs[0]), ceil_mode=ceil,
                             count_include_pad=bool(count_include_pad))
            return y.squeeze_dims([2])
        return F.avg_pool2d(x, k, stride=st, padding=tuple(pairs), ceil_mode=ceil,
                            count_include_pad=bool(count_include_pad))
    xf = floated(x)
    total = _sum_windows(_padded(xf, geo, 0.0), geo)
    counts = _grid(_counts(geo, count_include_pad), xf, xf.dtype, product=True)
    return restore(total / counts, x)


@op("LpPool")
def lp_pool(x: Tensor, *, kernel_shape: Sequence[int], strides: Sequence[int] | None = None,
            pads: Sequence[int] | None = None, auto_pad: str = "NOTSET", ceil_mode: int = 0,
            dilations: Sequence[int] | None = None, p: int = 2) -> Tensor:
    """(sum over each window of |x|^p)^(1/p); padding counts as zeros."""
    geo = _geometry(x, kernel_shape, strides, pads, auto_pad, dilations, ceil_mode, True)
    xf = floated(x)
    powered = xf * xf if p == 2 else xf.abs().powf(float(p))
    total = _sum_windows(_padded(powered, geo, 0.0), geo)
    return restore(total.sqrt() if p == 2 else total.powf(1.0 / p), x)


@op("GlobalAveragePool")
def global_average_pool(x: Tensor) -> Tensor:
    """Mean over every spatial dim, kept as size 1."""
    if x.ndim == 4 and x.dtype.kind is Kind.FLOAT:
        # one pass, one invocation per (n, c): a mean per dim runs two reductions, each a
        # workgroup (and its barriers) per output row, which SwiftShader takes 1.5 s over for
        # SqueezeNet's 1000 x 14 x 14 (the /classify page)
        return F.adaptive_avg_pool2d(x, 1)
    for d in range(2, x.ndim):
        x = x.mean_dim(d)
    return x


@op("GlobalMaxPool")
def global_max_pool(x: Tensor) -> Tensor:
    """Max over every spatial dim, kept as size 1."""
    for d in range(2, x.ndim):
        x = x.max_dim(d)
    return x


@op("GlobalLpPool")
def global_lp_pool(x: Tensor, *, p: int = 2) -> Tensor:
    """(sum of |x|^p over every spatial dim)^(1/p), kept as size 1."""
    y = x * x if p == 2 else x.abs().powf(float(p))
    for d in range(2, x.ndim):
        y = y.sum_dim(d)
    return y.sqrt() if p == 2 else y.powf(1.0 / p)


__all__ = ["average_pool", "global_average_pool", "global_lp_pool", "global_max_pool", "lp_pool",
           "max_pool"]
