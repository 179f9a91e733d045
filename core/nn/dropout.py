"""Dropout: zero inputs at random while training, scaling the rest by 1 / (1 - prob).

Training mode is the backend's, as in Burn: dropout acts only on autodiff devices, so
`model.valid()` (or any plain device) turns it off without a flag to forget.
"""

from __future__ import annotations

from ..backend.base import Backend
from ..distribution import Bernoulli
from ..errors import ConfigError
from ..module import Config, Module
from ..tensor import Tensor

Device = Backend | str | None


class DropoutConfig(Config):
    """`DropoutConfig(0.5).init()`."""

    prob: float

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.prob < 1.0:
            raise ConfigError(f"DropoutConfig: prob must be in [0, 1), got {self.prob}")

    def init(self, device: Device = None) -> Dropout:
        return Dropout(self.prob)


class Dropout(Module):
    """Shapes: any -> same. The mask comes from the input's device generator (`pyrite.seed`)."""

    def __init__(self, prob: float) -> None:
        if not 0.0 <= prob < 1.0:
            raise ConfigError(f"Dropout: prob must be in [0, 1), got {prob}")
        self.prob = prob

    def forward(self, x: Tensor) -> Tensor:
        if not x.device.is_autodiff or self.prob == 0.0:
            return x
        # one multiply by (mask / keep): the mask is a constant, so backward is one multiply too
        keep = 1.0 - self.prob
        mask = x.random_like(Bernoulli(keep)).detach()
        return x * (mask * (1.0 / keep))
