"""gather/select/scatter_add/select_add, slice_assign, cat, flip and pad, against numpy."""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(4)


def test_gather_and_select(gpu, ref, up, down):
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    index = RNG.integers(0, 5, (3, 4)).astype(np.int32)
    np.testing.assert_array_equal(down(gpu.gather(up(x), 1, up(index))), ref.gather(x, 1, index))
    rows = np.array([2, 0, 2], np.int32)
    np.testing.assert_array_equal(down(gpu.select(up(x), 0, up(rows))), x[rows])
    cols = np.array([2, 1, 2], np.int32)
    got = down(gpu.select(gpu.permute(up(x), (1, 0)), 1, up(cols)))
    np.testing.assert_array_equal(got, x.T[:, cols])


def test_scatter_add_sums_repeated_indices(gpu, ref, up, down):
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    index = np.array([[0, 1, 0], [3, 3, 3]], np.int32)
    value = RNG.normal(size=(2, 3)).astype(np.float32)
    got = down(gpu.scatter_add(up(x), 0, up(index), up(value)))
    np.testing.assert_allclose(got, ref.scatter_add(x, 0, index, value), rtol=1e-6)
    # index smaller than x along a non-scatter dim: only its region is touched
    small = np.array([[2], [0]], np.int32)
    v2 = np.ones((2, 1), np.float32)
    got = down(gpu.scatter_add(up(x), 1, up(small), up(v2)))
    np.testing.assert_allclose(got, ref.scatter_add(x, 1, small, v2))


def test_select_add(gpu, ref, up, down):
    x = np.zeros((3, 4), np.int32)
    index = np.array([1, 1, 3], np.int32)
    value = RNG.integers(-5, 5, (3, 3)).astype(np.int32)
    got = down(gpu.select_add(up(x), 1, up(index), up(value)))
    np.testing.assert_array_equal(got, ref.select_add(x, 1, index, value))


def test_slice_assign_cat_flip_pad(gpu, ref, up, down):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    value = -np.ones((2, 2), np.float32)
    ranges = [(0, 4, 2), (1, 3, 1)]
    got = down(gpu.slice_assign(up(x), ranges, up(value)))
    np.testing.assert_array_equal(got, ref.slice_assign(x, ranges, value))
    np.testing.assert_array_equal(down(up(x)), x)  # the input is unchanged
    y = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(down(gpu.cat([up(x), gpu.flip(up(y), (0,))], 1)),
                                  np.concatenate([x, y[::-1]], 1))
    np.testing.assert_array_equal(down(gpu.cat([up(x), up(x[:1])], 0)),
                                  np.concatenate([x, x[:1]], 0))
    np.testing.assert_array_equal(down(gpu.pad(up(x), [(1, 0), (0, 2)], 7.0)),
                                  np.pad(x, [(1, 0), (0, 2)], constant_values=7.0))


def test_bool_movement(gpu, up, down):
    m = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(down(gpu.cat([up(m), up(m)], 0)), np.concatenate([m, m]))
    np.testing.assert_array_equal(down(gpu.flip(up(m), (1,))), m[:, ::-1])
    idx = np.array([2, 0], np.int32)
    np.testing.assert_array_equal(down(gpu.select(up(m), 1, up(idx))), m[:, idx])
