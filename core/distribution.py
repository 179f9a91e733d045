"""Distributions for random tensors (Burn's `Distribution`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Uniform:
    """Uniform in [low, high); for Int tensors the integers low..high-1."""

    low: float = 0.0
    high: float = 1.0


@dataclass(frozen=True)
class Normal:
    """Gaussian with the given mean and standard deviation."""

    mean: float = 0.0
    std: float = 1.0


@dataclass(frozen=True)
class Bernoulli:
    """1 with probability `prob`, else 0."""

    prob: float = 0.5


Default = Uniform(0.0, 1.0)
Distribution = Uniform | Normal | Bernoulli
