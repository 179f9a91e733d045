"""Quantization-aware training: fake quantization with a straight-through estimator.

`fake_quantize(x, scheme, qparams)` is `dequantize(quantize(x))` in the forward pass, so the
model sees the rounding it will meet after quantization, and in the backward pass the gradient
passes straight through rounding (its derivative is taken as 1) but is zero where x was
clamped to the type's range: the derivative of clamp(x, lo, hi) with lo = (qmin - offset) *
scale and hi = (qmax - offset) * scale. `QatLinear` trains a Linear's float weight through it.
"""

from __future__ import annotations

from typing import Any

from ..module import Module
from ..nn import functional as F
from ..nn.linear import Linear
from ..tensor import Tensor
from .calibration import MinMaxCalibration, blocked, params_view, unblocked
from .scheme import Granularity, QuantizationParameters, QuantizationScheme
from .tensor import quantize


def fake_quantize(x: Tensor, scheme: QuantizationScheme,
                  qparams: QuantizationParameters) -> Tensor:
    """Quantize-dequantize `x` with a straight-through gradient (see the module docstring).

    Shapes: (...) -> (...), params of `scheme.params_shape(x.shape)`.
    """
    rounded = quantize(x, scheme, qparams).dequantize()
    lo_q, hi_q = scheme.q_bounds
    scale = qparams.scale.detach()
    offset = qparams.offset
    blocks = scheme.granularity is Granularity.Block
    view = params_view(x.shape, scheme)
    xs = blocked(x, scheme) if blocks else x
    zero = offset.detach().float().reshape(view) if offset is not None else 0.0
    lo = (lo_q - zero) * scale.reshape(view)
    hi = (hi_q - zero) * scale.reshape(view)
    clamped = xs.max_pair(lo.expand(xs.shape)).min_pair(hi.expand(xs.shape))
    if blocks:
        clamped = unblocked(clamped, x.shape, scheme)
    # clamped's value plus a constant: forward gives `rounded`, backward clamp's derivative
    return clamped + (rounded - clamped).detach()


def fake_quantize_dynamic(x: Tensor, scheme: QuantizationScheme) -> Tensor:
    """`fake_quantize` with params from x's own (detached) min and max."""
    plain = x.detach()
    qparams = scheme.compute_q_params(MinMaxCalibration().compute_range(plain, scheme))
    return fake_quantize(x, scheme, qparams)


class QatLinear(Module):
    """A Linear trained with its weight fake-quantized (per forward, from its own range).

    Shapes: (..., d_input) -> (..., d_output).
    """

    def __init__(self, linear: Linear, scheme: QuantizationScheme) -> None:
        self.linear = linear
        self._scheme = scheme

    def settings(self) -> dict[str, Any]:
        return {"weight": repr(self._scheme)}

    def forward(self, x: Tensor) -> Tensor:
        weight = fake_quantize_dynamic(self.linear.weight.val, self._scheme)
        bias = None if self.linear.bias is None else self.linear.bias.val
        return F.linear(x, weight, bias)

    def unwrap(self) -> Linear:
        """The trained Linear (quantize it with `quantize_weights`)."""
        return self.linear
