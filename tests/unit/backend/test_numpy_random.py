"""The numpy backend's Bernoulli masks (16 random bits per value): shapes of any size, the
probability honoured, the ends exact, and the same seed giving the same mask."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.numpy import NumpyBackend
from pyrite.distribution import Bernoulli
from pyrite.dtype import DType


@pytest.mark.parametrize("shape", [(7,), (3, 5, 1), (0, 4), (1,)])
def test_mask_shapes(shape):
    mask = NumpyBackend(seed=1).random(shape, Bernoulli(0.5), DType.BOOL)
    assert mask.shape == shape and mask.dtype == bool


@pytest.mark.parametrize("prob", [0.1, 0.5, 0.93])
def test_mask_frequency(prob):
    mask = NumpyBackend(seed=2).random((200_000,), Bernoulli(prob), DType.BOOL)
    assert abs(mask.mean() - prob) < 0.005


def test_mask_ends_and_seed():
    backend = NumpyBackend(seed=3)
    assert not backend.random((9,), Bernoulli(0.0), DType.BOOL).any()
    assert backend.random((9,), Bernoulli(1.0), DType.F32).tolist() == [1.0] * 9
    again = [NumpyBackend(seed=4).random((33,), Bernoulli(0.3), DType.BOOL) for _ in range(2)]
    np.testing.assert_array_equal(*again)
