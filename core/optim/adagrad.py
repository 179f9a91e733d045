"""AdaGrad: per-element rates shrinking with the running sum of squared gradients."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..capture.traced import keep_int
from ..errors import ConfigError
from ..module.config import Config
from ..tensor import Tensor
from .clipping import GradientClippingConfig
from .optimizer import Optimizer, State
from .transforms import WeightDecayConfig


class AdaGradConfig(Config):
    """AdaGrad with Burn's defaults: no rate decay, epsilon 1e-5 (torch: 1e-10), no weight
    decay; the accumulator starts at zero (torch's `initial_accumulator_value=0`)."""

    _: KW_ONLY
    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.lr_decay < 0:
            raise ConfigError(f"AdaGradConfig: lr_decay must be >= 0, got {self.lr_decay}")
        if not self.epsilon > 0:
            raise ConfigError(f"AdaGradConfig: epsilon must be positive, got {self.epsilon}")

    def init(self) -> Optimizer:
        clip = self.grad_clipping.init() if self.grad_clipping else None
        return Optimizer(AdaGradRule(self.lr_decay, self.epsilon, self.weight_decay),
                         grad_clipping=clip)


class AdaGradRule:
    """sum += g^2; clr = lr / (1 + (t-1) lr_decay); tensor - clr * g / (sqrt(sum) + eps)."""

    name = "AdaGrad"

    def __init__(self, lr_decay: float, epsilon: float,
                 weight_decay: WeightDecayConfig | None) -> None:
        self.lr_decay, self.epsilon, self.weight_decay = lr_decay, epsilon, weight_decay

    def step(self, lr: float, tensor: Tensor, grad: Tensor,
             state: State | None) -> tuple[Tensor, State | None]:
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        square = grad * grad
        if state is None:
            total, time = square, 1
        else:
            total = state["sum"] + square
            time = keep_int(state["time"]) + 1
        clr = lr / (1.0 + (time - 1) * self.lr_decay)
        delta = grad / (total.sqrt() + self.epsilon)
        return tensor - delta * clr, {"sum": total, "time": time}

    def __repr__(self) -> str:
        return (f"AdaGrad(lr_decay={self.lr_decay}, epsilon={self.epsilon}, "
                f"weight_decay={self.weight_decay})")
