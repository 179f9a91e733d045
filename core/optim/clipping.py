"""Gradient clipping, by value or by norm, as an optimizer option.

`AdamConfig().with_grad_clipping(GradientClippingConfig.norm(1.0))` clips each param's gradient
before the update. As in Burn, clipping is per parameter tensor: `norm` rescales a gradient whose
L2 norm exceeds the threshold to (about) that norm; `value` clamps each element to
[-threshold, threshold]. (torch's `clip_grad_norm_` uses one norm over all params instead.)
"""

from __future__ import annotations

from typing import Literal

from ..errors import ConfigError
from ..module.config import Config
from ..tensor import Tensor

# Burn adds this to the norm before dividing, so a zero gradient never divides by zero
_NORM_EPSILON = 1e-6


class GradientClippingConfig(Config):
    """How to clip: `GradientClippingConfig.norm(1.0)` or `GradientClippingConfig.value(0.5)`.

    >>> from pyrite import tensor
    >>> GradientClippingConfig.value(0.5).init().clip(tensor([-2.0, 0.1, 3.0])).to_list()
    [-0.5, 0.10000000149011612, 0.5]
    """

    mode: Literal["norm", "value"]
    threshold: float

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode not in ("norm", "value"):
            raise ConfigError(f"GradientClippingConfig: mode must be 'norm' or 'value', got "
                              f"{self.mode!r}")
        if not self.threshold > 0:
            raise ConfigError(f"GradientClippingConfig: threshold must be positive, got "
                              f"{self.threshold}")

    @classmethod
    def norm(cls, threshold: float) -> GradientClippingConfig:
        """Rescale each gradient whose L2 norm is above `threshold` down to it."""
        return cls("norm", float(threshold))

    @classmethod
    def value(cls, threshold: float) -> GradientClippingConfig:
        """Clamp each gradient element to [-threshold, threshold]."""
        return cls("value", float(threshold))

    def init(self) -> GradientClipping:
        return GradientClipping(self.mode, self.threshold)


class GradientClipping:
    """Applies a `GradientClippingConfig` to one gradient tensor at a time."""

    __slots__ = ("mode", "threshold")

    def __init__(self, mode: str, threshold: float) -> None:
        self.mode = mode
        self.threshold = threshold

    def clip(self, grad: Tensor) -> Tensor:
        """The clipped gradient (same shape)."""
        if self.mode == "value":
            return grad.clamp(-self.threshold, self.threshold)
        # computed on the device, no readback: scale = t / (norm + eps) where norm > t, else 1
        norm = (grad * grad).sum().sqrt()
        scale = (self.threshold / (norm + _NORM_EPSILON)).mask_fill(norm <= self.threshold, 1.0)
        return grad * scale

    def __repr__(self) -> str:
        return f"GradientClipping({self.mode}, {self.threshold})"
