"""What Lstm, BiLstm and Gru share: input checks, initial states and per-step slicing."""

from __future__ import annotations

from ...creation import zeros
from ...errors import ShapeError
from ...tensor import Tensor


def check_input(name: str, x: Tensor, d_input: int) -> None:
    if x.ndim != 3 or x.shape[-1] != d_input:
        raise ShapeError(f"{name}: expects input (batch, seq, {d_input}) (or (seq, batch, "
                         f"{d_input}) when not batch-first), got shape {x.shape}")


def check_state(name: str, what: str, state: Tensor, shape: tuple[int, ...]) -> None:
    if state.shape != shape:
        raise ShapeError(f"{name}: expects the {what} state of shape {shape}, got {state.shape}")


def zero_state(x: Tensor, d_hidden: int) -> Tensor:
    """Zeros (batch, d_hidden) like x (batch, seq, d_input): Burn's default initial state."""
    return zeros((x.shape[0], d_hidden), device=x.device, dtype=x.dtype)


def step(xs: Tensor, t: int) -> Tensor:
    """Time step t of a batch-first (batch, seq, d) tensor: (batch, d)."""
    return xs.narrow(1, t, 1).squeeze(1)
