"""TensorData: little-endian bytes + shape + dtype, built from nested lists, `array.array`, raw
bytes or numpy arrays, for every dtype; read back as lists and numpy; `convert` between every
pair of dtypes, with and without numpy (the browser may have none), raising ConversionOverflow
when a value does not fit the target."""

from __future__ import annotations

import array
import math

import numpy as np
import pytest

from pyrite import ConversionOverflow, DTypeError, ShapeError, TensorData, tensor
from pyrite import data as data_module

from .helpers import ALL_DTYPES, BOOL, F16, F32, F64, I8, I16, I32, I64, U8, need

VALUES = {BOOL: [[True, False, True], [False, False, True]]}
DEFAULT = [[0, 1, 2], [3, 100, 7]]


def _values(dtype):
    return VALUES.get(dtype, DEFAULT)


@pytest.fixture(params=["numpy", "pure-python"])
def path(request, monkeypatch):
    """Run a case with numpy's fast paths and without numpy (as in a bare Pyodide)."""
    if request.param == "pure-python":
        monkeypatch.setattr(data_module, "_numpy", lambda: None)
    return request.param


def test_example():
    data = TensorData([[1.0, 2.0], [3.0, 4.0]])
    assert data.shape == (2, 2)
    assert data.dtype is F32
    assert data.to_list() == [[1.0, 2.0], [3.0, 4.0]]
    assert data.convert("i32").to_list() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_from_lists(dtype):
    values = _values(dtype)
    data = TensorData(values, dtype=dtype)
    want = np.array(values).astype(dtype.np_name)
    assert data.dtype is dtype
    assert data.shape == (2, 3)
    assert data.kind is dtype.kind
    assert data.num_elements == 6
    assert data.bytes == want.astype(want.dtype.newbyteorder("<")).tobytes()
    assert data.to_list() == want.tolist()
    assert data.values() == want.reshape(-1).tolist()
    np.testing.assert_array_equal(data.to_numpy(), want)
    assert data.to_numpy().dtype == want.dtype


def test_dtype_inferred_from_lists():
    assert TensorData([1, 2]).dtype is I64
    assert TensorData([1.0, 2]).dtype is F32
    assert TensorData([True, False]).dtype is BOOL
    assert TensorData([[]]).shape == (1, 0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_from_bytes(dtype):
    want = np.array(_values(dtype)).astype(dtype.np_name)
    raw = want.astype(want.dtype.newbyteorder("<")).tobytes()
    for buf in (raw, bytearray(raw), memoryview(raw)):
        data = TensorData(buf, shape=(2, 3), dtype=dtype)
        assert data.to_list() == want.tolist()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_from_numpy(dtype):
    want = np.array(_values(dtype)).astype(dtype.np_name)
    for arr in (want, want.T, want[:, ::2], want.astype(want.dtype.newbyteorder(">"))):
        data = TensorData(arr)
        assert data.dtype is dtype
        assert data.shape == arr.shape
        assert data.to_list() == arr.tolist()
        np.testing.assert_array_equal(data.to_numpy(), arr)


def test_from_numpy_rank_zero():
    data = TensorData(np.array(2.5))
    assert data.shape == ()
    assert data.to_list() == 2.5


@pytest.mark.parametrize("code, dtype", [("d", F64), ("f", F32), ("q", I64), ("i", I32),
                                         ("h", I16), ("b", I8), ("B", U8)])
def test_from_array_array(code, dtype):
    data = TensorData(array.array(code, [1, 2, 3, 4]), shape=(2, 2))
    assert data.dtype is dtype
    assert data.shape == (2, 2)
    assert data.to_list() == [[1, 2], [3, 4]]
    assert TensorData(array.array(code, [1, 2]), dtype="f64").to_list() == [1.0, 2.0]


@pytest.mark.parametrize("target", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("source", ALL_DTYPES, ids=str)
def test_convert(source, target, path):
    want = np.array(_values(source)).astype(source.np_name)
    out = TensorData(_values(source), dtype=source).convert(target)
    assert out.dtype is target
    assert out.shape == want.shape
    assert out.to_list() == want.astype(target.np_name).tolist()


@pytest.mark.parametrize("target", [I64, I32, I16, I8, U8], ids=str)
def test_float_to_int_truncates_toward_zero(target, path):
    values = [1.9, -1.9, 0.5, -0.5, 100.0] if target is not U8 else [1.9, 0.5, 100.0]
    out = TensorData(values, dtype=F64).convert(target)
    assert out.to_list() == [math.trunc(v) for v in values]


def test_f16_rounds_to_nearest_even(path):
    out = TensorData([0.1, 2049.0, 2051.0], dtype=F64).convert(F16)
    assert out.to_list() == np.array([0.1, 2049.0, 2051.0]).astype(np.float16).tolist()


def test_nonfinite_floats_convert_between_floats(path):
    out = TensorData([math.inf, -math.inf, math.nan], dtype=F64).convert(F16)
    got = out.to_list()
    assert got[:2] == [math.inf, -math.inf] and math.isnan(got[2])


@pytest.mark.parametrize("values, source, target", [
    ([300], I64, U8), ([-1], I64, U8), ([128], I64, I8), ([-129], I32, I8),
    ([40000], I32, I16), ([2 ** 31], I64, I32), ([1e10], F64, I32), ([-0.5e3], F32, U8),
    ([math.nan], F32, I64), ([math.inf], F64, I32), ([1e300], F64, F32), ([7e4], F32, F16),
], ids=str)
def test_convert_overflow(values, source, target, path):
    data = TensorData(values, dtype=source)
    with pytest.raises(ConversionOverflow, match=f"convert: .* {target}") as err:
        data.convert(target)
    assert isinstance(err.value, OverflowError)  # also the matching builtin


@pytest.mark.parametrize("values, dtype", [([256], U8), ([-1], U8), ([2 ** 63], I64),
                                           ([1e39], F32)], ids=str)
def test_overflow_from_lists(values, dtype):
    with pytest.raises(ConversionOverflow, match=str(dtype)):
        TensorData(values, dtype=dtype)


def test_overflow_when_making_a_tensor(backend):
    with pytest.raises(ConversionOverflow, match="does not fit u8"):
        tensor([1, 2, 300], device=backend, dtype=U8)
    with pytest.raises(ConversionOverflow, match="does not fit i8"):
        tensor(np.array([1000], np.int64), device=backend, dtype=I8)


def test_bad_inputs():
    with pytest.raises(ShapeError, match="ragged"):
        TensorData([[1, 2], [3]])
    with pytest.raises(DTypeError, match="float values for integer dtype i32"):
        TensorData([1.5], dtype=I32)
    with pytest.raises(DTypeError, match="raw bytes need both shape= and dtype="):
        TensorData(b"\x00\x00")
    with pytest.raises(ShapeError, match="3 bytes, but shape"):
        TensorData(b"\x00\x00\x00", shape=(2,), dtype=I16)
    with pytest.raises(ShapeError, match="cannot take shape"):
        TensorData([1, 2, 3], shape=(2, 2))
    with pytest.raises(DTypeError, match="unknown dtype"):
        TensorData([1], dtype="f8")


def test_equality():
    assert TensorData([1, 2]) == TensorData([1, 2])
    assert TensorData([1, 2]) != TensorData([1, 3])
    assert TensorData([1, 2], dtype=I32) != TensorData([1, 2], dtype=I64)
    assert TensorData([1, 2, 3, 4], shape=(2, 2)) != TensorData([1, 2, 3, 4])


def test_repr():
    assert repr(TensorData([[1, 2]], dtype=I8)) == "TensorData([[1, 2]], shape=(1, 2), dtype=i8)"


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_tensor_round_trip(backend, dtype):
    need(backend, dtype)
    data = TensorData(_values(dtype), dtype=dtype)
    t = tensor(data, device=backend)
    assert t.to_data() == data
    assert t.to_list() == data.to_list()
    np.testing.assert_array_equal(t.numpy(), data.to_numpy())
    np.testing.assert_array_equal(np.asarray(t), data.to_numpy())
