"""Linear: y = x @ W + b, with W stored (d_input, d_output) as Burn stores it."""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

from ..backend.base import Backend
from ..module import Config, Module, Param
from ..tensor import Tensor
from . import functional as F
from .init import DEFAULT_GAIN, Initializer, KaimingUniform

Device = Backend | str | None


class LinearConfig(Config):
    """`LinearConfig(784, 128).init(device)`; the bias is on by default.

    >>> LinearConfig(4, 2).init().weight.shape
    (4, 2)
    """

    d_input: int
    d_output: int
    _: KW_ONLY
    bias: bool = True
    initializer: Initializer = KaimingUniform(gain=DEFAULT_GAIN, fan_out_only=False)

    def init(self, device: Device = None) -> Linear:
        init, fan_in, fan_out = self.initializer, self.d_input, self.d_output
        weight = init.init_param((fan_in, fan_out), fan_in=fan_in, fan_out=fan_out, device=device)
        bias = init.init_param((fan_out,), fan_in=fan_in, fan_out=fan_out,
                               device=device) if self.bias else None
        return Linear(weight, bias)


class Linear(Module):
    """Applies x @ weight + bias to the last dim.

    Shapes: (..., d_input) -> (..., d_output).
    """

    def __init__(self, weight: Param, bias: Param | None = None) -> None:
        self.weight = weight
        self.bias = bias

    def settings(self) -> dict[str, Any]:
        d_input, d_output = self.weight.shape
        return {"d_input": d_input, "d_output": d_output, "bias": self.bias is not None}

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.val, None if self.bias is None else self.bias.val)
