"""Burn's kind-specific tables: float (variance, precision, casts), int (ranges, one_hot,
cartesian_grid, int_random) and bool (argwhere, nonzero, triangle and diagonal masks), plus
casts between every pair of dtypes.

Burn's masks are true where the matching op *fills*: `tril_mask` is true above the kept lower
triangle, `triu_mask` below the kept upper triangle, `diag_mask` off the diagonal."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite import (
    Normal,
    Tensor,
    Uniform,
    cartesian_grid,
    diag_mask,
    int_random,
    one_hot,
    tensor,
    tril_mask,
    triu_mask,
)

from .helpers import (
    ALL_DTYPES,
    BOOL,
    F16,
    F32,
    F64,
    FLOATS,
    I8,
    I32,
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

# ---- float table -------------------------------------------------------------------------------


def test_var_example(backend):
    x = tensor([[1.0, 2.0, 3.0, 4.0]], device=backend)
    assert_close(x.var(1), [[np.var([1, 2, 3, 4], ddof=1)]])
    assert_close(x.var_bias(1), [[1.25]])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_var_family(backend, dtype, dim, layout):
    a = random_array((3, 4, 5), dtype, seed=1)
    x = make(backend, a, dtype, layout)
    r = reference(a)
    tol = {"atol": 2e-2} if dtype is F16 else {}
    want_var = r.var(axis=dim, ddof=1, keepdims=True)
    want_bias = r.var(axis=dim, keepdims=True)
    want_mean = r.mean(axis=dim, keepdims=True)
    assert_close(x.var(dim), want_var, dtype=dtype, **tol)
    assert_close(x.var_bias(dim), want_bias, dtype=dtype, **tol)
    var, mean = x.var_mean(dim)
    assert_close(var, want_var, dtype=dtype, **tol)
    assert_close(mean, want_mean, dtype=dtype, **tol)
    var, mean = x.var_mean_bias(dim)
    assert_close(var, want_bias, dtype=dtype, **tol)
    assert_close(mean, want_mean, dtype=dtype, **tol)


@pytest.mark.parametrize("dtype, full", [(F16, F32), (F32, F32), (F64, F64)], ids=str)
def test_full_precision_round_trip(backend, dtype, full):
    need(backend, dtype)
    a = np.array([0.1, 1.5, -2.25], dtype.np_name)
    x = make(backend, a, dtype)
    wide = x.to_full_precision()
    assert wide.dtype is full
    assert_close(wide, reference(a))
    back = Tensor.from_full_precision(wide, dtype)
    assert back.dtype is dtype
    assert_equal(back, a)
    assert Tensor.from_full_precision(wide).dtype is backend.float_dtype


def test_float_one_hot(backend):
    x = one_hot(2, 4, device=backend)
    assert x.dtype is backend.float_dtype
    assert x.to_list() == [0.0, 0.0, 1.0, 0.0]


def test_float_to_int_truncates_toward_zero(backend):
    x = tensor([1.5, -1.5, 2.7, -2.7, 0.0], device=backend)
    assert x.int().to_list() == [1, -1, 2, -2, 0]
    assert x.int().dtype is backend.int_dtype


# ---- int table ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_int_one_hot(backend, dtype):
    need(backend, dtype)
    idx = np.array([[0, 2], [1, 3]])
    out = make(backend, idx, dtype, "permuted").one_hot(4)
    assert out.kind is pyrite.Int
    assert_equal(out, np.eye(4, dtype=np.int64)[idx])


def test_int_one_hot_example(backend):
    assert tensor([0, 2, 1], device=backend).one_hot(3).to_list() == [[1, 0, 0], [0, 0, 1],
                                                                       [0, 1, 0]]


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 1, 4)], ids=str)
def test_cartesian_grid(backend, shape):
    grid = cartesian_grid(shape, device=backend)
    want = np.stack(np.meshgrid(*[np.arange(s) for s in shape], indexing="ij"), axis=-1)
    assert_equal(grid, want, dtype=backend.int_dtype)


def test_cartesian_grid_example(backend):
    assert cartesian_grid([2, 2], device=backend).to_list() == [[[0, 0], [0, 1]],
                                                                [[1, 0], [1, 1]]]


@pytest.mark.parametrize("dtype", [I64, I32, U8], ids=str)
def test_int_random_uniform(backend, dtype):
    need(backend, dtype)
    pyrite.seed(5, device=backend)
    x = int_random((4000,), Uniform(3, 9), device=backend, dtype=dtype)
    assert x.dtype is dtype
    values = x.numpy()
    assert sorted(set(values.tolist())) == [3, 4, 5, 6, 7, 8]
    assert abs(values.mean() - 5.5) < 0.15
    pyrite.seed(5, device=backend)
    assert_equal(int_random((4000,), Uniform(3, 9), device=backend, dtype=dtype), values)


def test_int_random_normal_rounds(backend):
    pyrite.seed(6, device=backend)
    x = int_random((4000,), Normal(10.0, 2.0), device=backend)
    assert x.kind is pyrite.Int
    assert abs(x.float().mean().into_scalar() - 10.0) < 0.2


def test_int_to_float(backend):
    x = tensor([1, -2, 3], device=backend)
    assert x.float().dtype is backend.float_dtype
    assert x.float().to_list() == [1.0, -2.0, 3.0]


# ---- bool table --------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4)], ids=str)
def test_argwhere_nonzero(backend, shape, layout):
    m = random_array(shape, BOOL, seed=7)
    x = make(backend, m, BOOL, layout)
    assert_equal(x.argwhere(), np.argwhere(m), dtype=backend.int_dtype)
    parts = x.nonzero()
    assert len(parts) == len(shape)
    for got, want in zip(parts, np.nonzero(m), strict=True):
        assert_equal(got, want)


def test_argwhere_of_all_false(backend):
    x = tensor([[False, False]], device=backend)
    assert x.argwhere().shape == (0, 2)
    assert [p.shape for p in x.nonzero()] == [(0,), (0,)]


def test_argwhere_example(backend):
    x = tensor([[True, False], [False, True]], device=backend)
    assert x.argwhere().to_list() == [[0, 0], [1, 1]]
    assert [p.to_list() for p in x.nonzero()] == [[0, 1], [0, 1]]


def test_bool_casts(backend):
    x = tensor([True, False, True], device=backend)
    assert x.int().to_list() == [1, 0, 1]
    assert x.int().dtype is backend.int_dtype
    assert x.float().to_list() == [1.0, 0.0, 1.0]
    assert x.float().dtype is backend.float_dtype
    assert x.bool() is x


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_bool_of_numbers_is_nonzero(backend, dtype):
    need(backend, dtype)
    a = np.array([0, 1, 2, 0]) if dtype is U8 else np.array([0, -1, 2, 0])
    assert_equal(make(backend, a, dtype, "sliced").bool(), a != 0, dtype=BOOL)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 3), (2, 4, 4)], ids=str)
@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 2])
def test_triangle_masks(backend, shape, diagonal):
    rows, cols = shape[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    full = np.broadcast_to
    assert_equal(tril_mask(shape, diagonal, device=backend), full(offset > diagonal, shape),
                 dtype=BOOL)
    assert_equal(triu_mask(shape, diagonal, device=backend), full(offset < diagonal, shape),
                 dtype=BOOL)
    assert_equal(diag_mask(shape, diagonal, device=backend), full(offset != diagonal, shape),
                 dtype=BOOL)


def test_tril_mask_example(backend):
    # true where tril fills with zeros: above the diagonal
    assert tril_mask((3, 3), device=backend).to_list() == [[False, True, True],
                                                           [False, False, True],
                                                           [False, False, False]]
    assert diag_mask((2, 2), device=backend).to_list() == [[False, True], [True, False]]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
@pytest.mark.parametrize("dtype", [F32, I64, F16], ids=str)
def test_tril_triu(backend, dtype, diagonal, layout):
    a = random_array((2, 4, 5), dtype, seed=8, low=1, high=9)
    x = make(backend, a, dtype, layout)
    assert_equal(x.tril(diagonal), np.tril(a, diagonal), dtype=dtype)
    assert_equal(x.triu(diagonal), np.triu(a, diagonal), dtype=dtype)
    # tril is mask_fill(tril_mask, 0)
    assert_equal(x.mask_fill(tril_mask(a.shape, diagonal, device=backend), 0),
                 np.tril(a, diagonal))


# ---- casts between every pair of dtypes --------------------------------------------------------

@pytest.mark.parametrize("target", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("source", ALL_DTYPES, ids=str)
def test_cast(backend, source, target):
    need(backend, source, target)
    a = np.array([[0, 1], [2, 100]]).astype(source.np_name)
    x = make(backend, a, source, "permuted")
    out = x.cast(target)
    assert out.dtype is target
    assert out.kind is target.kind
    assert_equal(out, a.astype(target.np_name), dtype=target)


def test_cast_by_name(backend):
    need(backend, F64, I8)
    x = tensor([1.7, -1.7], device=backend)
    assert x.cast("i32").to_list() == [1, -1]
    assert x.cast("f64").dtype is F64
    assert x.cast(I8).dtype is I8
