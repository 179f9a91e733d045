"""Reductions along a dim, argmax/argmin and softmax, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.reduce import REDUCTIONS

RNG = np.random.default_rng(1)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reduce_every_dim(gpu, ref, up, down, name, dtype):
    x = RNG.uniform(-2, 2, (3, 4, 5)).astype(dtype) if dtype == "float32" else \
        RNG.integers(-3, 4, (3, 4, 5)).astype(dtype)
    op = REDUCTIONS[name]
    for dim in range(3):
        got = down(gpu.reduce(op, up(x), dim))
        want = ref.reduce(op, x, dim)
        assert got.shape == want.shape and got.dtype == want.astype(got.dtype).dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} dim {dim}")


def test_reduce_long_rows_and_views(gpu, up, down):
    from pyrite.backend.reduce import MAX, SUM
    x = RNG.uniform(-1, 1, (3, 5000)).astype(np.float32)
    view = gpu.permute(up(x), (1, 0))  # reduce a strided dim
    np.testing.assert_allclose(down(gpu.reduce(SUM, view, 0)), x.sum(1)[None], rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_array_equal(down(gpu.reduce(MAX, view, 0)), x.max(1)[None])


def test_argmax_ties_and_nan_like_numpy(gpu, up, down):
    from pyrite.backend.reduce import ARGMAX, ARGMIN
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, np.nan, 5.0, np.nan], [-1, -1, -1, -1]],
                 np.float32)
    for op, fn in ((ARGMAX, np.argmax), (ARGMIN, np.argmin)):
        got = down(gpu.reduce(op, up(x), 1))
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got.ravel(), fn(x, axis=1), err_msg=op.name)


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_and_log_softmax(gpu, up, down, dim):
    x = RNG.normal(0, 3, (4, 300)).astype(np.float32)
    shifted = x - x.max(dim, keepdims=True)
    want = np.exp(shifted) / np.exp(shifted).sum(dim, keepdims=True)
    np.testing.assert_allclose(down(gpu.softmax(up(x), dim)), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(down(gpu.log_softmax(up(x), dim)), np.log(want), rtol=1e-5,
                               atol=1e-5)
