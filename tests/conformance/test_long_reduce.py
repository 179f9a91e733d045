"""Reductions of rows around 2^24 elements and past a GPU's workgroup-count limit (65,535
workgroups of 256 threads: 16,776,960 elements), on every backend: natively (numpy, webgpu on
lavapipe, unfused webgpu) and in the page (page-webgpu, Chromium's WebGPU).

A full sum of 2^24 ones once gave 131,066 on lavapipe. The inputs are made on the device (no
64 MB upload to the page) and chosen so that every backend's answer is exact whatever the
order of its additions: the values repeat -3..3, so every partial sum stays small, and the
extremes sit near the end, past the first 65,535 workgroups' reach.
"""

from __future__ import annotations

import numpy as np
import pytest

import pyrite

from .helpers import assert_equal

LIMIT = 65_535 * 256  # a dispatch of 65,535 workgroups of 256 threads covers this many
SIZES = [2**24 - 256, 2**24, LIMIT + 1000]


def _periodic(n: int, backend: pyrite.Backend, dtype: str) -> pyrite.Tensor:
    """-3, -2, ..., 3, -3, ... (n values): the sum of each period of 7 is 0."""
    x = pyrite.arange(0, n, device=backend) % 7 - 3
    return x.float() if dtype == "float32" else x.int()


def _np(x: pyrite.Tensor) -> str:
    return str(x.dtype.np_name)


@pytest.mark.parametrize("n", SIZES)
def test_full_sum_of_ones(backend, n):
    x = pyrite.ones((n,), device=backend)
    assert_equal(x.sum(), np.array([n], np.float32))


@pytest.mark.parametrize("dtype", ["float32", pytest.param("int32", marks=pytest.mark.slow)])
def test_every_reduction_past_the_workgroup_limit(backend, dtype):
    n = LIMIT + 1000
    x = _periodic(n, backend, dtype)
    index = pyrite.arange(0, n, device=backend)
    late = index.equal(n - 5)  # a unique maximum and minimum past the limit
    x = x.mask_fill(late, 9).mask_fill(index.equal(n - 2), -9)
    values = np.arange(n) % 7 - 3
    values[n - 5], values[n - 2] = 9, -9
    want = np.array([values.sum()])
    assert_equal(x.sum(), want.astype(_np(x)))
    assert_equal(x.max(), np.array([9], _np(x)))
    assert_equal(x.min(), np.array([-9], _np(x)))
    assert int(x.argmax(0).into_scalar()) == n - 5
    assert int(x.argmin(0).into_scalar()) == n - 2
    if dtype == "float32":
        assert float(x.mean().into_scalar()) == pytest.approx(values.sum() / n, abs=1e-9)
        ones = pyrite.ones((n,), device=backend).mask_fill(late, 2.0)
        assert_equal(ones.prod(), np.array([2.0], np.float32))  # the 2 is past the limit


def test_sum_dim_of_rows_past_the_workgroup_limit(backend):
    """Many short rows: one workgroup per output, more outputs than one dispatch's 65,535
    workgroups (the grid's second dimension takes the rest)."""
    rows = 2 * 65_535 + 7
    x = pyrite.ones((rows, 4), device=backend)
    got = x.sum_dim(1)
    assert got.shape == (rows, 1)
    assert_equal(got.sum(), np.array([4 * rows], np.float32))
    assert_equal(got.slice([(rows - 2, rows), (0, 1)]), np.full((2, 1), 4, np.float32))
