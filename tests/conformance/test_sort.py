"""Sorting against numpy: sort, argsort, topk, ascending and descending, with indices.

Sorts are stable in both directions: equal values keep their original order (so ascending and
descending index lists are not mirror images when there are ties). NaN sorts as the largest
value, as in numpy (last ascending, first descending)."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite import tensor

from .helpers import F32, F64, LAYOUTS, NUMERIC, assert_close, assert_equal, make

SHAPE = (3, 4, 6)


def _ties(dtype, seed):
    """Values 0..4 only, so every row has ties."""
    return np.random.default_rng(seed).integers(0, 5, SHAPE).astype(dtype.np_name)


def _stable_descending(a, dim):
    """Indices of a stable descending sort: ascending order of the negated (widened) values."""
    return np.argsort(-a.astype(np.float64), axis=dim, kind="stable")


# ---- examples ----------------------------------------------------------------------------------

def test_sort_example(backend):
    x = tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], device=backend)
    values, index = x.sort_with_indices(1)
    assert values.to_list() == [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]]
    assert index.to_list() == [[1, 2, 0], [0, 2, 1]]
    assert x.sort_descending(1).to_list() == [[3.0, 2.0, 1.0], [5.0, 4.0, 0.0]]


def test_ties_keep_their_order_in_both_directions(backend):
    x = tensor([1, 2, 1, 2, 0], device=backend)
    assert x.argsort().to_list() == [4, 0, 2, 1, 3]
    assert x.argsort_descending().to_list() == [1, 3, 0, 2, 4]
    assert x.topk_with_indices(3)[1].to_list() == [1, 3, 0]


def test_topk_example(backend):
    x = tensor([[1.0, 7.0, 3.0, 5.0]], device=backend)
    values, index = x.topk_with_indices(2, 1)
    assert values.to_list() == [[7.0, 5.0]]
    assert index.to_list() == [[1, 3]]
    assert x.topk(1).to_list() == [[7.0]]


# ---- against numpy -----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_sort_ascending(backend, dtype, dim, layout):
    a = _ties(dtype, 1)
    x = make(backend, a, dtype, layout)
    want_index = np.argsort(a, axis=dim, kind="stable")
    values, index = x.sort_with_indices(dim)
    assert_equal(values, np.sort(a, axis=dim), dtype=dtype)
    assert_equal(index, want_index, dtype=backend.int_dtype)
    assert_equal(x.sort(dim), np.sort(a, axis=dim), dtype=dtype)
    assert_equal(x.argsort(dim), want_index, dtype=backend.int_dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_sort_descending(backend, dtype, dim, layout):
    a = _ties(dtype, 2)
    x = make(backend, a, dtype, layout)
    want_index = _stable_descending(a, dim)
    want_values = np.take_along_axis(a, want_index, axis=dim)
    values, index = x.sort_descending_with_indices(dim)
    assert_equal(values, want_values, dtype=dtype)
    assert_equal(index, want_index, dtype=backend.int_dtype)
    assert_equal(x.sort_descending(dim), want_values, dtype=dtype)
    assert_equal(x.argsort_descending(dim), want_index, dtype=backend.int_dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_topk(backend, dtype, k, layout):
    a = _ties(dtype, 3)
    x = make(backend, a, dtype, layout)
    want_index = _stable_descending(a, -1)[..., :k]
    values, index = x.topk_with_indices(k, -1)
    assert_equal(values, np.take_along_axis(a, want_index, axis=-1), dtype=dtype)
    assert_equal(index, want_index, dtype=backend.int_dtype)
    assert_equal(x.topk(k), np.take_along_axis(a, want_index, axis=-1), dtype=dtype)


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_sort_distinct_random_floats(backend, dtype):
    a = np.random.default_rng(4).standard_normal((5, 40)).astype(dtype.np_name)
    x = make(backend, a, dtype, "permuted")
    assert_close(x.sort(1), np.sort(a, axis=1))
    assert_equal(x.argsort_descending(1), np.argsort(-a, axis=1, kind="stable"))
    assert_equal(x.topk_with_indices(5, 0)[1], np.argsort(-a, axis=0, kind="stable")[:5])


def test_topk_along_first_dim(backend):
    a = np.array([[1, 9], [5, 2], [3, 7]])
    values, index = tensor(a, device=backend).topk_with_indices(2, 0)
    assert values.to_list() == [[5, 9], [3, 7]]
    assert index.to_list() == [[1, 0], [2, 2]]


def test_nan_sorts_as_largest(backend):
    x = tensor([3.0, float("nan"), 1.0, -float("inf")], device=backend)
    values, index = x.sort_with_indices()
    assert_close(values, [-np.inf, 1.0, 3.0, np.nan])
    assert index.to_list() == [3, 2, 0, 1]
    values, index = x.sort_descending_with_indices()
    assert_close(values, [np.nan, 3.0, 1.0, -np.inf])
    assert index.to_list() == [1, 0, 2, 3]


def test_sort_single_element(backend):
    x = tensor([[2.5]], device=backend)
    assert x.sort(0).to_list() == [[2.5]]
    assert x.argsort_descending(1).to_list() == [[0]]
    assert x.topk(1, 0).to_list() == [[2.5]]
