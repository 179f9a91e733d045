"""PositionWiseFeedForward (Burn's): Linear -> activation -> dropout -> Linear, per position."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ...backend.base import Backend
from ...errors import ConfigError
from ...module import Config, Module
from ...tensor import Tensor
from ..activation import Gelu, Relu
from ..dropout import Dropout, DropoutConfig
from ..init import DEFAULT_GAIN, Initializer, KaimingUniform
from ..linear import Linear, LinearConfig

Device = Backend | str | None
ACTIVATIONS = ("gelu", "relu")


def check_activation(cfg: Config, activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ConfigError(f"{type(cfg).__name__}: activation must be one of "
                          f"{', '.join(map(repr, ACTIVATIONS))}, got {activation!r}")


class PositionWiseFeedForwardConfig(Config):
    """`PositionWiseFeedForwardConfig(d_model, d_ff).init(device)`: GELU (exact, erf) by
    default as Burn, or `activation="relu"` as the original transformer and PyTorch's default.

    >>> from pyrite import zeros
    >>> PositionWiseFeedForwardConfig(8, 32).init()(zeros((2, 3, 8))).shape
    (2, 3, 8)
    """

    d_model: int
    d_ff: int
    _: KW_ONLY
    dropout: float = 0.1
    initializer: Initializer = KaimingUniform(gain=DEFAULT_GAIN, fan_out_only=False)
    activation: str = "gelu"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_activation(self, self.activation)
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"PositionWiseFeedForwardConfig: dropout must be in [0, 1), got "
                              f"{self.dropout}")

    def init(self, device: Device = None) -> PositionWiseFeedForward:
        def linear(d_in: int, d_out: int) -> Linear:
            return LinearConfig(d_in, d_out, initializer=self.initializer).init(device)

        return PositionWiseFeedForward(linear(self.d_model, self.d_ff),
                                       linear(self.d_ff, self.d_model),
                                       DropoutConfig(self.dropout).init(),
                                       activation=self.activation)


class PositionWiseFeedForward(Module):
    """linear_outer(dropout(act(linear_inner(x)))) on the last dim.

    Shapes: (..., d_model) -> (..., d_model), through (..., d_ff).
    """

    def __init__(self, linear_inner: Linear, linear_outer: Linear, dropout: Dropout, *,
                 activation: str = "gelu") -> None:
        self.linear_inner = linear_inner
        self.linear_outer = linear_outer
        self.dropout = dropout
        self.activation: Module = Gelu() if activation == "gelu" else Relu()
        self.d_model, self.d_ff = linear_inner.weight.shape

    def forward(self, x: Tensor) -> Tensor:
        hidden: Tensor = self.activation(self.linear_inner.forward(x))
        return self.linear_outer.forward(self.dropout.forward(hidden))
