"""The backend's data boundary: dtype rules, bool storage, async readback, registration."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.errors import ConversionOverflow


def test_dtypes_convert_at_from_data(gpu, down):
    assert gpu.float_dtype is DType.F32 and gpu.int_dtype is DType.I32
    x = gpu.from_data(TensorData(np.array([1.5, -2.0], np.float64)))
    assert gpu.dtype(x) is DType.F32 and down(x).tolist() == [1.5, -2.0]
    i = gpu.from_data(TensorData(np.array([3, -4], np.int64)))
    assert gpu.dtype(i) is DType.I32 and gpu.to_data(i).dtype is DType.I32
    u = gpu.from_data(TensorData(np.array([200, 7], np.uint8)))
    assert down(u).tolist() == [200, 7]
    with pytest.raises(ConversionOverflow):
        gpu.from_data(TensorData(np.array([2**40], np.int64)))


def test_bool_round_trip(gpu, up, down):
    m = np.array([[True, False, True], [False, True, True]])
    got = down(up(m))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, m)
    np.testing.assert_array_equal(down(gpu.slice(up(m), [(0, 2, 1), (1, 3, 1)])), m[:, 1:])


def test_f16_where_the_adapter_has_it(gpu, down):
    from pyrite.backend import get
    if not gpu.supports(DType.F16):
        pytest.skip("adapter lacks shader-f16")
    x = gpu.from_data(TensorData(np.array([0.5, 1.0, 2.0, 3.0, 5.0], np.float16)))
    y = gpu.binary(get("mul"), gpu.slice(x, [(1, 5, 2)]), 2.0)  # odd offset: read via a copy
    assert gpu.dtype(y) is DType.F16
    np.testing.assert_array_equal(down(y), np.array([2.0, 6.0], np.float16))
    np.testing.assert_array_equal(down(gpu.cast(x, DType.F32)), [0.5, 1, 2, 3, 5])


def test_to_data_async(gpu, up):
    x = gpu.permute(up(np.arange(6, dtype=np.int32).reshape(2, 3)), (1, 0))
    data = asyncio.run(gpu.to_data_async(x))
    np.testing.assert_array_equal(data.to_numpy(), np.arange(6).reshape(2, 3).T)


def test_registered_as_a_device(gpu):
    import pyrite.webgpu  # noqa: F401
    assert "webgpu" in pyrite.backend_names()
    assert pyrite.device("webgpu").name == "webgpu"
