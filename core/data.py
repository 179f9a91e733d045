"""TensorData: a tensor's values as little-endian bytes + shape + dtype, independent of any backend.

It is what goes in and out of backends, what records store, and what crosses into the browser.
numpy is used when it is importable (fast paths); every method also works without it.
"""

from __future__ import annotations

import array
import builtins
import math
import struct
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from .dtype import DType, Kind, default_dtype
from .dtype import dtype as to_dtype
from .errors import ConversionOverflow, DTypeError, ShapeError

_ARRAY_CODES = {"d": DType.F64, "f": DType.F32, "q": DType.I64, "l": DType.I64, "i": DType.I32,
                "h": DType.I16, "b": DType.I8, "B": DType.U8}


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _is_ndarray(value: object) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "__array_interface__")


def _flatten(value: object, shape: list[int], depth: int, out: list[Any]) -> None:
    if isinstance(value, (list, tuple)):
        if len(shape) == depth:
            shape.append(len(value))
        elif shape[depth] != len(value):
            raise ShapeError(f"TensorData: ragged nested list: a row of length {len(value)} "
                             f"where {shape[depth]} was expected at depth {depth}")
        for item in value:
            _flatten(item, shape, depth + 1, out)
        return
    if len(shape) != depth:
        raise ShapeError(f"TensorData: ragged nested list: a scalar at depth {depth}, "
                         f"but rows go {len(shape)} deep")
    out.append(value)


def _infer_dtype(values: Sequence[Any]) -> DType:
    if all(isinstance(v, bool) for v in values) and values:
        return DType.BOOL
    if all(isinstance(v, int) for v in values):
        return default_dtype(Kind.INT)
    return default_dtype(Kind.FLOAT)


def _check_range(values: Iterable[Any], target: DType, source: DType) -> None:
    if target.kind is Kind.BOOL:
        return
    lo, hi = target.bounds
    for v in values:
        if isinstance(v, float) and math.isnan(v):
            if target.kind is Kind.INT:
                raise ConversionOverflow(f"convert: NaN cannot become {target}; "
                                         f"replace NaNs first (mask_fill(is_nan(), 0))")
            continue
        if isinstance(v, float) and math.isinf(v) and target.kind is Kind.FLOAT:
            continue
        if not lo <= v <= hi:
            raise ConversionOverflow(f"convert: value {v!r} of {source} does not fit {target} "
                                     f"(range {lo}..{hi}); clamp it first or use a wider dtype")


def _widens(source: DType, target: DType) -> bool:
    """Every value of `source` fits `target` (f16 -> f32, i8 -> i32, i32 -> f32, ...)."""
    if Kind.BOOL in (source.kind, target.kind):
        return False
    if source.is_float and not target.is_float:
        return False
    lo, hi = source.bounds
    target_lo, target_hi = target.bounds
    return target_lo <= lo and hi <= target_hi


def _pack(values: list[Any], target: DType, source: DType, *, stored: bool = False) -> bytes:
    """Values as little-endian bytes of `target`, refusing any that do not fit. `stored`:
    the values were read from `source` data, so a widening conversion needs no check."""
    if not (stored and _widens(source, target)):
        _check_range(values, target, source)
    cast = {Kind.INT: int, Kind.FLOAT: float, Kind.BOOL: bool}[target.kind]
    return struct.pack(f"<{len(values)}{target.fmt}", *(cast(v) for v in values))


class TensorData:
    """Values of a tensor: bytes (little-endian), shape and dtype.

    >>> TensorData([[1.0, 2.0], [3.0, 4.0]]).shape
    (2, 2)
    >>> TensorData([1, 2, 3]).convert("f32").to_list()
    [1.0, 2.0, 3.0]
    """

    __slots__ = ("bytes", "shape", "dtype")

    bytes: builtins.bytes
    shape: tuple[int, ...]
    dtype: DType

    def __init__(self, value: object, shape: Sequence[int] | None = None,
                 dtype: DType | str | None = None) -> None:
        want = to_dtype(dtype) if dtype is not None else None
        if isinstance(value, TensorData):
            data = value.convert(want) if want else value
            self.bytes, self.shape, self.dtype = data.bytes, data.shape, data.dtype
        elif _is_ndarray(value):
            self._from_ndarray(value, want)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            if want is None or shape is None:
                raise DTypeError("TensorData: raw bytes need both shape= and dtype=")
            self.bytes, self.dtype = bytes(value), want
            self.shape = tuple(int(s) for s in shape)
        elif isinstance(value, array.array):
            src = _ARRAY_CODES.get(value.typecode)
            if src is None or value.itemsize != src.itemsize:
                raise DTypeError(f"TensorData: array typecode {value.typecode!r} is not supported")
            arr = value if sys.byteorder == "little" else _swapped(value)
            self.bytes, self.dtype, self.shape = arr.tobytes(), src, (len(value),)
            if want is not None and want is not src:
                converted = self.convert(want)
                self.bytes, self.dtype = converted.bytes, converted.dtype
        else:
            dims: list[int] = []
            flat: list[Any] = []
            _flatten(value, dims, 0, flat)
            src = _infer_dtype(flat)
            target = want or src
            if target.kind is Kind.INT and any(isinstance(v, float) for v in flat):
                raise DTypeError(f"TensorData: float values for integer dtype {target}; "
                                 f"round them first or use a float dtype")
            self.bytes = _pack(flat, target, src)
            self.dtype, self.shape = target, tuple(dims)
        if shape is not None and not isinstance(value, (bytes, bytearray, memoryview)):
            shape = tuple(int(s) for s in shape)
            if math.prod(shape) != self.num_elements:
                raise ShapeError(f"TensorData: {self.num_elements} values cannot take shape "
                                 f"{shape}")
            self.shape = shape
        expected = self.num_elements * self.dtype.itemsize
        if len(self.bytes) != expected:
            raise ShapeError(f"TensorData: {len(self.bytes)} bytes, but shape {self.shape} of "
                             f"{self.dtype} needs {expected}")

    def _from_ndarray(self, arr: Any, want: DType | None) -> None:
        src = to_dtype(arr.dtype)
        data = TensorData.__new__(TensorData)
        np = _numpy()
        a = np.asarray(arr, dtype=arr.dtype.newbyteorder("<"))
        # tobytes() is C order from any layout; ascontiguousarray would turn 0-d into 1-d
        data.bytes, data.shape, data.dtype = a.tobytes(), tuple(arr.shape), src
        if want is not None and want is not src:
            data = data.convert(want)
        self.bytes, self.shape, self.dtype = data.bytes, data.shape, data.dtype

    @classmethod
    def raw(cls, buf: builtins.bytes, shape: tuple[int, ...], dtype: DType) -> TensorData:
        """Wrap bytes without copying or checking (for backends)."""
        data = cls.__new__(cls)
        data.bytes, data.shape, data.dtype = buf, shape, dtype
        return data

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def kind(self) -> Kind:
        return self.dtype.kind

    def values(self) -> list[Any]:
        """The values as a flat Python list."""
        return list(struct.unpack(f"<{self.num_elements}{self.dtype.fmt}", self.bytes))

    def to_list(self) -> Any:
        """Nested Python lists (a scalar for shape ())."""
        flat = self.values()
        if not self.shape:
            return flat[0]
        for size in reversed(self.shape[1:]):
            flat = [flat[i:i + size] for i in range(0, len(flat), size)]
        return flat

    def to_numpy(self) -> Any:
        """A numpy array (a copy); needs numpy."""
        np = _numpy()
        if np is None:
            raise ModuleNotFoundError("TensorData.to_numpy needs numpy: pip install numpy")
        return np.frombuffer(self.bytes, dtype=np.dtype(self.dtype.np_name).newbyteorder("<")) \
            .astype(self.dtype.np_name).reshape(self.shape)

    def convert(self, dtype: DType | str) -> TensorData:
        """The same values as another dtype; raises ConversionOverflow when a value does not fit.

        Float to int truncates toward zero, as numpy's astype and Rust's `as` do.
        """
        target = to_dtype(dtype)
        if target is self.dtype:
            return self
        np = _numpy()
        if np is not None:
            arr = self.to_numpy()
            if target.kind is not Kind.BOOL and arr.size:
                if self.dtype.is_float and target.kind is Kind.INT and np.isnan(arr).any():
                    _check_range([float("nan")], target, self.dtype)
                finite = arr[np.isfinite(arr)] if self.dtype.is_float and target.is_float else arr
                if finite.size:
                    _check_range([finite.min().item(), finite.max().item()], target, self.dtype)
            return TensorData(arr.astype(target.np_name))
        return TensorData.raw(_pack(self.values(), target, self.dtype, stored=True), self.shape,
                              target)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorData):
            return NotImplemented
        return (self.shape, self.dtype, self.bytes) == (other.shape, other.dtype, other.bytes)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking value type: compare, don't hash

    def __repr__(self) -> str:
        return f"TensorData({self.to_list()!r}, shape={self.shape}, dtype={self.dtype})"


def _swapped(arr: array.array[Any]) -> array.array[Any]:  # pragma: no cover - big-endian hosts only
    copy = array.array(arr.typecode, arr)
    copy.byteswap()
    return copy
