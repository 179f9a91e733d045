"""Fixtures for the optimizer tests: a starting point and seeded gradient sequences."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def start() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"weight": rng.normal(size=(2, 3)).astype(np.float32),
            "bias": rng.normal(size=(3,)).astype(np.float32)}


@pytest.fixture
def grad_steps() -> list[dict[str, np.ndarray]]:
    """Five steps of gradients for both params, some large, some tiny."""
    rng = np.random.default_rng(1)
    return [{"weight": (rng.normal(size=(2, 3)) * s).astype(np.float32),
             "bias": (rng.normal(size=(3,)) * s).astype(np.float32)}
            for s in (1.0, 0.1, 3.0, 1e-3, 0.5)]
