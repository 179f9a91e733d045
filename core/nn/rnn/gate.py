"""GateController: one gate of a recurrent cell, an input Linear and a hidden Linear (Burn's)."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ...backend.base import Backend
from ...module import Config, Module
from ...tensor import Tensor
from ..init import Initializer, XavierNormal
from ..linear import Linear, LinearConfig

Device = Backend | str | None


class GateControllerConfig(Config):
    """`GateControllerConfig(d_input, d_output).init(device)`; Burn's default init is
    XavierNormal(gain=1), for both Linears.

    >>> gate = GateControllerConfig(3, 2).init()
    >>> gate.input_transform.weight.shape, gate.hidden_transform.weight.shape
    ((3, 2), (2, 2))
    """

    d_input: int
    d_output: int
    _: KW_ONLY
    bias: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)

    def init(self, device: Device = None) -> GateController:
        def linear(d_in: int) -> Linear:
            return LinearConfig(d_in, self.d_output, bias=self.bias,
                                initializer=self.initializer).init(device)

        return GateController(linear(self.d_input), linear(self.d_output))


class GateController(Module):
    """input_transform(x) + hidden_transform(h): the pre-activation of one gate.

    Shapes: x (..., d_input), h (..., d_output) -> (..., d_output).
    """

    def __init__(self, input_transform: Linear, hidden_transform: Linear) -> None:
        self.input_transform = input_transform
        self.hidden_transform = hidden_transform

    def gate_product(self, input: Tensor, hidden: Tensor) -> Tensor:  # noqa: A002 - Burn's name
        """The gate's pre-activation, before its sigmoid or tanh."""
        return self.input_transform.forward(input) + self.hidden_transform.forward(hidden)
