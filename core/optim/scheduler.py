"""Learning-rate schedulers: configs that build a stateful `step() -> lr`, with records.

Each scheduler follows Burn's formula and its first value: `step()` is called once before each
optimizer step and returns the rate for that step. The state is one number, saved with
`to_record()` and restored with `load_record()` so a resumed run continues the schedule.

| config                               | lr at step k = 1, 2, ...                            |
|--------------------------------------|-----------------------------------------------------|
| `ConstantLrConfig(lr)`               | lr                                                  |
| `LinearLrSchedulerConfig(a, b, n)`   | a + (b - a) * min(k, n) / n                         |
| `CosineAnnealingLrSchedulerConfig`   | m + (a - m)(1 + cos(pi c / n)) / 2, c=(k-1)%(n+1)   |
| `ExponentialLrSchedulerConfig(a, g)` | a * g^(k-1)                                         |
| `NoamLrSchedulerConfig(a)`           | a * d^-0.5 * min(k^-0.5, k * warmup^-1.5)           |
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import KW_ONLY
from typing import Any

from ..errors import ConfigError, RecordError
from ..module.config import Config
from ..record.tree import Record


def _check_lr(name: str, field: str, lr: float, *, allow_zero: bool = False) -> None:
    ok = 0 <= lr <= 1 if allow_zero else 0 < lr <= 1
    if not ok:
        span = "[0, 1]" if allow_zero else "(0, 1]"
        raise ConfigError(f"{name}: {field} must be in {span}, got {lr}")


def _check_iters(name: str, num_iters: int) -> None:
    if num_iters < 1:
        raise ConfigError(f"{name}: num_iters must be at least 1, got {num_iters}")


class LrScheduler:
    """Base of the schedulers: `step()` gives the next rate; the state is the `_state` field."""

    name = "LrScheduler"
    _state_key = "state"

    def step(self) -> float:
        raise NotImplementedError

    def _get(self) -> Any:
        return None

    def _set(self, value: Any) -> None:
        pass

    def to_record(self) -> Record:
        """`{"scheduler": name, <state key>: value}`."""
        return {"scheduler": self.name, self._state_key: self._get()}

    def load_record(self, record: Record) -> LrScheduler:
        """Restore the state saved by `to_record` (of the same kind of scheduler); returns self."""
        if not isinstance(record, Mapping) or "scheduler" not in record:
            raise RecordError("LrScheduler.load_record: not a scheduler record (it needs the key "
                              "'scheduler', as to_record writes it)")
        if record["scheduler"] != self.name:
            raise RecordError(f"LrScheduler.load_record: the record is of {record['scheduler']}, "
                              f"this scheduler is {self.name}")
        if self._state_key not in record:
            raise RecordError(f"LrScheduler.load_record: {self.name} record lacks "
                              f"{self._state_key!r}")
        self._set(record[self._state_key])
        return self

    def __repr__(self) -> str:
        return f"{self.name}({self._state_key}={self._get()})"


# ---- constant ----------------------------------------------------------------------------------
class ConstantLrConfig(Config):
    """A fixed rate (what `LearnerBuilder.build(model, optim, 1e-4)` makes of a float)."""

    lr: float

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.lr >= 0:
            raise ConfigError(f"ConstantLrConfig: lr must be >= 0, got {self.lr}")

    def init(self) -> ConstantLr:
        return ConstantLr(self.lr)


class ConstantLr(LrScheduler):
    """Always the same rate.

    >>> ConstantLr(0.01).step()
    0.01
    """

    name = "ConstantLr"
    _state_key = "lr"

    def __init__(self, lr: float) -> None:
        self.lr = float(lr)

    def step(self) -> float:
        return self.lr

    def _get(self) -> Any:
        return self.lr

    def _set(self, value: Any) -> None:
        self.lr = float(value)


# ---- linear ------------------------------------------------------------------------------------
class LinearLrSchedulerConfig(Config):
    """From `initial_lr` to `final_lr` in `num_iters` equal steps, then `final_lr`. As in Burn,
    the first `step()` already takes one step: it returns `initial_lr + (final - initial) / n`.
    """

    initial_lr: float
    final_lr: float
    num_iters: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_lr("LinearLrSchedulerConfig", "initial_lr", self.initial_lr)
        _check_lr("LinearLrSchedulerConfig", "final_lr", self.final_lr, allow_zero=True)
        _check_iters("LinearLrSchedulerConfig", self.num_iters)

    def init(self) -> LinearLrScheduler:
        return LinearLrScheduler(self.initial_lr, self.final_lr, self.num_iters)


class LinearLrScheduler(LrScheduler):
    """>>> s = LinearLrScheduler(0.5, 0.1, 4)
    >>> [round(s.step(), 6) for _ in range(5)]
    [0.4, 0.3, 0.2, 0.1, 0.1]
    """

    name = "LinearLrScheduler"
    _state_key = "remaining_iters"

    def __init__(self, initial_lr: float, final_lr: float, num_iters: int) -> None:
        self.final_lr = float(final_lr)
        self.step_size = (final_lr - initial_lr) / num_iters
        self.remaining_iters = int(num_iters)

    def step(self) -> float:
        if self.remaining_iters > 0:
            self.remaining_iters -= 1
        return self.final_lr - self.step_size * self.remaining_iters

    def _get(self) -> Any:
        return self.remaining_iters

    def _set(self, value: Any) -> None:
        self.remaining_iters = int(value)


# ---- cosine annealing --------------------------------------------------------------------------
class CosineAnnealingLrSchedulerConfig(Config):
    """Half a cosine from `initial_lr` down to `min_lr` over `num_iters` steps; the step after
    reaches `min_lr`, and the schedule then restarts at `initial_lr` (Burn's period n + 1)."""

    initial_lr: float
    num_iters: int
    _: KW_ONLY
    min_lr: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_lr("CosineAnnealingLrSchedulerConfig", "initial_lr", self.initial_lr)
        _check_iters("CosineAnnealingLrSchedulerConfig", self.num_iters)
        if not 0 <= self.min_lr <= self.initial_lr:
            raise ConfigError(f"CosineAnnealingLrSchedulerConfig: min_lr must be in "
                              f"[0, initial_lr={self.initial_lr}], got {self.min_lr}")

    def init(self) -> CosineAnnealingLrScheduler:
        return CosineAnnealingLrScheduler(self.initial_lr, self.num_iters, self.min_lr)


class CosineAnnealingLrScheduler(LrScheduler):
    """>>> s = CosineAnnealingLrScheduler(1.0, 2)
    >>> [round(s.step(), 6) for _ in range(4)]
    [1.0, 0.5, 0.0, 1.0]
    """

    name = "CosineAnnealingLrScheduler"
    _state_key = "current_iter"

    def __init__(self, initial_lr: float, num_iters: int, min_lr: float = 0.0) -> None:
        self.max_lr, self.min_lr, self.num_iters = float(initial_lr), float(min_lr), num_iters
        # Burn starts at usize::MAX so that the first step wraps to 0
        self.current_iter = -1

    def step(self) -> float:
        self.current_iter = (self.current_iter + 1) % (self.num_iters + 1)
        cos = math.cos(self.current_iter / self.num_iters * math.pi)
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + cos)

    def _get(self) -> Any:
        return self.current_iter

    def _set(self, value: Any) -> None:
        self.current_iter = int(value)


# ---- exponential -------------------------------------------------------------------------------
class ExponentialLrSchedulerConfig(Config):
    """`initial_lr`, then multiplied by `gamma` at each step."""

    initial_lr: float
    gamma: float

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_lr("ExponentialLrSchedulerConfig", "initial_lr", self.initial_lr)
        if not 0 < self.gamma <= 1:
            raise ConfigError(f"ExponentialLrSchedulerConfig: gamma must be in (0, 1], got "
                              f"{self.gamma}")

    def init(self) -> ExponentialLrScheduler:
        return ExponentialLrScheduler(self.initial_lr, self.gamma)


class ExponentialLrScheduler(LrScheduler):
    """>>> s = ExponentialLrScheduler(0.8, 0.5)
    >>> [s.step() for _ in range(3)]
    [0.8, 0.4, 0.2]
    """

    name = "ExponentialLrScheduler"
    _state_key = "previous_lr"

    def __init__(self, initial_lr: float, gamma: float) -> None:
        self.gamma = float(gamma)
        self.previous_lr = initial_lr / gamma

    def step(self) -> float:
        self.previous_lr *= self.gamma
        return self.previous_lr

    def _get(self) -> Any:
        return self.previous_lr

    def _set(self, value: Any) -> None:
        self.previous_lr = float(value)


# ---- noam --------------------------------------------------------------------------------------
class NoamLrSchedulerConfig(Config):
    """The Transformer paper's schedule: linear warm-up for `warmup_steps`, then decay as
    1/sqrt(step), scaled by `init_lr / sqrt(model_size)`."""

    init_lr: float
    _: KW_ONLY
    warmup_steps: int = 4000
    model_size: int = 512

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.init_lr > 0:
            raise ConfigError(f"NoamLrSchedulerConfig: init_lr must be positive, got "
                              f"{self.init_lr}")
        if self.warmup_steps < 1 or self.model_size < 1:
            raise ConfigError(f"NoamLrSchedulerConfig: warmup_steps and model_size must be at "
                              f"least 1, got {self.warmup_steps} and {self.model_size}")

    def init(self) -> NoamLrScheduler:
        return NoamLrScheduler(self.init_lr, self.warmup_steps, self.model_size)


class NoamLrScheduler(LrScheduler):
    """>>> s = NoamLrScheduler(1.0, warmup_steps=4, model_size=16)
    >>> [round(s.step(), 4) for _ in range(5)]
    [0.0312, 0.0625, 0.0938, 0.125, 0.1118]
    """

    name = "NoamLrScheduler"
    _state_key = "step"

    def __init__(self, init_lr: float, warmup_steps: int = 4000, model_size: int = 512) -> None:
        self.init_lr, self.warmup_steps, self.model_size = float(init_lr), warmup_steps, model_size
        self.step_count = 0

    def step(self) -> float:
        self.step_count += 1
        k = float(self.step_count)
        # typeshed types float ** float as Any (a negative base gives a complex); these bases
        # are positive, so the powers are floats
        scale: float = self.model_size ** -0.5
        warm: float = min(k ** -0.5, k * self.warmup_steps ** -1.5)
        return self.init_lr * scale * warm

    def _get(self) -> Any:
        return self.step_count

    def _set(self, value: Any) -> None:
        self.step_count = int(value)


def as_scheduler(lr: float | LrScheduler | Config) -> LrScheduler:
    """A scheduler from a float (constant), a scheduler config, or a scheduler."""
    if isinstance(lr, LrScheduler):
        return lr
    if isinstance(lr, (int, float)):
        return ConstantLr(float(lr))
    init = getattr(lr, "init", None)
    if init is not None:
        built = init()
        if isinstance(built, LrScheduler):
            return built
    raise ConfigError(f"as_scheduler: expected a float, an LrScheduler or a scheduler config, got "
                      f"{type(lr).__name__}")
