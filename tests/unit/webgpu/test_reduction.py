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


@pytest.mark.parametrize("n", [2**24 - 256, 2**24, 2**24 + 1000])
def test_full_sum_around_2_24_elements(gpu, up, down, n):
    """One workgroup folding a row of millions gave 131,066 for every size from about 4M on
    lavapipe; long rows are split over workgroups (reduction.SEGMENT)."""
    from pyrite.backend.reduce import SUM
    got = down(gpu.reduce(SUM, gpu.full((n,), 1.0, gpu.float_dtype), 0))
    assert got[0] == n


def test_every_reduction_of_long_rows_with_a_tail(gpu, up, down):
    x = RNG.uniform(-4, 4, (2, 3 * 65536 + 12345)).astype(np.float32)
    x[0, 150_001] = 9.0  # a maximum in a later segment; a tie after it
    x[0, 170_000] = 9.0
    x[1, 7] = -9.0
    near_one = (1 + RNG.uniform(-1e-5, 1e-5, x.shape)).astype(np.float32)  # a finite product
    wide = x.astype(np.float64)
    want = {"sum": (x, wide.sum(1)), "prod": (near_one, near_one.astype(np.float64).prod(1)),
            "max": (x, x.max(1)), "min": (x, x.min(1)), "argmax": (x, x.argmax(1)),
            "argmin": (x, x.argmin(1))}
    for name in sorted(REDUCTIONS):
        data, expected = want[name]
        for view in (up(data), gpu.permute(up(data.T.copy()), (1, 0))):  # dense, strided
            got = down(gpu.reduce(REDUCTIONS[name], view, 1))
            np.testing.assert_allclose(got[:, 0], expected, rtol=2e-4, atol=2e-3, err_msg=name)


def test_fused_full_sum_of_a_long_row(gpu):
    import pyrite
    from pyrite.webgpu.fusion import Fusion
    x = pyrite.ones((2**24 + 3,), device=Fusion(gpu))
    assert (x * 2).sum().into_scalar() == float(np.float32(2 * (2**24 + 3)))  # f32 spacing
    assert (x * 2).argmax(0).into_scalar() == 0
