"""Linear quantization: QuantizeLinear, DequantizeLinear and the integer/QLinear products."""

from __future__ import annotations

from collections.abc import Sequence

from ....dtype import DType, Kind
from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm
from ._util import dtype_of, wide_dtype
from .conv import _conv, auto_pads


def as_wide(x: Tensor) -> Tensor:
    """x as the device's widest float dtype."""
    return x.cast(wide_dtype(x.device))


def spread(p: Tensor, shape: Sequence[int], axis: int, block_size: int = 0) -> Tensor:
    """A scale or zero point laid out to broadcast against a tensor of `shape`."""
    rank = len(shape)
    if p.numel() == 1:
        return p.reshape([1] * rank)
    d = norm(axis, rank)
    if not block_size:
        return p.reshape([p.numel() if i == d else 1 for i in range(rank)])
    blocks = p.shape[d]
    wide_shape = list(p.shape[:d + 1]) + [block_size] + list(p.shape[d + 1:])
    rep = p.unsqueeze_dim(d + 1).expand(wide_shape)
    rep = rep.reshape(list(p.shape[:d]) + [blocks * block_size] + list(p.shape[d + 1:]))
    return rep.narrow(d, 0, shape[d])


def saturated(y: Tensor, dtype: DType) -> Tensor:
    """Float values rounded half to even, clamped to `dtype`'s range and cast to it."""
    lo, hi = dtype.bounds
    return y.round().clamp(lo, hi).cast(dtype)


@op("QuantizeLinear")
def quantize_linear(x: Tensor, y_scale: Tensor, y_zero_point: Tensor | None = None, *,
                    axis: int = 1, block_size: int = 0, output_dtype: int = 0,
                    precision: int = 0, saturate: int = 1) -> Tensor:
    """round(x / scale) + zero point, saturated; per tensor, per axis or per block."""
    del saturate  # integer targets always saturate; float8 targets are not supported
    if y_zero_point is not None:
        target = y_zero_point.dtype
    else:
        target = dtype_of(output_dtype) if output_dtype else DType.U8
    if target.kind is not Kind.INT:
        raise ValueError(f"QuantizeLinear to {target} is not supported")
    scale = spread(y_scale, x.shape, axis, block_size)
    if precision:
        ftype = dtype_of(precision)
        q = x.cast(ftype) / scale.cast(ftype)
    else:
        q = (x if x.kind is Kind.FLOAT else as_wide(x)) / scale
    q = as_wide(q.round())
    if y_zero_point is not None:
        q = q + as_wide(spread(y_zero_point, x.shape, axis, block_size))
    return q.clamp(*target.bounds).cast(target)


@op("DequantizeLinear")
def dequantize_linear(x: Tensor, x_scale: Tensor, x_zero_point: Tensor | None = None, *,
                      axis: int = 1, block_size: int = 0, output_dtype: int = 0) -> Tensor:
    """(x - zero point) * scale, in the scale's dtype (or output_dtype)."""
    target = dtype_of(output_dtype) if output_dtype else x_scale.dtype
    v = as_wide(x)
    if x_zero_point is not None:
        v = v - as_wide(spread(x_zero_point, x.shape, axis, block_size))
    return (v * as_wide(spread(x_scale, x.shape, axis, block_size))).cast(target)


@op("DynamicQuantizeLinear")
def dynamic_quantize_linear(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """uint8 quantization with scale and zero point chosen from x's range (0 included)."""
    flat = x.cast(DType.F32).reshape([-1])
    hi = flat.max_dim(0).clamp_min(0.0)
    lo = flat.min_dim(0).clamp_max(0.0)
    span = hi - lo
    scale = span.mask_fill(span.equal_elem(0.0), 1.0) / 255.0
    zp = (lo.neg() / scale).clamp(0.0, 255.0).round()
    y = saturated((flat / scale).round() + zp.reshape([1]), DType.U8).reshape(x.shape)
    return y, scale.reshape(()).cast(x.dtype), zp.reshape(()).cast(DType.U8)


def shifted(x: Tensor, zero_point: Tensor | None, shape: Sequence[int]) -> Tensor:
    """x minus its zero point (shaped to broadcast as `shape`), as wide floats."""
    v = as_wide(x)
    if zero_point is None:
        return v
    return v - as_wide(zero_point.reshape(list(shape)) if zero_point.numel() > 1
                       else zero_point.reshape([1] * x.ndim))


@op("MatMulInteger")
def matmul_integer(a: Tensor, b: Tensor, a_zero_point: Tensor | None = None,
                   b_zero_point: Tensor | None = None) -> Tensor:
    """(A - a_zp) @ (B - b_zp) as int32; a 1-d zero point is per row of A / column of B."""
    lhs = shifted(a, a_zero_point, [-1, 1])
    rhs = shifted(b, b_zero_point, [1, -1])
    return lhs.matmul(rhs).round().cast(DType.I32)


def _integer_conv(x: Tensor, w: Tensor, auto_pad: str, dilations: Sequence[int] | None,
                  group: int, kernel_shape: Sequence[int] | None,
                  pads: Sequence[int] | None, strides: Sequence[int] | None) -> Tensor:
    """The convolution of already shifted wide-float operands (integral results)."""
    n = w.ndim - 2
    kernel = list(kernel_shape or w.shape[2:])
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    pairs = auto_pads(auto_pad, x.shape[2:], kernel, st, dl, pads)
    return _conv(x, w, st, dl, pairs, group).round()


def _per_channel(t: Tensor, rank: int) -> list[int]:
    """The shape that lays a 1-d per-output-channel value along dim 0 of a weight."""
    return [-1] + [1] * (rank - 1) if t.numel() > 1 else [1] * rank


@op("ConvInteger")
def conv_integer(x: Tensor, w: Tensor, x_zero_point: Tensor | None = None,
                 w_zero_point: Tensor | None = None, *, auto_pad: str = "NOTSET",
                 dilations: Sequence[int] | None = None, group: int = 1,
                 kernel_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None,
                 strides: Sequence[int] | None = None) -> Tensor:
    """Convolution of zero-point-shifted integers, as int32."""
    xs = shifted(x, x_zero_point, [1] * x.ndim)
    ws = shifted(w, w_zero_point, _per_channel(w_zero_point, w.ndim)
                 if w_zero_point is not None else [])
    y = _integer_conv(xs, ws, auto_pad, dilations, group, kernel_shape, pads, strides)
    return y.cast(DType.I32)


def _requantize(acc: Tensor, multiplier: Tensor, y_zero_point: Tensor | None,
                like: Tensor) -> Tensor:
    """An integral accumulator scaled, shifted and saturated to the output type."""
    target = y_zero_point.dtype if y_zero_point is not None else like.dtype
    y = acc * as_wide(multiplier)
    if y_zero_point is not None:
        y = y + as_wide(y_zero_point.reshape([1] * acc.ndim))
    return saturated(y, target)


@op("QLinearMatMul")
def qlinear_matmul(a: Tensor, a_scale: Tensor, a_zero_point: Tensor | None, b: Tensor,
                   b_scale: Tensor, b_zero_point: Tensor | None, y_scale: Tensor,
                   y_zero_point: Tensor | None = None) -> Tensor:
    """Quantized matmul: integer product requantized by a_scale * b_scale / y_scale."""
    lhs = shifted(a, a_zero_point, [-1, 1])
    rhs = shifted(b, b_zero_point, [1, -1])
    acc = lhs.matmul(rhs).round()
    multiplier = (a_scale.reshape([-1, 1]) * b_scale.reshape([1, -1])
                  / y_scale.reshape([1, 1]))
    return _requantize(acc, multiplier, y_zero_point, a)


@op("QLinearConv")
def qlinear_conv(x: Tensor, x_scale: Tensor, x_zero_point: Tensor | None, w: Tensor,
                 w_scale: Tensor, w_zero_point: Tensor | None, y_scale: Tensor,
                 y_zero_point: Tensor | None = None, b: Tensor | None = None, *,
                 auto_pad: str = "NOTSET", dilations: Sequence[int] | None = None,
                 group: int = 1, kernel_shape: Sequence[int] | None = None,
                 pads: Sequence[int] | None = None, strides: Sequence[int] | None = None
                 ) -> Tensor:
    """Quantized convolution: integer conv plus int32 bias, requantized."""
    xs = shifted(x, x_zero_point, [1] * x.ndim)
    ws = shifted(w, w_zero_point, _per_channel(w_zero_point, w.ndim)
                 if w_zero_point is not None else [])
    acc = _integer_conv(xs, ws, auto_pad, dilations, group, kernel_shape, pads, strides)
    if b is not None:
        acc = acc + as_wide(b).reshape([1, -1] + [1] * (acc.ndim - 2))
    rank = acc.ndim
    ws_shape = [1, -1] + [1] * (rank - 2) if w_scale.numel() > 1 else [1] * rank
    multiplier = (x_scale.reshape([1] * rank) * w_scale.reshape(ws_shape)
                  / y_scale.reshape([1] * rank))
    return _requantize(acc, multiplier, y_zero_point, x)
