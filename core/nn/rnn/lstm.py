"""Lstm and BiLstm (Burn's): four GateControllers unrolled over time with tensor ops.

Gradients through time come from Autodiff seeing an ordinary graph of matmuls and activations.
Each gate's input projection runs once over the whole sequence; only the hidden part runs step
by step.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any

from ...backend.base import Backend
from ...creation import cat, stack
from ...module import Config, Module
from ...tensor import Tensor
from ..init import Initializer, XavierNormal
from ._unroll import check_input, check_state, step, zero_state
from .gate import GateController, GateControllerConfig

Device = Backend | str | None


@dataclass(frozen=True)
class LstmState:
    """An LSTM's cell and hidden state: (batch, d_hidden) for Lstm, (2, batch, d_hidden) for
    BiLstm (forward direction first), as Burn's `LstmState`."""

    cell: Tensor
    hidden: Tensor


class LstmConfig(Config):
    """`LstmConfig(d_input, d_hidden).init(device)`; batch-first input, bias on, XavierNormal
    init (Burn's defaults).

    >>> from pyrite import zeros
    >>> out, state = LstmConfig(3, 4).init()(zeros((2, 5, 3)))
    >>> out.shape, state.hidden.shape
    ((2, 5, 4), (2, 4))
    """

    d_input: int
    d_hidden: int
    _: KW_ONLY
    bias: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)
    batch_first: bool = True

    def init(self, device: Device = None) -> Lstm:
        def gate() -> GateController:
            return GateControllerConfig(self.d_input, self.d_hidden, bias=self.bias,
                                        initializer=self.initializer).init(device)

        return Lstm(gate(), gate(), gate(), gate(), d_hidden=self.d_hidden,
                    batch_first=self.batch_first)


class Lstm(Module):
    """Long short-term memory over a sequence, returning every hidden state and the final state.

    Shapes: x (batch, seq, d_input) -> output (batch, seq, d_hidden), state (batch, d_hidden)
    each; (seq, batch, ...) in and out when batch_first is off. Gates as in PyTorch's nn.LSTM:
    c = f * c + i * g, h = o * tanh(c).
    """

    def __init__(self, input_gate: GateController, forget_gate: GateController,
                 output_gate: GateController, cell_gate: GateController, *, d_hidden: int,
                 batch_first: bool = True) -> None:
        self.input_gate = input_gate
        self.forget_gate = forget_gate
        self.output_gate = output_gate
        self.cell_gate = cell_gate
        self.d_hidden = d_hidden
        self.batch_first = batch_first

    def settings(self) -> dict[str, Any]:
        return {"d_hidden": self.d_hidden, "batch_first": self.batch_first}

    def forward(self, x: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        check_input("Lstm", x, self.input_gate.input_transform.weight.shape[0])
        xs = x if self.batch_first else x.swap_dims(0, 1)
        out, final = self._unroll(xs, state, reverse=False)
        return (out if self.batch_first else out.swap_dims(0, 1)), final

    def _unroll(self, xs: Tensor, state: LstmState | None,
                reverse: bool) -> tuple[Tensor, LstmState]:
        """Run batch-first xs in time order (or reversed); outputs stay in time order."""
        batch, seq = xs.shape[0], xs.shape[1]
        if state is None:
            cell, hidden = zero_state(xs, self.d_hidden), zero_state(xs, self.d_hidden)
        else:
            check_state("Lstm", "cell", state.cell, (batch, self.d_hidden))
            check_state("Lstm", "hidden", state.hidden, (batch, self.d_hidden))
            cell, hidden = state.cell, state.hidden
        gates = (self.input_gate, self.forget_gate, self.output_gate, self.cell_gate)
        projected = [g.input_transform(xs) for g in gates]
        outputs: list[Tensor] = [hidden] * seq
        for t in reversed(range(seq)) if reverse else range(seq):
            i, f, o, g = (step(p, t) + gate.hidden_transform(hidden)
                          for p, gate in zip(projected, gates, strict=True))
            cell = f.sigmoid() * cell + i.sigmoid() * g.tanh()
            hidden = o.sigmoid() * cell.tanh()
            outputs[t] = hidden
        return stack(outputs, 1), LstmState(cell, hidden)


class BiLstmConfig(Config):
    """`BiLstmConfig(d_input, d_hidden).init(device)`: a forward and a reverse Lstm.

    >>> from pyrite import zeros
    >>> out, state = BiLstmConfig(3, 4).init()(zeros((2, 5, 3)))
    >>> out.shape, state.cell.shape
    ((2, 5, 8), (2, 2, 4))
    """

    d_input: int
    d_hidden: int
    _: KW_ONLY
    bias: bool = True
    initializer: Initializer = XavierNormal(gain=1.0)
    batch_first: bool = True

    def init(self, device: Device = None) -> BiLstm:
        def lstm() -> Lstm:
            return LstmConfig(self.d_input, self.d_hidden, bias=self.bias,
                              initializer=self.initializer).init(device)

        return BiLstm(lstm(), lstm(), d_hidden=self.d_hidden, batch_first=self.batch_first)


class BiLstm(Module):
    """Bidirectional Lstm: the forward and reverse outputs concatenated on the last dim.

    Shapes: x (batch, seq, d_input) -> output (batch, seq, 2 * d_hidden), state (2, batch,
    d_hidden) each, forward direction first (Burn's and PyTorch's layout).
    """

    def __init__(self, forward_lstm: Lstm, reverse_lstm: Lstm, *, d_hidden: int,
                 batch_first: bool = True) -> None:
        # Burn names these `forward` and `reverse`; an attribute named `forward` would hide
        # this module's forward method
        self.forward_lstm = forward_lstm
        self.reverse_lstm = reverse_lstm
        self.d_hidden = d_hidden
        self.batch_first = batch_first

    def settings(self) -> dict[str, Any]:
        return {"d_hidden": self.d_hidden, "batch_first": self.batch_first}

    def forward(self, x: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        check_input("BiLstm", x, self.forward_lstm.input_gate.input_transform.weight.shape[0])
        xs = x if self.batch_first else x.swap_dims(0, 1)
        fwd_state = rev_state = None
        if state is not None:
            shape = (2, xs.shape[0], self.d_hidden)
            check_state("BiLstm", "cell", state.cell, shape)
            check_state("BiLstm", "hidden", state.hidden, shape)
            fwd_state = LstmState(state.cell[0], state.hidden[0])
            rev_state = LstmState(state.cell[1], state.hidden[1])
        fwd_out, fwd_final = self.forward_lstm._unroll(xs, fwd_state, reverse=False)
        rev_out, rev_final = self.reverse_lstm._unroll(xs, rev_state, reverse=True)
        out = cat([fwd_out, rev_out], 2)
        final = LstmState(stack([fwd_final.cell, rev_final.cell], 0),
                          stack([fwd_final.hidden, rev_final.hidden], 0))
        return (out if self.batch_first else out.swap_dims(0, 1)), final
