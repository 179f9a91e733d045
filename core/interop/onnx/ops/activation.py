"""Activation operators: ReLU and its relatives, sigmoid and tanh-based gates, GELU, softplus,
Mish, Swish, Shrink; written with tensor methods only, f16 inputs computed in f32."""

from __future__ import annotations

import math

from ....dtype import Kind
from ....tensor import Tensor
from ..registry import op
from ._util import Legacy, via_f32, wide_dtype


def _expm1_nonpos(x: Tensor) -> Tensor:
    """exp(x) - 1 for x <= 0 without cancellation: 2t / (1 - t) with t = tanh(x / 2)."""
    t = (x * 0.5).tanh()
    return t * 2.0 / (1.0 - t)


@op("Relu")
def relu(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """max(x, 0)."""
    return x.clamp_min(0)


@op("LeakyRelu")
def leaky_relu(x: Tensor, *, alpha: float = 0.01, consumed_inputs: Legacy = None) -> Tensor:
    """x, or alpha * x below 0."""
    return x.clamp_min(0) + x.clamp_max(0) * alpha


@op("PRelu")
def prelu(x: Tensor, slope: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """x, or slope * x below 0 (slope broadcasts to x)."""
    return x.clamp_min(0) + x.clamp_max(0) * slope


@op("Sigmoid")
@via_f32
def sigmoid(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """1 / (1 + exp(-x))."""
    return x.sigmoid()


@op("HardSigmoid")
@via_f32
def hard_sigmoid(x: Tensor, *, alpha: float = 0.2, beta: float = 0.5,
                 consumed_inputs: Legacy = None) -> Tensor:
    """alpha * x + beta, clipped to [0, 1]."""
    return (x * alpha + beta).clamp(0.0, 1.0)


@op("HardSwish")
@via_f32
def hard_swish(x: Tensor) -> Tensor:
    """x * HardSigmoid(x) with alpha 1/6, beta 0.5."""
    return x * (x * (1.0 / 6.0) + 0.5).clamp(0.0, 1.0)


@op("Elu")
@via_f32
def elu(x: Tensor, *, alpha: float = 1.0, consumed_inputs: Legacy = None) -> Tensor:
    """x, or alpha * (exp(x) - 1) below 0."""
    return x.clamp_min(0) + _expm1_nonpos(x.clamp_max(0)) * alpha


@op("Selu")
@via_f32
def selu(x: Tensor, *, alpha: float = 1.67326319217681884765625,
         gamma: float = 1.05070102214813232421875, consumed_inputs: Legacy = None) -> Tensor:
    """gamma * (x, or alpha * (exp(x) - 1) below 0)."""
    return (x.clamp_min(0) + _expm1_nonpos(x.clamp_max(0)) * alpha) * gamma


@op("Celu")
@via_f32
def celu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return x.clamp_min(0) + _expm1_nonpos(x.clamp_max(0) / alpha) * alpha


@op("Gelu")
@via_f32
def gelu(x: Tensor, *, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly (erf) or with the tanh approximation."""
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (inner.tanh() + 1.0)
    if approximate != "none":
        raise ValueError(f"Gelu approximate={approximate!r} is not 'none' or 'tanh'")
    return x * 0.5 * ((x * (1.0 / math.sqrt(2.0))).erf() + 1.0)


def _softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)), which never overflows."""
    return x.clamp_min(0) + x.abs().neg().exp().log1p()


@op("Softplus")
@via_f32
def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x))."""
    return _softplus(x)


@op("Mish")
@via_f32
def mish(x: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return x * _softplus(x).tanh()


@op("Softsign")
@via_f32
def softsign(x: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return x / (x.abs() + 1.0)


@op("ThresholdedRelu")
def thresholded_relu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """x where x > alpha, else 0."""
    return x.mask_fill(x.greater(alpha).bool_not(), 0)


@op("Swish")
@via_f32
def swish(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """x * sigmoid(alpha * x)."""
    return x * (x * alpha).sigmoid()


@op("Shrink")
def shrink(x: Tensor, *, bias: float = 0.0, lambd: float = 0.5) -> Tensor:
    """x + bias below -lambd, x - bias above lambd, 0 between."""
    v = x if x.kind is Kind.FLOAT else x.cast(wide_dtype(x.device))
    out = v.zeros_like().mask_where(v.lower(-lambd), v + bias)
    return out.mask_where(v.greater(lambd), v - bias).cast(x.dtype)
