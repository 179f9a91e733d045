"""Gru (Burn's): update, reset and new GateControllers unrolled over time with tensor ops."""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

from ...backend.base import Backend
from ...creation import stack
from ...module import Config, Module
from ...tensor import Tensor
from ..init import Initializer, XavierNormal
from ._unroll import check_input, check_state, step, zero_state
from .gate import GateController, GateControllerConfig

Device = Backend | str | None


class GruConfig(Config):
    """`GruConfig(d_input, d_hidden).init(device)`; batch-first input, bias on, reset after the
    hidden matmul (PyTorch's and cuDNN's variant), XavierNormal init (Burn's defaults).

    >>> from pyrite import zeros
    >>> GruConfig(3, 4).init()(zeros((2, 5, 3))).shape
    (2, 5, 4)
    """

    d_input: int
    d_hidden: int
    _: KW_ONLY
    bias: bool = True
    reset_after: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)

    def init(self, device: Device = None) -> Gru:
        def gate() -> GateController:
            return GateControllerConfig(self.d_input, self.d_hidden, bias=self.bias,
                                        initializer=self.initializer).init(device)

        return Gru(gate(), gate(), gate(), d_hidden=self.d_hidden, reset_after=self.reset_after)


class Gru(Module):
    """Gated recurrent unit over a sequence, returning every hidden state.

    Shapes: x (batch, seq, d_input), state (batch, d_hidden) -> (batch, seq, d_hidden).
    z = sigmoid(update), r = sigmoid(reset), n = tanh(W_n x + b_n + r * (U_n h + c_n)) with
    reset_after (else tanh(W_n x + b_n + U_n (r * h) + c_n)), h = (1 - z) * n + z * h.
    """

    def __init__(self, update_gate: GateController, reset_gate: GateController,
                 new_gate: GateController, *, d_hidden: int, reset_after: bool = True) -> None:
        self.update_gate = update_gate
        self.reset_gate = reset_gate
        self.new_gate = new_gate
        self.d_hidden = d_hidden
        self.reset_after = reset_after

    def settings(self) -> dict[str, Any]:
        return {"d_hidden": self.d_hidden, "reset_after": self.reset_after}

    def forward(self, x: Tensor, state: Tensor | None = None) -> Tensor:
        check_input("Gru", x, self.update_gate.input_transform.weight.shape[0])
        batch, seq = x.shape[0], x.shape[1]
        if state is None:
            hidden = zero_state(x, self.d_hidden)
        else:
            check_state("Gru", "hidden", state, (batch, self.d_hidden))
            hidden = state
        gates = (self.update_gate, self.reset_gate, self.new_gate)
        pz, pr, pn = (g.input_transform(x) for g in gates)
        outputs = []
        for t in range(seq):
            z = (step(pz, t) + self.update_gate.hidden_transform(hidden)).sigmoid()
            r = (step(pr, t) + self.reset_gate.hidden_transform(hidden)).sigmoid()
            if self.reset_after:
                n = step(pn, t) + r * self.new_gate.hidden_transform(hidden)
            else:
                n = step(pn, t) + self.new_gate.hidden_transform(r * hidden)
            hidden = (1.0 - z) * n.tanh() + z * hidden
            outputs.append(hidden)
        return stack(outputs, 1)
