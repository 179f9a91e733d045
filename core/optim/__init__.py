"""pyrite.optim: optimizers (as configs), gradients by param id, clipping, LR schedulers.

`model = optim.step(lr, model, GradientsParams.from_grads(loss.backward(), model))`.
Re-exports only; see docs/training.md.
"""

from .accumulator import GradientsAccumulator
from .adagrad import AdaGradConfig, AdaGradRule
from .adam import AdamConfig, AdamRule, AdamWConfig
from .clipping import GradientClipping, GradientClippingConfig
from .grads import GradientsParams
from .optimizer import Optimizer, Rule, State
from .rmsprop import RmsPropConfig, RmsPropRule
from .scheduler import (
    ConstantLr,
    ConstantLrConfig,
    CosineAnnealingLrScheduler,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrScheduler,
    ExponentialLrSchedulerConfig,
    LinearLrScheduler,
    LinearLrSchedulerConfig,
    LrScheduler,
    NoamLrScheduler,
    NoamLrSchedulerConfig,
    as_scheduler,
)
from .sgd import SgdConfig, SgdRule
from .transforms import MomentumConfig, WeightDecayConfig

__all__ = [
    "AdaGradConfig",
    "AdaGradRule",
    "AdamConfig",
    "AdamRule",
    "AdamWConfig",
    "ConstantLr",
    "ConstantLrConfig",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "GradientClipping",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "MomentumConfig",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "Optimizer",
    "Rule",
    "RmsPropConfig",
    "RmsPropRule",
    "SgdConfig",
    "SgdRule",
    "State",
    "WeightDecayConfig",
    "as_scheduler",
]
