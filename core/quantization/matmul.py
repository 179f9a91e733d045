"""Products with a quantized right operand: `x @ w` where w is a QuantizedTensor.

Three paths, chosen by the weight's scheme and the device:

- **int8 GEMM** (QInt8 weights whose params are constant along the inner dim: per tensor, or
  per channel of the output axis): the activations are quantized too (dynamically, per tensor
  symmetric, unless they already are: static quantization), the integers multiply into int32
  accumulators, and the scales and zero points are applied after:
  sum_k (xq - zx)(wq - zw) = xq @ wq - zx * colsum(wq) - zw * rowsum(xq) + k * zx * zw.
- **weight-only** (QInt4, per-block params, or params varying along the inner dim): float
  activations times weights dequantized inside the kernel, where the device has such a kernel.
- **dequantize** everywhere else (autodiff devices, batched or 1-D weights): `x @ w.dequantize()`.

A device without integer kernels (a backend that registers none) computes the int8 path's
numbers with float products of the dequantized operands, so results agree across devices.
"""

from __future__ import annotations

from ..dtype import Kind
from ..errors import KindError, ShapeError
from ..tensor import Tensor
from .kernels import int_kernels, is_autodiff
from .scheme import Granularity, QuantizationScheme, QuantizationType
from .tensor import QuantizedTensor, quantize_dynamic

_DYNAMIC = QuantizationScheme.PerTensorSymmetric(QuantizationType.QInt8)


def int8_gemm_applies(w: QuantizedTensor) -> bool:
    """Whether the weight's params factor out of the inner sum (the int8 GEMM path)."""
    s = w.scheme
    if s.qtype is not QuantizationType.QInt8:
        return False
    if s.granularity is Granularity.Tensor:
        return True
    return s.granularity is Granularity.Channel and s.resolved_axis(w.shape) == 1


def quantized_matmul(x: Tensor, w: QuantizedTensor) -> Tensor:
    """x (..., k) @ w (k, n) with a quantized w (see the module docstring for the paths).

    Shapes: (..., m, k) @ (k, n) -> (..., m, n).
    """
    if x.kind is not Kind.FLOAT:
        raise KindError(f"matmul: a {x.kind.value} tensor @ a quantized tensor; convert with "
                        f".float()")
    if w.ndim != 2 or x.ndim < 2:
        return _plain(x) @ w.dequantize()
    k, n = w.shape
    if x.shape[-1] != k:
        raise ShapeError(f"matmul: inner sizes differ: lhs {x.shape} @ rhs {w.shape}; "
                         f"lhs.shape[-1] must equal rhs.shape[-2]")
    kernels = int_kernels(x.device)
    if kernels is None and (is_autodiff(x.device) or not int8_gemm_applies(w)):
        return _plain(x) @ w.dequantize()
    lead = x.shape[:-1]
    rows = x.reshape((-1, k))
    if kernels is None:  # no integer kernels here: the same numbers from float products
        xq = rows if isinstance(rows, QuantizedTensor) else quantize_dynamic(rows, _DYNAMIC)
        return (xq.dequantize() @ w.dequantize()).reshape(lead + (n,))
    if not int8_gemm_applies(w):
        out = kernels.weight_only_matmul(_plain(rows), w)
        if out is None:
            out = _plain(rows) @ w.dequantize()
        return out.reshape(lead + (n,))
    xq = rows if isinstance(rows, QuantizedTensor) else quantize_dynamic(rows, _DYNAMIC)
    if xq.scheme.granularity is not Granularity.Tensor or xq.scheme.qtype is not \
            QuantizationType.QInt8:
        return (xq.dequantize() @ w.dequantize()).reshape(lead + (n,))
    acc = kernels.int8_matmul(xq.values, w).float()
    sx, zx = xq.qparams.scale, xq.qparams.offset
    sw, zw = w.qparams.scale, w.qparams.offset
    if zx is not None:
        colsum = w.cached("colsum", lambda: w.values.float().sum_dim(0))
        acc = acc - zx.float() * colsum
    if zw is not None:
        acc = acc - xq.values.float().sum_dim(1) * zw.float()
        if zx is not None:
            acc = acc + (zx.float() * zw.float()) * float(k)
    out = acc * (sx * sw)
    return out.reshape(lead + (n,))


def _plain(x: Tensor) -> Tensor:
    return x.dequantize() if isinstance(x, QuantizedTensor) else x
