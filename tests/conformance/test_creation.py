"""Creating tensors: from data (lists, numpy, array.array, TensorData), constants, ranges,
identity, random distributions (seeded and reproducible), `*_like`, and moving between devices."""

from __future__ import annotations

import array

import numpy as np
import pytest

import pyrite
from pyrite import (
    Bernoulli,
    Normal,
    Tensor,
    TensorData,
    Uniform,
    arange,
    arange_step,
    empty,
    eye,
    from_data,
    from_floats,
    from_ints,
    full,
    ones,
    random,
    tensor,
    zeros,
)

from .helpers import (
    ALL_DTYPES,
    BOOL,
    F32,
    F64,
    FLOATS,
    I8,
    I32,
    I64,
    INTS,
    U8,
    assert_close,
    assert_equal,
    make,
    need,
)

# ---- from data ---------------------------------------------------------------------------------

def test_dtype_from_python_values(backend):
    assert tensor([1.0, 2.0], device=backend).dtype is backend.float_dtype
    assert tensor([1, 2], device=backend).dtype is backend.int_dtype
    assert tensor([True, False], device=backend).dtype is BOOL
    assert tensor([[1, 2.5]], device=backend).dtype is backend.float_dtype  # mixed: float
    assert tensor([1.0], device=backend).kind is pyrite.Float
    assert tensor([1], device=backend).kind is pyrite.Int
    assert tensor([True], device=backend).kind is pyrite.Bool


def test_nested_lists(backend):
    values = [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]
    x = tensor(values, device=backend)
    assert x.shape == (2, 2, 2)
    assert x.to_list() == values
    assert_equal(x, np.array(values))


def test_a_python_number_is_one_element(backend):
    assert tensor(2.5, device=backend).to_list() == [2.5]
    assert tensor(3, device=backend).shape == (1,)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_from_numpy_keeps_dtype(backend, dtype):
    need(backend, dtype)
    a = np.arange(6).reshape(2, 3).astype(dtype.np_name)
    x = tensor(a, device=backend)
    assert x.dtype is dtype
    assert_equal(x, a, dtype=dtype)
    assert x.numpy().dtype == a.dtype
    assert_equal(tensor(a.T, device=backend), a.T)  # a non-contiguous numpy array


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_explicit_dtype(backend, dtype):
    need(backend, dtype)
    values = [[0, 1], [1, 0]] if dtype is BOOL else [[1, 2], [3, 4]]
    x = tensor(values, device=backend, dtype=dtype)
    assert x.dtype is dtype
    assert x.kind is dtype.kind
    assert_equal(x, np.array(values).astype(dtype.np_name))
    assert tensor(values, device=backend, dtype=str(dtype)).dtype is dtype  # by name


@pytest.mark.parametrize("code, dtype", [("d", F64), ("f", F32), ("q", I64), ("i", I32),
                                         ("b", I8), ("B", U8)])
def test_from_array_array_keeps_dtype(backend, code, dtype):
    need(backend, dtype)
    x = tensor(array.array(code, [1, 2, 3]), device=backend)
    assert x.dtype is dtype
    assert x.to_list() == [1, 2, 3]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_from_tensor_data(backend, dtype):
    need(backend, dtype)
    data = TensorData([1, 0, 1, 1], shape=(2, 2), dtype=dtype)
    x = from_data(data, device=backend)
    assert x.dtype is dtype
    assert x.to_data() == data
    assert x.into_data() == data


def test_from_floats_and_ints(backend):
    x = from_floats([1, 2], device=backend)
    assert x.dtype is backend.float_dtype and x.to_list() == [1.0, 2.0]
    y = from_ints([[1, 2]], device=backend)
    assert y.dtype is backend.int_dtype and y.to_list() == [[1, 2]]


def test_tensor_constructor(backend):
    x = Tensor([[1, 2]], device=backend, dtype=F32)
    assert x.dtype is F32 and x.to_list() == [[1.0, 2.0]]


def test_primitive_round_trip(backend):
    x = tensor([1, 2, 3], device=backend)
    y = Tensor.from_primitive(x.into_primitive(), backend, pyrite.Int)
    assert y.to_list() == [1, 2, 3]
    assert y.device == backend


def test_clone_shares_values(backend):
    x = tensor([1.0, 2.0], device=backend)
    y = x.clone()
    assert y.to_list() == [1.0, 2.0]
    assert y is not x


# ---- constants ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_zeros_ones_full_empty(backend, dtype):
    need(backend, dtype)
    assert_equal(zeros((2, 3), device=backend, dtype=dtype), np.zeros((2, 3)), dtype=dtype)
    assert_equal(ones((2, 3), device=backend, dtype=dtype), np.ones((2, 3)), dtype=dtype)
    assert_equal(full((3,), 7, device=backend, dtype=dtype), [7, 7, 7], dtype=dtype)
    assert_equal(empty((2, 2), device=backend, dtype=dtype), np.zeros((2, 2)), dtype=dtype)


def test_full_kind_follows_the_value(backend):
    assert full((2,), 1.5, device=backend).dtype is backend.float_dtype
    assert full((2,), 1, device=backend).dtype is backend.int_dtype
    assert full((2,), True, device=backend).to_list() == [True, True]
    assert zeros(3, device=backend).dtype is backend.float_dtype
    assert zeros((), device=backend).shape == ()
    assert zeros((0, 4), device=backend).shape == (0, 4)


@pytest.mark.parametrize("dtype", [F32, F64, I64, I32], ids=str)
def test_like_constructors(backend, dtype):
    need(backend, dtype)
    x = make(backend, [[1, 2, 3]], dtype, "sliced")
    assert_equal(x.zeros_like(), [[0, 0, 0]], dtype=dtype)
    assert_equal(x.ones_like(), [[1, 1, 1]], dtype=dtype)
    assert_equal(x.full_like(5), [[5, 5, 5]], dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS + [I32], ids=str)
def test_eye(backend, dtype):
    need(backend, dtype)
    assert_equal(eye(4, device=backend, dtype=dtype), np.eye(4), dtype=dtype)
    assert_equal(eye(1, device=backend), [[1.0]])


# ---- ranges ------------------------------------------------------------------------------------

@pytest.mark.parametrize("start, end, step", [(0, 5, 1), (5, 10, 1), (5, 10, 2), (-3, 4, 3),
                                              (10, 0, -3), (0, 0, 1), (3, 0, 1)])
def test_arange_step(backend, start, end, step):
    x = arange_step(start, end, step, device=backend)
    assert_equal(x, np.arange(start, end, step), dtype=backend.int_dtype)


def test_arange(backend):
    assert arange(5, device=backend).to_list() == [0, 1, 2, 3, 4]
    assert arange(5, 10, device=backend).to_list() == [5, 6, 7, 8, 9]
    assert arange(0, 3, device=backend, dtype=I32).dtype is I32


# ---- random ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_random_is_reproducible(backend, dtype):
    need(backend, dtype)
    pyrite.seed(42, device=backend)
    a = random((3, 4), Normal(0.0, 1.0), device=backend, dtype=dtype).numpy()
    b = random((3, 4), Normal(0.0, 1.0), device=backend, dtype=dtype).numpy()
    pyrite.seed(42, device=backend)
    c = random((3, 4), Normal(0.0, 1.0), device=backend, dtype=dtype).numpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)
    assert a.dtype == np.dtype(dtype.np_name)


def test_uniform_statistics(backend):
    pyrite.seed(1, device=backend)
    x = random((20000,), Uniform(2.0, 5.0), device=backend).numpy().astype(np.float64)
    assert x.min() >= 2.0 and x.max() < 5.0
    assert abs(x.mean() - 3.5) < 0.05
    assert abs(x.std() - 3.0 / 12 ** 0.5) < 0.05
    default = random((1000,), device=backend).numpy()
    assert default.min() >= 0.0 and default.max() < 1.0


def test_normal_statistics(backend):
    pyrite.seed(2, device=backend)
    x = random((20000,), Normal(1.0, 2.0), device=backend).numpy().astype(np.float64)
    assert abs(x.mean() - 1.0) < 0.06
    assert abs(x.std() - 2.0) < 0.06


def test_bernoulli_statistics(backend):
    pyrite.seed(3, device=backend)
    x = random((20000,), Bernoulli(0.3), device=backend).numpy()
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert abs(x.mean() - 0.3) < 0.02


def test_random_like(backend):
    need(backend, F64)
    x = zeros((2, 3), device=backend, dtype=F64)
    y = x.random_like(Uniform(0.0, 1.0))
    assert y.shape == (2, 3) and y.dtype is F64
    assert 0.0 <= y.min().into_scalar() <= y.max().into_scalar() < 1.0


# ---- devices -----------------------------------------------------------------------------------

def test_to_device_round_trip(backend):
    x = tensor([[1.5, 2.5]], device=backend)
    moved = x.to_device("numpy")
    assert moved.device.name == "numpy"
    assert moved.to_list() == [[1.5, 2.5]]
    back = moved.to_device(backend)
    assert back.device == backend
    assert_close(back, [[1.5, 2.5]])
    assert x.to_device(backend) is x
    assert x.device == backend


def test_to_device_autodiff_and_back(backend):
    ad = pyrite.device(f"autodiff<{backend.name}>")
    x = tensor([1, 2], device=backend)
    y = x.to_device(ad)
    assert y.device.name == f"autodiff<{backend.name}>"
    assert y.to_list() == [1, 2]
    assert y.to_device(backend).to_list() == [1, 2]
