"""Element types and tensor kinds.

`DType` names the storage of one element; `Kind` is what the tensor API allows on it (Burn's
Float / Int / Bool). Every dtype belongs to exactly one kind.
"""

from __future__ import annotations

from enum import Enum

from .errors import DTypeError


class Kind(Enum):
    """The three tensor kinds of Burn's API."""

    FLOAT = "Float"
    INT = "Int"
    BOOL = "Bool"

    def __repr__(self) -> str:
        return self.value

    __str__ = __repr__
    # members are singletons, so identity hashes them; Enum's own __hash__ is Python code that
    # hashes the name, run by every op's kind check (`kind in op.kinds`)
    __hash__ = object.__hash__


Float = Kind.FLOAT
Int = Kind.INT
Bool = Kind.BOOL


class DType(Enum):
    """Element type: (name, kind, bytes per element, struct format, numpy name)."""

    F64 = ("f64", Kind.FLOAT, 8, "d", "float64")
    F32 = ("f32", Kind.FLOAT, 4, "f", "float32")
    F16 = ("f16", Kind.FLOAT, 2, "e", "float16")
    I64 = ("i64", Kind.INT, 8, "q", "int64")
    I32 = ("i32", Kind.INT, 4, "i", "int32")
    I16 = ("i16", Kind.INT, 2, "h", "int16")
    I8 = ("i8", Kind.INT, 1, "b", "int8")
    U8 = ("u8", Kind.INT, 1, "B", "uint8")
    BOOL = ("bool", Kind.BOOL, 1, "?", "bool")

    __hash__ = object.__hash__  # as Kind's: dtypes key the backends' per-op lookups

    def __init__(self, short: str, kind: Kind, itemsize: int, fmt: str, np_name: str) -> None:
        self.short = short
        self.kind = kind
        self.itemsize = itemsize
        self.fmt = fmt
        self.np_name = np_name

    def __repr__(self) -> str:
        return self.short

    __str__ = __repr__

    @property
    def is_float(self) -> bool:
        return self.kind is Kind.FLOAT

    @property
    def bounds(self) -> tuple[float, float]:
        """Smallest and largest representable value (finite max for floats)."""
        return _BOUNDS[self.short]


_BOUNDS = {
    "f64": (-1.7976931348623157e308, 1.7976931348623157e308),
    "f32": (-3.4028234663852886e38, 3.4028234663852886e38),
    "f16": (-65504.0, 65504.0),
    "i64": (-(2**63), 2**63 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i8": (-128, 127),
    "u8": (0, 255),
    "bool": (0, 1),
}

_BY_NAME = {d.short: d for d in DType} | {d.np_name: d for d in DType}
_BY_NAME |= {"float": DType.F32, "int": DType.I64, "float32": DType.F32, "bool_": DType.BOOL}

# Width order used to promote two dtypes of one kind (f32 + f64 -> f64).
_RANK = {d: i for i, d in enumerate([DType.U8, DType.I8, DType.I16, DType.I32, DType.I64,
                                     DType.F16, DType.F32, DType.F64, DType.BOOL])}


def dtype(value: object) -> DType:
    """Resolve a DType from a DType, a name ('f32', 'float32') or a numpy dtype."""
    if isinstance(value, DType):
        return value
    name = getattr(value, "name", None) if not isinstance(value, str) else value
    if name is None and isinstance(value, type):
        name = value.__name__
    found = _BY_NAME.get(str(name))
    if found is None:
        names = ", ".join(d.short for d in DType)
        raise DTypeError(f"unknown dtype {value!r}; use one of {names}")
    return found


def promote(a: DType, b: DType) -> DType:
    """The wider of two dtypes of the same kind."""
    return a if _RANK[a] >= _RANK[b] else b


def default_dtype(kind: Kind) -> DType:
    """The dtype a kind gets when none is named (f32, i64, bool), as numpy-backed Burn does."""
    return {Kind.FLOAT: DType.F32, Kind.INT: DType.I64, Kind.BOOL: DType.BOOL}[kind]
