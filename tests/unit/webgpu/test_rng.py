"""Seeded counter-based random tensors: reproducible, and distributed as asked."""

from __future__ import annotations

import numpy as np

from pyrite.distribution import Bernoulli, Normal, Uniform
from pyrite.dtype import DType


def test_same_seed_same_tensors(gpu, down):
    gpu.seed(42)
    first = [down(gpu.random((100,), Uniform(), DType.F32)) for _ in range(2)]
    gpu.seed(42)
    second = [down(gpu.random((100,), Uniform(), DType.F32)) for _ in range(2)]
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])  # each call draws new numbers


def test_distributions(gpu, down):
    gpu.seed(7)
    n = 200_000
    u = down(gpu.random((n,), Uniform(-2.0, 3.0), DType.F32))
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.02
    z = down(gpu.random((n,), Normal(1.0, 2.0), DType.F32))
    assert abs(z.mean() - 1.0) < 0.02 and abs(z.std() - 2.0) < 0.02
    b = down(gpu.random((n,), Bernoulli(0.25), DType.BOOL))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.25) < 0.01
    i = down(gpu.random((n,), Uniform(-3, 4), DType.I32))
    assert i.dtype == np.int32 and set(np.unique(i)) == set(range(-3, 4))
    f = down(gpu.random((10,), Bernoulli(1.0), DType.F32))
    np.testing.assert_array_equal(f, np.ones(10))
