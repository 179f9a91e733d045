"""Functional module ops: Tensor in, Tensor out, validated once here.

Each function checks kinds, ranks, devices and sizes and raises an error that names the op and
says how to fix the call; then it resolves the options (ints to per-dim tuples, padding modes to
`(before, after)` pairs) and calls the backend's module op, which assumes valid input.

Layouts are NCHW for 2-D ops, NCL for 1-D ops and NCDHW for 3-D ops.

>>> from pyrite import ones
>>> from pyrite.nn.functional import conv2d
>>> conv2d(ones((1, 1, 5, 5)), ones((2, 1, 3, 3)), padding="same").shape
(1, 2, 5, 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backend.module_ops import conv_out_size
from ..dtype import Kind, promote
from ..errors import DeviceError, KindError, ShapeError
from ..tensor import Tensor

IntOrSeq = int | Sequence[int]
Padding = str | int | Sequence[int] | Sequence[Sequence[int]]

_FLOAT = frozenset({Kind.FLOAT})


# ---- validation helpers -------------------------------------------------------------------------
def _tensor(op: str, name: str, value: object, kind: Kind = Kind.FLOAT) -> Tensor:
    if not isinstance(value, Tensor):
        raise KindError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if value.kind is not kind:
        fix = ".float()" if kind is Kind.FLOAT else ".int()"
        article = "an" if kind is Kind.INT else "a"
        raise KindError(f"{op}: {name} must be {article} {kind.value} tensor, got "
                        f"{value.kind.value} (dtype {value.dtype}); convert it with {fix}")
    return value


def _rank(op: str, name: str, x: Tensor, rank: int, layout: str) -> None:
    if x.ndim != rank:
        raise ShapeError(f"{op}: {name} must have rank {rank} ({layout}), got shape {x.shape}")


def _same_device(op: str, x: Tensor, *others: Tensor | None) -> None:
    for other in others:
        if other is not None and other.device != x.device:
            raise DeviceError(f"{op}: input is on {x.device.name}, a weight on "
                              f"{other.device.name}; move the module with .to_device(...)")


def _match_dtype(x: Tensor, *others: Tensor | None) -> list[Tensor | None]:
    """The tensors cast to one float dtype (the widest), as binary ops promote."""
    dt = x.dtype
    for t in others:
        if t is not None:
            dt = promote(dt, t.dtype)
    return [None if t is None else (t if t.dtype is dt else t.cast(dt)) for t in (x, *others)]


def tuple_of(op: str, name: str, value: IntOrSeq, n: int, *, minimum: int = 1) -> tuple[int, ...]:
    """An int or a sequence of n ints, as n ints >= minimum."""
    vals = (value,) * n if isinstance(value, int) else tuple(value)
    if len(vals) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        raise ShapeError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < minimum for v in vals):
        raise ShapeError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return vals


def resolve_padding(op: str, padding: Padding, kernel: tuple[int, ...],
                    dilation: tuple[int, ...], stride: tuple[int, ...]) -> tuple[
                        tuple[int, int], ...]:
    """Padding as one (before, after) pair per spatial dim.

    "valid" is no padding; "same" keeps the size (stride 1 only; an even kernel pads one more
    after than before, as PyTorch and Burn do); an int or one int per dim pads both sides;
    one (before, after) pair per dim is used as given.

    >>> resolve_padding("conv2d", "same", (4, 3), (1, 1), (1, 1))
    ((1, 2), (1, 1))
    """
    n = len(kernel)
    if isinstance(padding, str):
        mode = padding.lower()
        if mode == "valid":
            return ((0, 0),) * n
        if mode == "same":
            if any(s != 1 for s in stride):
                raise ShapeError(f"{op}: padding='same' needs stride 1, got stride {stride}; "
                                 f"give explicit padding instead")
            pads = []
            for k, d in zip(kernel, dilation, strict=True):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        raise ShapeError(f"{op}: padding {padding!r} is not 'valid' or 'same'")
    if isinstance(padding, int) or (isinstance(padding, Sequence) and all(
            isinstance(p, int) for p in padding)):
        each = tuple_of(op, "padding", padding, n, minimum=0)  # type: ignore[arg-type]
        return tuple((p, p) for p in each)
    pairs = tuple(tuple(p) for p in padding)  # type: ignore[arg-type]
    if len(pairs) != n or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ShapeError(f"{op}: padding must be 'valid', 'same', an int, {n} ints or {n} "
                         f"(before, after) pairs of ints >= 0, got {padding!r}")
    return pairs  # type: ignore[return-value]


def pairs_1d(padding: Padding, dims: int) -> Padding:
    """In 1-D, a (before, after) pair of ints means one pair, not one int per dim."""
    if dims == 1 and not isinstance(padding, (str, int)) and len(padding) == 2 and all(
            isinstance(p, int) for p in padding):
        return ((int(padding[0]), int(padding[1])),)  # type: ignore[arg-type]
    return padding


def _check_out(op: str, x: Tensor, size: tuple[int, ...], pads: tuple[tuple[int, int], ...],
               kernel: tuple[int, ...], stride: tuple[int, ...],
               dilation: tuple[int, ...]) -> None:
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads, strict=True))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    if any(p < s for p, s in zip(padded, span, strict=True)):
        raise ShapeError(f"{op}: the window (kernel {kernel}, dilation {dilation}, spanning "
                         f"{span}) is larger than the padded input {padded} (input shape "
                         f"{x.shape}); use a smaller kernel or more padding")


def _window_pads(op: str, padding: Padding, kernel: tuple[int, ...], dilation: tuple[int, ...],
                 stride: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    pads = resolve_padding(op, padding, kernel, dilation, stride)
    for (lo, hi), k in zip(pads, kernel, strict=True):
        if max(lo, hi) > k // 2 and not isinstance(padding, str):
            raise ShapeError(f"{op}: padding {padding!r} is more than half the kernel "
                             f"{kernel}; a window could see only padding")
    return pads


# ---- linear -------------------------------------------------------------------------------------
def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight + bias, weight (d_input, d_output) as Burn stores it.

    Shapes: (..., d_input) -> (..., d_output).
    """
    op = "linear"
    _tensor(op, "input", x)
    _tensor(op, "weight", weight)
    if x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"linear: input has {x.shape[-1] if x.ndim else 0} features (shape "
                         f"{x.shape}), the weight expects {weight.shape[0]} (shape "
                         f"{weight.shape})")
    _same_device(op, x, weight, bias)
    out = x @ weight
    return out if bias is None else out + bias


# ---- convolution --------------------------------------------------------------------------------
def _conv_args(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, dims: int,
               transposed: bool, groups: int) -> tuple[Tensor, Tensor, Tensor | None]:
    layout = {1: "NCL", 2: "NCHW", 3: "NCDHW"}[dims]
    _tensor(op, "input", x)
    _tensor(op, "weight", weight)
    if bias is not None:
        _tensor(op, "bias", bias)
    _rank(op, "input", x, dims + 2, layout)
    _rank(op, "weight", weight, dims + 2, "out, in/groups, kernel..." if not transposed
          else "in, out/groups, kernel...")
    _same_device(op, x, weight, bias)
    if not isinstance(groups, int) or groups < 1:
        raise ShapeError(f"{op}: groups must be an int >= 1, got {groups!r}")
    c_in = x.shape[1]
    if transposed:
        if weight.shape[0] != c_in:
            raise ShapeError(f"{op}: input has {c_in} channels, the weight {weight.shape} "
                             f"expects {weight.shape[0]}")
        c_out = weight.shape[1] * groups
    else:
        if weight.shape[1] * groups != c_in:
            raise ShapeError(f"{op}: input has {c_in} channels, the weight {weight.shape} "
                             f"with groups={groups} expects {weight.shape[1] * groups}")
        c_out = weight.shape[0]
    if c_in % groups or c_out % groups:
        raise ShapeError(f"{op}: groups={groups} must divide the input channels ({c_in}) and "
                         f"the output channels ({c_out})")
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},), got {bias.shape}")
    x, weight, bias = _match_dtype(x, weight, bias)  # type: ignore[assignment]  # x is set
    return x, weight, bias


def _conv_nd(op: str, dims: int, x: Tensor, weight: Tensor, bias: Tensor | None,
             stride: IntOrSeq, padding: Padding, dilation: IntOrSeq, groups: int) -> Tensor:
    """conv2d and conv3d: check the arguments, resolve the padding, call the backend's op."""
    x, weight, bias = _conv_args(op, x, weight, bias, dims, False, groups)
    kernel = weight.shape[2:]
    s = tuple_of(op, "stride", stride, dims)
    d = tuple_of(op, "dilation", dilation, dims)
    pads = resolve_padding(op, padding, kernel, d, s)
    _check_out(op, x, x.shape[2:], pads, kernel, s, d)
    prim = getattr(x.device, op)(x.into_primitive(), weight.into_primitive(),
                                 None if bias is None else bias.into_primitive(), s, pads, d,
                                 groups)
    return x._new(prim)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: IntOrSeq = 1,
           padding: Padding = 0, dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, as every framework computes it).

    Shapes: input (N, C_in, H, W), weight (C_out, C_in/groups, kh, kw), bias (C_out,)
    -> (N, C_out, OH, OW). Padding: "valid", "same", an int, (ph, pw) or
    ((top, bottom), (left, right)).
    """
    return _conv_nd("conv2d", 2, x, weight, bias, stride, padding, dilation, groups)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: int = 1,
           padding: Padding = 0, dilation: int = 1, groups: int = 1) -> Tensor:
    """1-D convolution. Shapes: (N, C_in, L), weight (C_out, C_in/groups, k) -> (N, C_out, OL)."""
    op = "conv1d"
    x, weight, bias = _conv_args(op, x, weight, bias, 1, False, groups)
    kernel = weight.shape[2:]
    (s,) = tuple_of(op, "stride", stride, 1)
    (d,) = tuple_of(op, "dilation", dilation, 1)
    pads = resolve_padding(op, pairs_1d(padding, 1), kernel, (d,), (s,))
    _check_out(op, x, x.shape[2:], pads, kernel, (s,), (d,))
    prim = x.device.conv1d(x.into_primitive(), weight.into_primitive(),
                           None if bias is None else bias.into_primitive(), s, pads[0], d, groups)
    return x._new(prim)


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: IntOrSeq = 1,
           padding: Padding = 0, dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """3-D convolution. Shapes: input (N, C_in, D, H, W), weight (C_out, C_in/groups, kd, kh,
    kw) -> (N, C_out, OD, OH, OW). Padding as conv2d's, with three dims.

    >>> from pyrite import ones
    >>> conv3d(ones((1, 2, 4, 5, 6)), ones((3, 2, 3, 3, 3)), padding=(1, 0, 1)).shape
    (1, 3, 4, 3, 6)
    """
    return _conv_nd("conv3d", 3, x, weight, bias, stride, padding, dilation, groups)


def _transpose_opts(op: str, dims: int, kernel: tuple[int, ...], stride: IntOrSeq,
                    padding: IntOrSeq, output_padding: IntOrSeq,
                    dilation: IntOrSeq) -> tuple[tuple[int, ...], ...]:
    s = tuple_of(op, "stride", stride, dims)
    p = tuple_of(op, "padding", padding, dims, minimum=0)
    op_ = tuple_of(op, "output_padding", output_padding, dims, minimum=0)
    d = tuple_of(op, "dilation", dilation, dims)
    if any(o >= max(si, di) for o, si, di in zip(op_, s, d, strict=True)):
        raise ShapeError(f"{op}: output_padding {op_} must be smaller than the stride {s} or "
                         f"the dilation {d}")
    return s, p, op_, d


def _transpose_size(op: str, x: Tensor, kernel: tuple[int, ...], s: tuple[int, ...],
                    p: tuple[int, ...], op_: tuple[int, ...], d: tuple[int, ...]) -> None:
    size = tuple((n - 1) * si - 2 * pi + di * (k - 1) + oi + 1 for n, k, si, pi, oi, di in
                 zip(x.shape[2:], kernel, s, p, op_, d, strict=True))
    if any(v < 1 for v in size):
        raise ShapeError(f"{op}: padding {p} leaves an empty output {size} for input shape "
                         f"{x.shape}")


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *,
                     stride: IntOrSeq = 1, padding: IntOrSeq = 0, output_padding: IntOrSeq = 0,
                     dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    Shapes: input (N, C_in, H, W), weight (C_in, C_out/groups, kh, kw) -> (N, C_out, OH, OW),
    OH = (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1.
    """
    op = "conv_transpose2d"
    x, weight, bias = _conv_args(op, x, weight, bias, 2, True, groups)
    kernel = weight.shape[2:]
    s, p, o, d = _transpose_opts(op, 2, kernel, stride, padding, output_padding, dilation)
    _transpose_size(op, x, kernel, s, p, o, d)
    prim = x.device.conv_transpose2d(x.into_primitive(), weight.into_primitive(),
                                     None if bias is None else bias.into_primitive(),
                                     s, p, o, d, groups)
    return x._new(prim)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: int = 1,
                     padding: int = 0, output_padding: int = 0, dilation: int = 1,
                     groups: int = 1) -> Tensor:
    """1-D transposed convolution. Shapes: (N, C_in, L), weight (C_in, C_out/groups, k)."""
    op = "conv_transpose1d"
    x, weight, bias = _conv_args(op, x, weight, bias, 1, True, groups)
    kernel = weight.shape[2:]
    s, p, o, d = _transpose_opts(op, 1, kernel, stride, padding, output_padding, dilation)
    _transpose_size(op, x, kernel, s, p, o, d)
    prim = x.device.conv_transpose1d(x.into_primitive(), weight.into_primitive(),
                                     None if bias is None else bias.into_primitive(),
                                     s[0], p[0], o[0], d[0], groups)
    return x._new(prim)


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *,
                     stride: IntOrSeq = 1, padding: IntOrSeq = 0, output_padding: IntOrSeq = 0,
                     dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """3-D transposed convolution. Shapes: input (N, C_in, D, H, W), weight (C_in,
    C_out/groups, kd, kh, kw) -> (N, C_out, OD, OH, OW), sizes as conv_transpose2d's."""
    op = "conv_transpose3d"
    x, weight, bias = _conv_args(op, x, weight, bias, 3, True, groups)
    kernel = weight.shape[2:]
    s, p, o, d = _transpose_opts(op, 3, kernel, stride, padding, output_padding, dilation)
    _transpose_size(op, x, kernel, s, p, o, d)
    prim = x.device.conv_transpose3d(x.into_primitive(), weight.into_primitive(),
                                     None if bias is None else bias.into_primitive(),
                                     s, p, o, d, groups)
    return x._new(prim)


# ---- pooling ------------------------------------------------------------------------------------
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


# ---- interpolation and embedding ----------------------------------------------------------------
def _resize(op: str, x: Tensor, dims: int, output_size: IntOrSeq | None,
            scale_factor: float | Sequence[float] | None) -> tuple[int, ...]:
    _tensor(op, "input", x)
    _rank(op, "input", x, dims + 2, "NCHW" if dims == 2 else "NCL")
    if (output_size is None) == (scale_factor is None):
        raise ShapeError(f"{op}: give exactly one of output_size and scale_factor")
    if output_size is not None:
        return tuple_of(op, "output_size", output_size, dims)
    scales = (float(scale_factor),) * dims if isinstance(scale_factor, (int, float)) \
        else tuple(scale_factor or ())
    if len(scales) != dims or any(f <= 0 for f in scales):
        raise ShapeError(f"{op}: scale_factor must be a positive number or {dims} of them, "
                         f"got {scale_factor!r}")
    # floor(size * scale), as PyTorch and Burn compute it
    size = tuple(int(n * f) for n, f in zip(x.shape[2:], scales, strict=True))
    if any(v < 1 for v in size):
        raise ShapeError(f"{op}: scale_factor {scale_factor} gives an empty output {size}")
    return size


def interpolate2d(x: Tensor, output_size: IntOrSeq | None = None, *,
                  scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                  align_corners: bool = True) -> Tensor:
    """Resize H and W. Shapes: (N, C, H, W) -> (N, C, OH, OW).

    mode "nearest" takes src = floor(dst * in / out); "bilinear" blends the two nearest rows and
    columns, with the corner samples aligned when `align_corners` (Burn's default) or half-pixel
    centres otherwise (PyTorch's default).
    """
    op = "interpolate2d"
    size = _resize(op, x, 2, output_size, scale_factor)
    if mode not in ("nearest", "bilinear"):
        raise ShapeError(f"{op}: mode must be 'nearest' or 'bilinear', got {mode!r}")
    return x._new(x.device.interpolate2d(x.into_primitive(), size, mode, bool(align_corners)))


def interpolate1d(x: Tensor, output_size: int | None = None, *,
                  scale_factor: float | None = None, mode: str = "nearest",
                  align_corners: bool = True) -> Tensor:
    """Resize L. Shapes: (N, C, L) -> (N, C, OL); modes "nearest" and "linear"."""
    op = "interpolate1d"
    (size,) = _resize(op, x, 1, output_size, scale_factor)
    if mode not in ("nearest", "linear"):
        raise ShapeError(f"{op}: mode must be 'nearest' or 'linear', got {mode!r}")
    return x._new(x.device.interpolate1d(x.into_primitive(), size, mode, bool(align_corners)))


def embedding(weight: Tensor, indices: Tensor) -> Tensor:
    """Rows of `weight` at `indices`. Shapes: weight (V, D), indices (...) Int -> (..., D)."""
    op = "embedding"
    _tensor(op, "weight", weight)
    _tensor(op, "indices", indices, Kind.INT)
    _rank(op, "weight", weight, 2, "num_embeddings, d_model")
    _same_device(op, weight, indices)
    if indices.numel():
        lo, hi = indices.min().into_scalar(), indices.max().into_scalar()
        if lo < 0 or hi >= weight.shape[0]:
            raise ShapeError(f"{op}: index {lo if lo < 0 else hi} is out of range for "
                             f"{weight.shape[0]} embeddings")
    if indices.dtype is not weight.device.int_dtype:
        indices = indices.cast(weight.device.int_dtype)
    return weight._new(weight.device.embedding(weight.into_primitive(),
                                               indices.into_primitive()))


__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "conv1d",
    "conv2d", "conv3d", "conv_out_size", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "embedding",
    "interpolate1d", "interpolate2d", "linear", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "max_pool2d_with_indices", "pairs_1d", "resolve_padding", "tuple_of",
]
