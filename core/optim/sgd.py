"""Stochastic gradient descent with optional weight decay and (Nesterov) momentum."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..module.config import Config
from ..tensor import Tensor
from .clipping import GradientClippingConfig
from .optimizer import Optimizer, State
from .transforms import MomentumConfig, WeightDecayConfig


class SgdConfig(Config):
    """SGD as Burn configures it: no weight decay, no momentum, no clipping by default.

    `SgdConfig(momentum=MomentumConfig(0.9, dampening=0.0, nesterov=True))` gives
    torch.optim.SGD(momentum=0.9, nesterov=True); Burn's MomentumConfig defaults dampening to
    0.1, torch to 0.

    >>> SgdConfig().init().name
    'Sgd'
    """

    _: KW_ONLY
    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def init(self) -> Optimizer:
        clip = self.grad_clipping.init() if self.grad_clipping else None
        return Optimizer(SgdRule(self.weight_decay, self.momentum), grad_clipping=clip)


class SgdRule:
    """`tensor - lr * update`, update = momentum(grad + penalty * tensor)."""

    name = "Sgd"

    def __init__(self, weight_decay: WeightDecayConfig | None,
                 momentum: MomentumConfig | None) -> None:
        self.weight_decay = weight_decay
        self.momentum = momentum

    def step(self, lr: float, tensor: Tensor, grad: Tensor,
             state: State | None) -> tuple[Tensor, State | None]:
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        new_state: State | None = None
        if self.momentum is not None:
            velocity = state.get("velocity") if state else None
            grad, velocity = self.momentum.transform(
                grad, velocity if isinstance(velocity, Tensor) else None)
            new_state = {"velocity": velocity}
        return tensor - grad * lr, new_state

    def __repr__(self) -> str:
        return f"Sgd(weight_decay={self.weight_decay}, momentum={self.momentum})"
