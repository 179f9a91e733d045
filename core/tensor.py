"""The Tensor front end: one API over every backend, with Burn's kinds and op tables.

A Tensor holds a backend primitive, the backend (its device) and its kind (Float, Int, Bool).
Validation happens here, once: shapes, dims, kinds and devices. Backends receive valid input.
The op families live in mixins (`ops_basic`, `ops_numeric`, `ops_kind`) to keep files small.

>>> from pyrite import tensor
>>> (tensor([[1.0, 2.0]]) + tensor([[10.0], [20.0]])).to_list()
[[11.0, 12.0], [21.0, 22.0]]
"""

from __future__ import annotations

import array
import math
from collections.abc import Iterator, Sequence
from typing import Any

from . import checks, display
from .backend import binary as B
from .backend import unary as U
from .backend.base import Backend, Prim
from .backend.registry import Op
from .capture.traced import keep_float, keep_int
from .data import TensorData
from .device import device as resolve_device
from .dtype import DType, Kind, promote
from .dtype import dtype as to_dtype
from .errors import ConversionOverflow, DeviceError, DTypeError, KindError, ShapeError
from .ops_basic import BasicOps
from .ops_kind import BoolOps, FloatOps, GradOps, IntOps
from .ops_numeric import NumericOps
from .shape import broadcast_shapes

Scalar = int | float | bool
_SCALARS = (int, float, bool)


class Tensor(BasicOps, NumericOps, FloatOps, IntOps, BoolOps, GradOps):
    """An n-dimensional tensor on a device. Build one with `pyrite.tensor(...)`."""

    __slots__ = ("_prim", "_backend", "_kind", "__weakref__")

    _prim: Prim
    _backend: Backend
    _kind: Kind

    def __init__(self, data: Any, *, device: Backend | str | None = None,
                 dtype: DType | str | None = None) -> None:
        made = from_data(data, device=device, dtype=dtype)
        self._prim, self._backend, self._kind = made._prim, made._backend, made._kind

    # ---- construction helpers (internal) ---------------------------------------------------
    @staticmethod
    def _wrap(prim: Prim, backend: Backend, kind: Kind) -> Tensor:
        t = object.__new__(Tensor)
        t._prim = prim
        t._backend = backend
        t._kind = kind
        return t

    def _new(self, prim: Prim, kind: Kind | None = None) -> Tensor:
        t = object.__new__(Tensor)
        t._prim = prim
        t._backend = self._backend
        t._kind = self._kind if kind is None else kind
        return t

    @staticmethod
    def from_primitive(prim: Prim, device: Backend | str, kind: Kind = Kind.FLOAT) -> Tensor:
        """Wrap a backend primitive (Burn's `from_primitive`)."""
        return Tensor._wrap(prim, resolve_device(device), kind)

    def into_primitive(self) -> Prim:
        """The backend primitive inside (Burn's `into_primitive`)."""
        return self._prim

    # ---- metadata ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._backend.shape(self._prim))

    def dims(self) -> list[int]:
        """The sizes as a list (Burn's `dims`)."""
        return list(self._backend.shape(self._prim))

    @property
    def ndim(self) -> int:
        return len(self._backend.shape(self._prim))

    rank = ndim

    def numel(self) -> int:
        return math.prod(self._backend.shape(self._prim))

    @property
    def dtype(self) -> DType:
        return self._backend.dtype(self._prim)

    @property
    def kind(self) -> Kind:
        return self._kind

    @property
    def device(self) -> Backend:
        return self._backend

    def to_device(self, device: Backend | str) -> Tensor:
        """The same values on another device (a copy through TensorData when devices differ)."""
        target = resolve_device(device)
        if target == self._backend:
            return self
        if checks.PENDING:
            checks.resolve()
        data = self._backend.to_data(self._prim)
        want = data.dtype if target.supports(data.dtype) else target.default_dtype(self._kind)
        return Tensor._wrap(target.from_data(data.convert(want)), target, self._kind)

    # ---- data out ----------------------------------------------------------------------------
    def to_data(self) -> TensorData:
        if checks.PENDING:
            checks.resolve()
        return self._backend.to_data(self._prim)

    into_data = to_data

    async def to_data_async(self) -> TensorData:
        """`to_data` without blocking: awaits the device's readback (use it in a page)."""
        if checks.PENDING:
            checks.resolve()
        return await self._backend.to_data_async(self._prim)

    def to_list(self) -> Any:
        return self.to_data().to_list()

    tolist = to_list

    def numpy(self) -> Any:
        """A numpy array with the tensor's values (a copy)."""
        return self.to_data().to_numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def into_scalar(self) -> Scalar:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ShapeError(f"into_scalar: needs exactly one element, the tensor has shape "
                             f"{self.shape}; reduce it first (sum(), mean(), ...)")
        return self.to_data().values()[0]  # type: ignore[no-any-return]

    item = into_scalar

    def __float__(self) -> float:
        return float(self.into_scalar())

    def __int__(self) -> int:
        return int(self.into_scalar())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ShapeError(f"bool(tensor): the truth value of a tensor of shape {self.shape} "
                             f"is ambiguous; use .any() or .all()")
        return bool(self.into_scalar())

    # ---- validation helpers ------------------------------------------------------------------
    def _need(self, op: str, kinds: frozenset[Kind] | tuple[Kind, ...]) -> None:
        if self._kind not in kinds:
            allowed = "/".join(sorted(k.value for k in kinds))
            fix = {Kind.INT: ".float()", Kind.BOOL: ".int() or .float()",
                   Kind.FLOAT: ".int() or .bool()"}[self._kind]
            raise KindError(f"{op}: not defined for {self._kind.value} tensors "
                            f"(dtype {self.dtype}); it takes {allowed} tensors. Convert with {fix}")

    def _same_device(self, op: str, other: Tensor) -> None:
        if other._backend != self._backend:
            raise DeviceError(f"{op}: tensors are on different devices: lhs on "
                              f"{self._backend.name}, rhs on {other._backend.name}; move one "
                              f"with .to_device(...)")

    def _scalar_for(self, op: str, value: Any) -> Scalar:
        """A Python scalar fitting this tensor's kind (int scalars widen to float)."""
        if self._kind is Kind.FLOAT:
            if isinstance(value, _SCALARS) or hasattr(value, "__float__"):
                return keep_float(value)
        elif self._kind is Kind.INT:
            if isinstance(value, int):  # bool included
                number = keep_int(value) if not isinstance(value, bool) else int(value)
            elif hasattr(value, "__index__"):
                number = int(value.__index__())
            elif isinstance(value, float) and value.is_integer():
                number = int(value)
            else:
                raise KindError(f"{op}: float scalar {value!r} with an Int tensor; use "
                                f".float() on the tensor or an integer scalar")
            lo, hi = self.dtype.bounds
            if not lo <= number <= hi:
                raise ConversionOverflow(f"{op}: scalar {value!r} does not fit the tensor's "
                                         f"dtype {self.dtype} (range {lo}..{hi}); cast the "
                                         f"tensor to a wider dtype first")
            return number
        elif isinstance(value, (bool, int)):
            return bool(value)
        raise KindError(f"{op}: cannot combine a {self._kind.value} tensor with {value!r}")

    def _align(self, op: str, other: Tensor) -> tuple[Prim, Prim]:
        """Both operands as primitives of equal rank and one dtype, ready for a binary op."""
        self._same_device(op, other)
        b = self._backend
        pa, pb = self._prim, other._prim
        if other._kind is not self._kind:
            raise KindError(f"{op}: {self._kind.value} tensor with a {other._kind.value} tensor; "
                            f"convert one with .float(), .int() or .bool()")
        da, db = b.dtype(pa), b.dtype(pb)
        if da is not db:
            wide = promote(da, db)
            pa = pa if da is wide else b.cast(pa, wide)
            pb = pb if db is wide else b.cast(pb, wide)
        sa, sb = b.shape(pa), b.shape(pb)
        if sa != sb:
            broadcast_shapes(op, tuple(sa), tuple(sb))
            if len(sa) < len(sb):
                pa = b.reshape(pa, (1,) * (len(sb) - len(sa)) + tuple(sa))
            elif len(sb) < len(sa):
                pb = b.reshape(pb, (1,) * (len(sa) - len(sb)) + tuple(sb))
        return pa, pb

    def _binary(self, op: Op, other: Tensor | Scalar) -> Tensor:
        kind = self._kind
        if kind not in op.kinds:
            self._need(op.name, op.kinds)
        b = self._backend
        if other.__class__ is Tensor:
            pa, pb = self._prim, other._prim
            if (other._backend is not b or other._kind is not kind
                    or not b.same_shape_and_dtype(pa, pb)):
                pa, pb = self._align(op.name, other)
            t = object.__new__(Tensor)
            t._prim = b.binary(op, pa, pb)
            t._backend = b
            t._kind = op.out_kind or kind
            return t
        if isinstance(other, Tensor):  # a QuantizedTensor: its float values (quantization docs)
            return self._binary(op, other.dequantize())
        cls = other.__class__
        if cls is float and kind is Kind.FLOAT:
            scalar: Scalar = other
        elif isinstance(other, Sequence) or hasattr(other, "__array_interface__"):
            other = Tensor(other, device=b, dtype=self.dtype)
            return self._binary(op, other)
        else:
            scalar = self._scalar_for(op.name, other)
        t = object.__new__(Tensor)
        t._prim = b.binary(op, self._prim, scalar)
        t._backend = b
        t._kind = op.out_kind or kind
        return t

    def _rbinary(self, op: Op, scalar: Scalar) -> Tensor:
        """`scalar op self`, as a tensor of one element broadcast against self."""
        value = self._scalar_for(op.name, scalar)
        lhs = self._backend.full((1,) * self.ndim, value, self.dtype)
        return self._new(lhs)._binary(op, self)

    def _unary(self, op: Op) -> Tensor:
        if self._kind not in op.kinds:
            self._need(op.name, op.kinds)
        return self._new(self._backend.unary(op, self._prim), op.out_kind)

    # ---- Python operators --------------------------------------------------------------------
    def __add__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.ADD, other)

    def __radd__(self, other: Scalar) -> Tensor:
        return self._binary(B.ADD, other)

    def __sub__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.SUB, other)

    def __rsub__(self, other: Scalar) -> Tensor:
        return self._rbinary(B.SUB, other)

    def __mul__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.MUL, other)

    def __rmul__(self, other: Scalar) -> Tensor:
        return self._binary(B.MUL, other)

    def __truediv__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.DIV, other)

    def __rtruediv__(self, other: Scalar) -> Tensor:
        return self._rbinary(B.DIV, other)

    def __floordiv__(self, other: Tensor | Scalar) -> Tensor:
        if self._kind is Kind.INT:
            return self._binary(B.DIV, other)
        return self._binary(B.DIV, other).floor()

    def __rfloordiv__(self, other: Scalar) -> Tensor:
        if self._kind is Kind.INT:
            return self._rbinary(B.DIV, other)
        return self._rbinary(B.DIV, other).floor()

    def __mod__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.REM, other)

    def __rmod__(self, other: Scalar) -> Tensor:
        return self._rbinary(B.REM, other)

    def __pow__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.POW, other)

    def __rpow__(self, other: Scalar) -> Tensor:
        return self._rbinary(B.POW, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        return self.matmul(other)

    def __neg__(self) -> Tensor:
        return self._unary(U.NEG)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self._unary(U.ABS)

    def __invert__(self) -> Tensor:
        return self.bool_not()

    def __and__(self, other: Tensor | bool) -> Tensor:
        return self._binary(B.AND, other)

    def __or__(self, other: Tensor | bool) -> Tensor:
        return self._binary(B.OR, other)

    def __xor__(self, other: Tensor | bool) -> Tensor:
        return self._binary(B.XOR, other)

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._binary(B.EQUAL, other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._binary(B.NOT_EQUAL, other)  # type: ignore[arg-type]

    def __lt__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.LOWER, other)

    def __le__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.LOWER_EQUAL, other)

    def __gt__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.GREATER, other)

    def __ge__(self, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.GREATER_EQUAL, other)

    __hash__ = object.__hash__  # tensors are identity-hashed (usable as dict keys)

    # ---- containers --------------------------------------------------------------------------
    def __len__(self) -> int:
        shape = self._backend.shape(self._prim)
        if not shape:
            raise ShapeError("len(): a tensor of rank 0 has no length")
        return int(shape[0])

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key: Any) -> Tensor:
        return self.index(key)

    def __setitem__(self, key: Any, value: Tensor | Scalar) -> None:
        updated = self.index_assign(key, value)
        self._prim = updated._prim

    # ---- display -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return display.render(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return display.render(self, spec)


def _supported(backend: Backend, dtype: DType, op: str) -> DType:
    """An explicitly requested dtype, refused with a clear error where the device lacks it."""
    if not backend.supports(dtype):
        raise DTypeError(f"{op}: {backend.name} does not support dtype {dtype}; use "
                         f"{backend.default_dtype(dtype.kind)} there, or a device that has "
                         f"{dtype} (numpy supports every dtype)")
    return dtype


def from_data(data: Any, *, device: Backend | str | None = None,
              dtype: DType | str | None = None, kind: Kind | None = None) -> Tensor:
    """A tensor from nested lists, numbers, TensorData, `array.array`, bytes or numpy arrays.

    Without `dtype`, floats become the device's float dtype (f32), ints its int dtype,
    bools Bool; numpy arrays, `array.array`s and TensorData keep their dtype when the device
    supports it.

    >>> from_data([[1, 2], [3, 4]]).kind
    Int
    """
    backend = resolve_device(device)
    if isinstance(data, Tensor):
        moved = data.to_device(backend)
        return moved.cast(to_dtype(dtype)) if dtype is not None else moved
    keeps = isinstance(data, (TensorData, array.array)) or hasattr(data, "__array_interface__")
    if isinstance(data, _SCALARS):
        data = [data]
    td = data if isinstance(data, TensorData) else TensorData(data, dtype=dtype)
    if dtype is not None:
        target = _supported(backend, to_dtype(dtype), "tensor")
    elif kind is not None and kind is not td.dtype.kind:
        target = backend.default_dtype(kind)
    elif keeps and backend.supports(td.dtype):
        target = td.dtype
    else:
        target = backend.default_dtype(td.dtype.kind)
    if target is not td.dtype:
        return Tensor._wrap(backend.from_data_as(td, target), backend, target.kind)
    return Tensor._wrap(backend.from_data(td), backend, target.kind)
