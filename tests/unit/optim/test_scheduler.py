"""Each scheduler's values follow Burn's formulas, first step included."""

from __future__ import annotations

import math

import pytest

from pyrite.optim import (
    ConstantLrConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    as_scheduler,
)


def steps(config: object, n: int) -> list[float]:
    s = config.init()  # type: ignore[attr-defined]
    return [s.step() for _ in range(n)]


def test_constant() -> None:
    assert steps(ConstantLrConfig(0.3), 3) == [0.3, 0.3, 0.3]
    assert as_scheduler(0.3).step() == 0.3


def test_linear_reaches_the_final_rate_and_stays() -> None:
    got = steps(LinearLrSchedulerConfig(0.9, 0.1, 4), 6)
    assert got == pytest.approx([0.7, 0.5, 0.3, 0.1, 0.1, 0.1])


def test_cosine_annealing_goes_down_then_restarts() -> None:
    got = steps(CosineAnnealingLrSchedulerConfig(1.0, 4, min_lr=0.2), 7)
    want = [0.2 + 0.4 * (1 + math.cos(k / 4 * math.pi)) for k in (0, 1, 2, 3, 4, 0, 1)]
    assert got == pytest.approx(want)


def test_exponential() -> None:
    assert steps(ExponentialLrSchedulerConfig(0.5, 0.5), 4) == pytest.approx(
        [0.5, 0.25, 0.125, 0.0625])


def test_noam_warms_up_then_decays() -> None:
    got = steps(NoamLrSchedulerConfig(2.0, warmup_steps=10, model_size=100), 30)
    peak = max(range(30), key=lambda i: got[i])
    assert peak == 9  # step 10
    assert got[0] == pytest.approx(2.0 / 10 * 1 * 10 ** -1.5)
    assert got[29] == pytest.approx(2.0 / 10 * 30 ** -0.5)


def test_as_scheduler_takes_configs() -> None:
    assert as_scheduler(ExponentialLrSchedulerConfig(0.5, 0.5)).step() == 0.5
