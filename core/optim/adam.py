"""Adam and AdamW: adaptive moment estimation, with coupled (L2) or decoupled weight decay."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..capture.traced import keep_float, keep_int
from ..errors import ConfigError
from ..module.config import Config
from ..tensor import Tensor
from . import adam_numpy
from .clipping import GradientClippingConfig
from .optimizer import Optimizer, State
from .transforms import WeightDecayConfig


def _check_betas(name: str, beta_1: float, beta_2: float, epsilon: float) -> None:
    for label, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
        if not 0 <= beta < 1:
            raise ConfigError(f"{name}: {label} must be in [0, 1), got {beta}")
    if not epsilon > 0:
        raise ConfigError(f"{name}: epsilon must be positive, got {epsilon}")


class AdamConfig(Config):
    """Adam with Burn's defaults: betas (0.9, 0.999), epsilon 1e-5 (torch uses 1e-8), no
    weight decay.

    >>> AdamConfig().with_epsilon(1e-8).epsilon
    1e-08
    """

    _: KW_ONLY
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_betas("AdamConfig", self.beta_1, self.beta_2, self.epsilon)

    def init(self) -> Optimizer:
        clip = self.grad_clipping.init() if self.grad_clipping else None
        rule = AdamRule(self.beta_1, self.beta_2, self.epsilon, self.weight_decay)
        return Optimizer(rule, grad_clipping=clip)


class AdamWConfig(Config):
    """AdamW with Burn's defaults: betas (0.9, 0.999), epsilon 1e-5, weight decay 1e-4
    (decoupled: the param shrinks by `lr * weight_decay` each step; torch's default is 1e-2)."""

    _: KW_ONLY
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_betas("AdamWConfig", self.beta_1, self.beta_2, self.epsilon)
        if self.weight_decay < 0:
            raise ConfigError(f"AdamWConfig: weight_decay must be >= 0, got {self.weight_decay}")

    def init(self) -> Optimizer:
        clip = self.grad_clipping.init() if self.grad_clipping else None
        rule = AdamRule(self.beta_1, self.beta_2, self.epsilon, None,
                        decoupled_decay=self.weight_decay, name="AdamW")
        return Optimizer(rule, grad_clipping=clip)


class AdamRule:
    """m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; t += 1;
    update = (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps); tensor - lr * update."""

    def __init__(self, beta_1: float, beta_2: float, epsilon: float,
                 weight_decay: WeightDecayConfig | None, *, decoupled_decay: float = 0.0,
                 name: str = "Adam") -> None:
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.weight_decay = weight_decay
        self.decoupled_decay = decoupled_decay
        self.name = name

    def step(self, lr: float, tensor: Tensor, grad: Tensor,
             state: State | None) -> tuple[Tensor, State | None]:
        fast = adam_numpy.step(self, lr, tensor, grad, state)
        if fast is not None:
            return fast
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        b1, b2 = self.beta_1, self.beta_2
        if state is None:
            # zero-initialised moments, without building the zeros
            m = grad * (1.0 - b1)
            v = grad * grad * (1.0 - b2)
            time = 1
        else:
            m = state["moment_1"] * b1 + grad * (1.0 - b1)
            v = state["moment_2"] * b2 + grad * grad * (1.0 - b2)
            time = keep_int(state["time"]) + 1
        # keep_float: `float ** int` would drop the traced step count of a compiled step
        m_hat = m / (1.0 - b1 ** keep_float(time))
        v_hat = v / (1.0 - b2 ** keep_float(time))
        delta = m_hat / (v_hat.sqrt() + self.epsilon)
        if self.decoupled_decay:
            tensor = tensor * (1.0 - lr * self.decoupled_decay)
        return tensor - delta * lr, {"moment_1": m, "moment_2": v, "time": time}

    def __repr__(self) -> str:
        decay = (f", weight_decay={self.decoupled_decay}" if self.name == "AdamW"
                 else f", weight_decay={self.weight_decay}")
        return (f"{self.name}(beta_1={self.beta_1}, beta_2={self.beta_2}, "
                f"epsilon={self.epsilon}{decay})")
