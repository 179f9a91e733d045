"""Index ops against numpy: gather, scatter, select, select_assign, mask_where, mask_fill.

As in Burn, `scatter` and `select_assign` *add* the values at the indices (torch's scatter_add
and index_add), so repeated indices accumulate."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite import tensor

from .helpers import (
    ALL_DTYPES,
    BOOL,
    F32,
    I32,
    LAYOUTS,
    NUMERIC,
    U8,
    assert_close,
    assert_equal,
    make,
    random_array,
)

SHAPE = (3, 4, 5)


def _values(dtype, shape, seed):
    return random_array(shape, dtype, seed=seed, low=0, high=10)


def _index(shape, size, seed):
    return np.random.default_rng(seed).integers(0, size, shape)


# ---- examples ----------------------------------------------------------------------------------

def test_gather_example(backend):
    x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=backend)
    idx = tensor([[2, 0], [1, 1]], device=backend)
    assert x.gather(1, idx).to_list() == [[3.0, 1.0], [5.0, 5.0]]


def test_scatter_adds_repeated_indices(backend):
    x = tensor([0.0, 0.0, 0.0], device=backend)
    out = x.scatter(0, tensor([0, 2, 0, 0], device=backend),
                    tensor([1.0, 2.0, 3.0, 4.0], device=backend))
    assert out.to_list() == [8.0, 0.0, 2.0]


def test_select_assign_adds(backend):
    x = tensor([[1, 1], [1, 1], [1, 1]], device=backend)
    out = x.select_assign(0, [2, 0, 2], tensor([[10, 20], [30, 40], [50, 60]], device=backend))
    assert out.to_list() == [[31, 41], [1, 1], [61, 81]]


def test_mask_where_and_fill_example(backend):
    x = tensor([1.0, -2.0, 3.0], device=backend)
    mask = x < 0.0
    assert x.mask_fill(mask, 0.0).to_list() == [1.0, 0.0, 3.0]
    assert x.mask_where(mask, tensor([9.0, 8.0, 7.0], device=backend)).to_list() == [1.0, 8.0,
                                                                                        3.0]


# ---- gather / scatter --------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_gather(backend, dtype, dim, layout):
    a = _values(dtype, SHAPE, 1)
    idx_shape = list(SHAPE)
    idx_shape[dim] = 7  # more picks than entries: indices repeat
    idx = _index(tuple(idx_shape), SHAPE[dim], 2)
    x = make(backend, a, dtype, layout)
    out = x.gather(dim, make(backend, idx, backend.int_dtype, "permuted"))
    assert_close(out, np.take_along_axis(a, idx, axis=dim), dtype=dtype)


def test_gather_with_smaller_index_in_other_dims(backend):
    # like torch: index.shape[d] <= x.shape[d] for d != dim; only that corner is read
    a = np.arange(20.0).reshape(4, 5)
    idx = np.array([[4, 0], [1, 1]])
    out = tensor(a, device=backend).gather(1, tensor(idx, device=backend))
    assert_close(out, np.take_along_axis(a[:2], idx, axis=1))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_scatter(backend, dtype, dim, layout):
    a = _values(dtype, SHAPE, 3)
    idx = _index(SHAPE, SHAPE[dim], 4)
    v = _values(dtype, SHAPE, 5)
    want = a.copy()
    grids = np.indices(SHAPE, sparse=True)
    d = dim % 3
    np.add.at(want, tuple(idx if i == d else grids[i] for i in range(3)), v)
    x = make(backend, a, dtype, layout)
    index = make(backend, idx, backend.int_dtype, "sliced")
    out = x.scatter(dim, index, make(backend, v, dtype, "permuted"))
    assert_close(out, want, dtype=dtype)
    assert_close(x, a)  # the input is unchanged


def test_index_dtypes_are_converted(backend):
    x = tensor([10, 20, 30], device=backend)
    idx = make(backend, [2, 0], I32)
    assert x.select(0, idx).to_list() == [30, 10]
    assert x.gather(0, idx).to_list() == [30, 10]
    assert x.select(0, [1, 1]).to_list() == [20, 20]


# ---- select / select_assign --------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_select(backend, dtype, dim, layout):
    a = _values(dtype, SHAPE, 6)
    idx = np.array([SHAPE[dim] - 1, 0, 1, 0])
    x = make(backend, a, dtype, layout)
    assert_equal(x.select(dim, tensor(idx, device=backend)), np.take(a, idx, axis=dim),
                 dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_select_assign(backend, dtype, dim, layout):
    a = _values(dtype, SHAPE, 7)
    idx = np.array([SHAPE[dim] - 1, 0, SHAPE[dim] - 1])
    v_shape = list(SHAPE)
    v_shape[dim] = len(idx)
    v = _values(dtype, tuple(v_shape), 8)
    want = a.copy()
    np.add.at(np.moveaxis(want, dim, 0), idx, np.moveaxis(v, dim, 0))
    x = make(backend, a, dtype, layout)
    out = x.select_assign(dim, tensor(idx, device=backend), make(backend, v, dtype, "permuted"))
    assert_close(out, want, dtype=dtype)
    assert_close(x, a)


# ---- masks -------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_mask_where(backend, dtype, layout):
    a = _values(dtype, SHAPE, 9)
    v = _values(dtype, SHAPE, 10)
    m = random_array(SHAPE, BOOL, seed=11)
    x = make(backend, a, dtype, layout)
    mask = make(backend, m, BOOL, "sliced")
    assert_equal(x.mask_where(mask, make(backend, v, dtype, "permuted")), np.where(m, v, a),
                 dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_mask_where_broadcasts_mask_and_value(backend, dtype):
    a = _values(dtype, SHAPE, 12)
    v = _values(dtype, (1, 5), 13)
    m = random_array((4, 1), BOOL, seed=14)
    x = make(backend, a, dtype)
    out = x.mask_where(make(backend, m, BOOL), make(backend, v, dtype))
    assert_equal(out, np.where(m, v, a), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_mask_fill(backend, dtype, layout):
    a = _values(dtype, SHAPE, 15)
    m = random_array(SHAPE, BOOL, seed=16)
    fill = True if dtype is BOOL else (7 if dtype is U8 or not dtype.is_float else -2.5)
    x = make(backend, a, dtype, layout)
    out = x.mask_fill(make(backend, m, BOOL, "permuted"), fill)
    assert_equal(out, np.where(m, np.array(fill, dtype.np_name), a), dtype=dtype)
    row = random_array((5,), BOOL, seed=17)
    assert_equal(x.mask_fill(make(backend, row, BOOL), fill),
                 np.where(row, np.array(fill, dtype.np_name), a), dtype=dtype)


def test_mask_fill_with_nan_and_inf(backend):
    x = tensor([1.0, 2.0, 3.0], device=backend)
    mask = tensor([True, False, True], device=backend)
    assert_close(x.mask_fill(mask, float("-inf")), [-np.inf, 2.0, -np.inf])
    assert_close(x.mask_fill(mask, float("nan")), [np.nan, 2.0, np.nan])


def test_single_element_index_ops(backend):
    x = make(backend, [4.0], F32)
    one = tensor([0], device=backend)
    assert x.gather(0, one).to_list() == [4.0]
    assert x.select(0, one).to_list() == [4.0]
    assert x.scatter(0, one, tensor([1.0], device=backend)).to_list() == [5.0]
    assert x.select_assign(0, one, tensor([2.0], device=backend)).to_list() == [6.0]
    assert x.mask_fill(tensor([True], device=backend), 0.0).to_list() == [0.0]
