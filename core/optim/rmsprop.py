"""RMSProp: gradients divided by a running RMS of past gradients (optionally centered), with
optional momentum."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..errors import ConfigError
from ..module.config import Config
from ..tensor import Tensor
from .clipping import GradientClippingConfig
from .optimizer import Optimizer, State
from .transforms import WeightDecayConfig


class RmsPropConfig(Config):
    """RMSProp with Burn's defaults: alpha 0.99, epsilon 1e-5 (torch: 1e-8), not centered,
    no momentum, no weight decay."""

    _: KW_ONLY
    alpha: float = 0.99
    epsilon: float = 1e-5
    centered: bool = False
    momentum: float = 0.0
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.alpha <= 1:
            raise ConfigError(f"RmsPropConfig: alpha must be in [0, 1], got {self.alpha}")
        if not self.epsilon > 0:
            raise ConfigError(f"RmsPropConfig: epsilon must be positive, got {self.epsilon}")
        if self.momentum < 0:
            raise ConfigError(f"RmsPropConfig: momentum must be >= 0, got {self.momentum}")

    def init(self) -> Optimizer:
        clip = self.grad_clipping.init() if self.grad_clipping else None
        rule = RmsPropRule(self.alpha, self.epsilon, self.centered, self.momentum,
                           self.weight_decay)
        return Optimizer(rule, grad_clipping=clip)


class RmsPropRule:
    """sq = a sq + (1-a) g^2; avg = sq (centered: sq - ga^2, ga = a ga + (1-a) g);
    step = g / (sqrt(avg) + eps) (momentum: buf = m buf + step); tensor - lr * step."""

    name = "RmsProp"

    def __init__(self, alpha: float, epsilon: float, centered: bool, momentum: float,
                 weight_decay: WeightDecayConfig | None) -> None:
        self.alpha, self.epsilon, self.centered = alpha, epsilon, centered
        self.momentum, self.weight_decay = momentum, weight_decay

    def step(self, lr: float, tensor: Tensor, grad: Tensor,
             state: State | None) -> tuple[Tensor, State | None]:
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        a = self.alpha
        state = state or {}
        square_avg = grad * grad * (1.0 - a)
        if "square_avg" in state:
            square_avg = state["square_avg"] * a + square_avg
        new: State = {"square_avg": square_avg}
        avg = square_avg
        if self.centered:
            grad_avg = grad * (1.0 - a)
            if "grad_avg" in state:
                grad_avg = state["grad_avg"] * a + grad_avg
            new["grad_avg"] = grad_avg
            avg = square_avg - grad_avg * grad_avg
        delta = grad / (avg.sqrt() + self.epsilon)
        if self.momentum > 0:
            if "momentum_buffer" in state:
                delta = state["momentum_buffer"] * self.momentum + delta
            new["momentum_buffer"] = delta
        return tensor - delta * lr, new

    def __repr__(self) -> str:
        return (f"RmsProp(alpha={self.alpha}, epsilon={self.epsilon}, centered={self.centered}, "
                f"momentum={self.momentum}, weight_decay={self.weight_decay})")
