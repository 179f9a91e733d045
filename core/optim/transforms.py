"""Gradient transforms shared by several optimizers: L2 weight decay and (Nesterov) momentum.

These are Burn's `WeightDecayConfig` and `MomentumConfig`; each config also applies itself.
"""

from __future__ import annotations

from ..errors import ConfigError
from ..module.config import Config
from ..tensor import Tensor


class WeightDecayConfig(Config):
    """L2 penalty added to the gradient: `grad + penalty * param` (coupled weight decay;
    AdamW decouples it instead)."""

    penalty: float

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.penalty < 0:
            raise ConfigError(f"WeightDecayConfig: penalty must be >= 0, got {self.penalty}")

    def transform(self, grad: Tensor, tensor: Tensor) -> Tensor:
        return grad + tensor * self.penalty


class MomentumConfig(Config):
    """Heavy-ball momentum, as torch.optim.SGD computes it (Burn's defaults).

    The first step's velocity is the gradient itself; later ones are
    `momentum * velocity + (1 - dampening) * grad`. With `nesterov` the update is
    `grad + momentum * velocity`, else the velocity.
    """

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.momentum:
            raise ConfigError(f"MomentumConfig: momentum must be >= 0, got {self.momentum}")
        if not 0 <= self.dampening <= 1:
            raise ConfigError(f"MomentumConfig: dampening must be in [0, 1], got "
                              f"{self.dampening}")

    def transform(self, grad: Tensor, velocity: Tensor | None) -> tuple[Tensor, Tensor]:
        """`(update, new velocity)`."""
        if velocity is None:
            velocity = grad
        else:
            velocity = velocity * self.momentum + grad * (1.0 - self.dampening)
        if self.nesterov:
            return grad + velocity * self.momentum, velocity
        return velocity, velocity
