"""Stable sort along a dim, values and indices, against the numpy backend."""

from __future__ import annotations

import numpy as np
import pytest

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 37), 1), ((33, 4), 0), ((2, 3, 5), 1)])
def test_sort_is_stable(gpu, ref, up, down, shape, dim, descending):
    x = RNG.integers(0, 4, shape).astype(np.float32)  # many ties
    values, indices = gpu.sort(up(x), dim, descending)
    want_v, want_i = ref.sort(x, dim, descending)
    np.testing.assert_array_equal(down(values), want_v)
    np.testing.assert_array_equal(down(indices), want_i)


def test_sort_int_and_nan(gpu, ref, up, down):
    x = np.array([5, -2, 7, -2, 0], np.int32)
    np.testing.assert_array_equal(down(gpu.sort(up(x), 0, False)[0]), np.sort(x))
    f = np.array([1.0, np.nan, -np.inf, 0.5, np.nan], np.float32)
    for descending in (False, True):
        v, i = gpu.sort(up(f), 0, descending)
        want_v, want_i = ref.sort(f, 0, descending)
        np.testing.assert_array_equal(down(v), want_v)
        np.testing.assert_array_equal(down(i), want_i)
