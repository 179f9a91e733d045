"""Precision settings: the dtypes a record's tensors take in a file, whatever the model trains in.

Saving converts every float tensor to the setting's float dtype and every int tensor to its int
dtype; bool tensors stay bool, a quantized param's tensors keep their dtypes and non-tensor
leaves are untouched. Loading returns the tensors in the dtypes the file holds;
`convert_record` brings them back to the caller's dtypes.

This module owns the conversion; it does not know about files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..data import TensorData
from ..dtype import DType, Kind
from ..dtype import dtype as to_dtype
from ..errors import ConversionOverflow, DTypeError, RecordError
from .tree import Record, map_tensors

#: the tensors of a quantized param (pyrite.quantization.record) keep their dtypes: their bytes
#: are the point of quantizing, and their scales are what the integers mean
QUANTIZED_KEYS = frozenset({"qvalues", "qscale", "qoffset"})


def convert_record(record: Record, float_dtype: DType | str | None = None,
                   int_dtype: DType | str | None = None) -> Record:
    """A copy of `record` with float tensors as `float_dtype` and int tensors as `int_dtype`.

    `None` leaves that kind as it is; bool tensors never change. A value that does not fit the
    target (70000.0 into f16, 2**40 into i32) raises ConversionOverflow naming the tensor's key.

    >>> r = convert_record({"w": TensorData([1.5]), "n": TensorData([7])}, "f64", "i32")
    >>> r["w"].dtype, r["n"].dtype
    (f64, i32)
    """
    f_dt = _checked(float_dtype, Kind.FLOAT)
    i_dt = _checked(int_dtype, Kind.INT)

    def convert(path: str, data: TensorData) -> TensorData:
        target = {Kind.FLOAT: f_dt, Kind.INT: i_dt}.get(data.kind)
        if target is None or target is data.dtype or path.rpartition(".")[2] in QUANTIZED_KEYS:
            return data
        try:
            return data.convert(target)
        except ConversionOverflow as err:
            raise ConversionOverflow(f"{path!r}: {err}") from err

    return map_tensors(record, convert)


def _checked(value: DType | str | None, kind: Kind) -> DType | None:
    if value is None:
        return None
    dt = to_dtype(value)
    if dt.kind is not kind:
        raise DTypeError(f"convert_record: {dt} is not a {kind.value} dtype")
    return dt


@dataclass(frozen=True)
class PrecisionSettings:
    """Base of the precision settings; subclasses fix `name`, `float_dtype` and `int_dtype`."""

    name: ClassVar[str]
    float_dtype: ClassVar[DType]
    int_dtype: ClassVar[DType]

    def apply(self, record: Record) -> Record:
        """The record as this setting stores it (see `convert_record` for overflow)."""
        return convert_record(record, self.float_dtype, self.int_dtype)


@dataclass(frozen=True)
class HalfPrecision(PrecisionSettings):
    """f16 floats, i16 ints: half the size of full precision; floats keep about 3 digits."""

    name: ClassVar[str] = "half"
    float_dtype: ClassVar[DType] = DType.F16
    int_dtype: ClassVar[DType] = DType.I16


@dataclass(frozen=True)
class FullPrecision(PrecisionSettings):
    """f32 floats, i32 ints: the default, what models usually train in."""

    name: ClassVar[str] = "full"
    float_dtype: ClassVar[DType] = DType.F32
    int_dtype: ClassVar[DType] = DType.I32


@dataclass(frozen=True)
class DoublePrecision(PrecisionSettings):
    """f64 floats, i64 ints: nothing a pyrite tensor holds is ever rounded."""

    name: ClassVar[str] = "double"
    float_dtype: ClassVar[DType] = DType.F64
    int_dtype: ClassVar[DType] = DType.I64


_BY_NAME: dict[str, type[PrecisionSettings]] = {
    cls.name: cls for cls in (HalfPrecision, FullPrecision, DoublePrecision)}


def precision_named(name: str, *, source: str = "record") -> PrecisionSettings:
    """The setting stored in a file's metadata under `name` ("half", "full", "double").

    >>> precision_named("half")
    HalfPrecision()
    """
    cls = _BY_NAME.get(name)
    if cls is None:
        raise RecordError(f"{source}: unknown precision setting {name!r}; "
                          f"expected one of {', '.join(_BY_NAME)}")
    return cls()
