"""Quantized params in records: stored as their integers, scheme and params, checked on load.

A quantized param is a small dict in the record instead of one tensor, so every recorder
(MessagePack, binary, JSON, gzip'd or not, any precision) stores it without knowing it:

    {"qscheme": '{"axis": null, ...}',   the scheme, QuantizationScheme.to_json()
     "qshape": [1024, 512],              the tensor's shape
     "qvalues": TensorData i8 (QInt8) or u8 (QInt4: two values a byte, low nibble first),
     "qscale": TensorData float, the scheme's params_shape,
     "qoffset": TensorData i8 (affine schemes only)}

Loading checks everything before a model changes: the scheme parses, the sizes agree with the
shape, scales are finite and positive, zero points and values lie in the type's range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backend.base import Backend
from ..data import TensorData
from ..dtype import DType
from ..errors import QuantizationError, RecordError
from ..tensor import from_data
from .scheme import QuantizationParameters, QuantizationScheme, QuantizationType
from .tensor import QuantizedTensor, storage_dtype

SCHEME_KEY = "qscheme"
_KEYS = {SCHEME_KEY, "qshape", "qvalues", "qscale", "qoffset"}


def quantized_record(q: QuantizedTensor) -> dict[str, Any]:
    """The record entry of a quantized tensor (see the module docstring)."""
    values = q.values.to_data().convert(DType.I8)
    if q.scheme.qtype is QuantizationType.QInt4:
        values = _pack_nibbles(values)
    entry: dict[str, Any] = {SCHEME_KEY: q.scheme.to_json(), "qshape": list(q.shape),
                             "qvalues": values, "qscale": q.qparams.scale.to_data()}
    if q.qparams.offset is not None:
        entry["qoffset"] = q.qparams.offset.to_data().convert(DType.I8)
    return entry


@dataclass(frozen=True)
class QuantizedEntry:
    """A checked quantized record entry; `to_tensor(device)` builds the QuantizedTensor."""

    scheme: QuantizationScheme
    shape: tuple[int, ...]
    values: TensorData
    scale: TensorData
    offset: TensorData | None

    def to_tensor(self, device: Backend | str) -> QuantizedTensor:
        values = from_data(self.values, device=device)
        values = values.cast(storage_dtype(values.device))
        scale = from_data(self.scale.convert(DType.F32) if self.scale.dtype is DType.F16
                          else self.scale, device=device)
        offset = None if self.offset is None else from_data(self.offset, device=device)
        return QuantizedTensor(values, self.scheme, QuantizationParameters(scale, offset))


def is_quantized_entry(value: object) -> bool:
    return isinstance(value, Mapping) and SCHEME_KEY in value


def read_entry(value: Mapping[str, Any], where: str) -> QuantizedEntry:
    """Check a record entry written by `quantized_record`; RecordError says what is wrong."""
    def bad(what: str) -> RecordError:
        return RecordError(f"{where}: corrupted quantized tensor: {what}; save the model again "
                           f"with quantize_weights(...) and save_file(...)")
    extra = set(value) - _KEYS
    if extra:
        raise bad(f"unknown keys {sorted(extra)}")
    try:
        scheme = QuantizationScheme.from_json(str(value[SCHEME_KEY]))
    except QuantizationError as exc:
        raise bad(str(exc)) from exc
    shape_list = value.get("qshape")
    if not isinstance(shape_list, list) or not all(isinstance(n, int) and n >= 0
                                                   for n in shape_list):
        raise bad(f"qshape must be a list of sizes, got {shape_list!r}")
    shape = tuple(shape_list)
    values, scale, offset = value.get("qvalues"), value.get("qscale"), value.get("qoffset")
    if not isinstance(values, TensorData) or not isinstance(scale, TensorData):
        raise bad("qvalues and qscale must be tensors")
    lo, hi = scheme.q_bounds if scheme.is_symmetric else scheme.qtype.bounds
    if scheme.qtype is QuantizationType.QInt4:
        if values.dtype is not DType.U8 or values.shape != (math.ceil(math.prod(shape) / 2),):
            raise bad(f"QInt4 values must be {math.ceil(math.prod(shape) / 2)} packed bytes "
                      f"(u8), got {values.dtype} {values.shape}")
        values = _unpack_nibbles(values, shape)
    elif values.dtype is not DType.I8 or values.shape != shape:
        raise bad(f"QInt8 values must be i8 of shape {shape}, got {values.dtype} {values.shape}")
    ints = values.values()
    if ints and not (lo <= min(ints) and max(ints) <= hi):
        raise bad(f"values outside {lo}..{hi}")
    try:
        want = scheme.params_shape(shape)
    except QuantizationError as exc:
        raise bad(str(exc)) from exc
    if not scale.dtype.is_float or scale.shape != want:
        raise bad(f"qscale must be float of shape {want}, got {scale.dtype} {scale.shape}")
    scales = scale.values()
    if not all(math.isfinite(s) and s > 0 for s in scales):
        found = next(s for s in scales if not (math.isfinite(s) and s > 0))
        raise bad(f"scale {found} is not a finite positive number")
    if scheme.is_symmetric:
        if offset is not None:
            raise bad(f"{scheme!r} has no zero point, but the record has one")
    else:
        if not isinstance(offset, TensorData) or offset.dtype is not DType.I8 \
                or offset.shape != want:
            raise bad(f"{scheme!r} needs an i8 qoffset of shape {want}")
        lo8, hi8 = scheme.qtype.bounds
        if not all(lo8 <= z <= hi8 for z in offset.values()):
            found = next(z for z in offset.values() if not lo8 <= z <= hi8)
            raise bad(f"zero point {found} is outside {lo8}..{hi8}")
    return QuantizedEntry(scheme, shape, values, scale, offset)


def split_quantized(record: Mapping[str, Any], source: str) -> tuple[dict[str, Any],
                                                                      dict[str, QuantizedEntry]]:
    """The record without its quantized entries, and those entries (checked) by dotted path."""
    found: dict[str, QuantizedEntry] = {}

    def walk(node: Mapping[str, Any], prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            path = prefix + key
            if is_quantized_entry(value):
                found[path] = read_entry(value, f"{source}: {path!r}")
            elif isinstance(value, Mapping):
                out[key] = walk(value, path + ".")
            else:
                out[key] = value
        return out
    return walk(record, ""), found


def _pack_nibbles(values: TensorData) -> TensorData:
    """Two 4-bit values a byte, low nibble first (an odd count gets a zero high nibble)."""
    raw = values.bytes
    if len(raw) % 2:
        raw += b"\0"
    lo, hi = raw[0::2], raw[1::2]
    packed = bytes((a & 15) | ((b & 15) << 4) for a, b in zip(lo, hi, strict=True))
    return TensorData.raw(packed, (len(packed),), DType.U8)


_SIGNED = bytes((n - 16) & 255 if n >= 8 else n for n in range(16))


def _unpack_nibbles(packed: TensorData, shape: tuple[int, ...]) -> TensorData:
    raw = packed.bytes
    lo = raw.translate(bytes(_SIGNED[b & 15] for b in range(256)))
    hi = raw.translate(bytes(_SIGNED[b >> 4] for b in range(256)))
    out = bytearray(2 * len(raw))
    out[0::2], out[1::2] = lo, hi
    return TensorData.raw(bytes(out[:math.prod(shape)]), shape, DType.I8)
