"""Reductions against numpy, with Burn's shapes: a reduction of every element gives shape (1,);
a `*_dim` reduction keeps the reduced dim with size 1. Int means floor-divide (numpy's `//`)."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite import ShapeError, tensor

from .helpers import (
    BOOL,
    F16,
    F32,
    FLOATS,
    I8,
    I16,
    I64,
    INTS,
    LAYOUTS,
    NUMERIC,
    U8,
    assert_close,
    assert_equal,
    make,
    need,
    random_array,
    reference,
)

SHAPE = (3, 4, 5)
DIMS = [0, 1, 2, -1]


def _inputs(dtype, seed, shape=SHAPE, *, positive=False):
    """Floats in [-3, 3) ([0.5, 1.5) for products), ints in 0..2 so that sums and products
    stay inside i8/u8."""
    if dtype.is_float:
        low, high = (0.5, 1.5) if positive else (-3.0, 3.0)
        return random_array(shape, dtype, seed=seed, low=low, high=high)
    return random_array(shape, dtype, seed=seed, low=1 if positive else 0, high=3)


def _tol(dtype, n):
    """Sums of n f16 values carry n roundings: widen the absolute tolerance with n."""
    return {"atol": 3e-3 * n} if dtype is F16 else {}


# ---- examples ----------------------------------------------------------------------------------

def test_sum_of_everything_has_shape_one(backend):
    x = tensor([[1.0, 2.0], [3.0, 4.0]], device=backend)
    assert_close(x.sum(), [10.0], shape=(1,))
    assert_close(x.mean(), [2.5], shape=(1,))
    assert_close(x.sum_dim(1), [[3.0], [7.0]])
    assert_close(x.mean_dim(0), [[2.0, 3.0]])


def test_int_mean_floors(backend):
    x = tensor([[1, 2], [3, 5]], device=backend)
    assert x.mean().to_list() == [2]  # 11 // 4
    assert x.mean_dim(1).to_list() == [[1], [4]]
    y = tensor([-1, -2], device=backend)
    assert y.mean().to_list() == [-2]  # -3 // 2 floors


@pytest.mark.parametrize("dtype, value", [(U8, 200), (I8, -100), (I16, 30000), (F16, 60000.0)],
                         ids=str)
def test_mean_does_not_overflow_where_the_sum_would(backend, dtype, value):
    # numpy's mean accumulates small dtypes in a wider one; the mean itself always fits
    need(backend, dtype)
    x = make(backend, np.full((2, 4), value), dtype)
    assert_close(x.mean(), [value], dtype=dtype)
    assert_close(x.mean_dim(1), [[value], [value]], dtype=dtype)
    assert_close(x.mean_dim(0), [[value] * 4], dtype=dtype)


def test_argmax_first_of_ties(backend):
    x = tensor([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 0.0, 5.0]], device=backend)
    assert x.argmax(1).to_list() == [[1], [0]]
    assert x.argmin(1).to_list() == [[0], [2]]
    assert (-x).argmin(1).to_list() == [[1], [0]]


# ---- every element -----------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_reduce_all(backend, dtype, layout):
    a = _inputs(dtype, 1)
    x = make(backend, a, dtype, layout)
    ref = reference(a)
    assert_close(x.sum(), [ref.sum()], dtype=dtype, **_tol(dtype, a.size))
    assert_close(x.max(), [ref.max()], dtype=dtype)
    assert_close(x.min(), [ref.min()], dtype=dtype)
    if dtype.is_float:
        assert_close(x.mean(), [ref.mean()], dtype=dtype, **_tol(dtype, 4))
    else:
        assert_equal(x.mean(), [a.astype(np.int64).sum() // a.size], dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_prod_all(backend, dtype, layout):
    a = _inputs(dtype, 2, (2, 3), positive=True)
    x = make(backend, a, dtype, layout)
    assert_close(x.prod(), [reference(a).prod()], dtype=dtype)


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_reduce_all_single_element(backend, dtype):
    x = make(backend, [[2]], dtype)
    for name in ("sum", "prod", "max", "min", "mean"):
        assert_close(getattr(x, name)(), [2], dtype=dtype, shape=(1,))


# ---- along a dim -------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_reduce_dim(backend, dtype, dim, layout):
    a = _inputs(dtype, 3)
    x = make(backend, a, dtype, layout)
    ref = reference(a)
    n = a.shape[dim]
    assert_close(x.sum_dim(dim), ref.sum(axis=dim, keepdims=True), dtype=dtype, **_tol(dtype, n))
    assert_close(x.max_dim(dim), ref.max(axis=dim, keepdims=True), dtype=dtype)
    assert_close(x.min_dim(dim), ref.min(axis=dim, keepdims=True), dtype=dtype)
    if dtype.is_float:
        assert_close(x.mean_dim(dim), ref.mean(axis=dim, keepdims=True), dtype=dtype,
                     **_tol(dtype, 1))
    else:
        want = a.astype(np.int64).sum(axis=dim, keepdims=True) // n
        assert_equal(x.mean_dim(dim), want, dtype=dtype)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_prod_dim(backend, dtype, dim):
    a = _inputs(dtype, 4, positive=True)
    x = make(backend, a, dtype, "permuted")
    assert_close(x.prod_dim(dim), reference(a).prod(axis=dim, keepdims=True), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_argmax_argmin(backend, dtype, dim, layout):
    # distinct values 0..59 (exact in every dtype) so the answer does not depend on ties
    a = np.random.default_rng(5).permutation(60).reshape(SHAPE).astype(dtype.np_name)
    x = make(backend, a, dtype, layout)
    assert_equal(x.argmax(dim), np.argmax(a, axis=dim, keepdims=True), dtype=backend.int_dtype)
    assert_equal(x.argmin(dim), np.argmin(a, axis=dim, keepdims=True), dtype=backend.int_dtype)
    values, index = x.max_dim_with_indices(dim)
    assert_close(values, a.max(axis=dim, keepdims=True), dtype=dtype)
    assert_equal(index, np.argmax(a, axis=dim, keepdims=True))
    values, index = x.min_dim_with_indices(dim)
    assert_close(values, a.min(axis=dim, keepdims=True), dtype=dtype)
    assert_equal(index, np.argmin(a, axis=dim, keepdims=True))


@pytest.mark.parametrize("dtype", [F32, I64], ids=str)
def test_reduce_dim_of_size_one(backend, dtype):
    x = make(backend, [[3], [4]], dtype)
    assert_close(x.sum_dim(1), [[3], [4]], dtype=dtype)
    assert_close(x.max_dim(1), [[3], [4]], dtype=dtype)
    assert_equal(x.argmax(1), [[0], [0]])


def test_sum_of_an_empty_tensor_is_zero(backend):
    x = tensor(np.zeros((0, 3), np.float32), device=backend)
    assert_close(x.sum(), [0.0])
    assert_close(x.sum_dim(0), [[0.0, 0.0, 0.0]])
    assert_close(x.prod(), [1.0])


def test_max_of_an_empty_tensor_raises(backend):
    x = tensor(np.zeros((0, 3), np.float32), device=backend)
    with pytest.raises(ShapeError, match="max: the tensor is empty"):
        x.max()
    with pytest.raises(ShapeError, match="argmax: dim 0 is empty"):
        x.argmax(0)


# ---- any / all ---------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [BOOL, F32, I64, U8, F16], ids=str)
def test_any_all(backend, dtype, layout):
    a = random_array((3, 4, 5), BOOL, seed=6) & random_array((3, 4, 5), BOOL, seed=7)
    a[0] = True  # one all-true block, one all-false block, the rest mixed
    a[1] = False
    x = make(backend, a.astype(dtype.np_name), dtype, layout)
    assert_equal(x.any(), [a.any()], dtype=BOOL)
    assert_equal(x.all(), [a.all()], dtype=BOOL)
    for dim in (0, 1, -1):
        assert_equal(x.any_dim(dim), a.any(axis=dim, keepdims=True), dtype=BOOL)
        assert_equal(x.all_dim(dim), a.all(axis=dim, keepdims=True), dtype=BOOL)


def test_any_all_examples(backend):
    x = tensor([[True, False], [True, True]], device=backend)
    assert x.any().to_list() == [True]
    assert x.all().to_list() == [False]
    assert x.all_dim(1).to_list() == [[False], [True]]
    assert x.any_dim(0).to_list() == [[True, True]]
    assert tensor([0.0, -0.0], device=backend).any().to_list() == [False]
    assert tensor([0.0, 2.5], device=backend).all().to_list() == [False]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_reductions_keep_float_dtype(backend, dtype):
    x = make(backend, [[1.0, 2.0]], dtype)
    for out in (x.sum(), x.mean(), x.sum_dim(0), x.mean_dim(1), x.max_dim(1), x.prod_dim(1)):
        assert out.dtype is dtype


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_reductions_keep_int_dtype(backend, dtype):
    x = make(backend, [[1, 2], [3, 4]], dtype)
    for out in (x.sum(), x.mean(), x.sum_dim(0), x.mean_dim(1), x.max_dim(1), x.prod_dim(1)):
        assert out.dtype is dtype
