"""JSON records ("json"): pretty (indented, for reading weights) or compact (for gzip).

A tensor is written readably as `{"dtype": "f32", "shape": [2, 3], "values": [[...], [...]]}`:
values nested by shape, f16 and f32 values in the fewest digits that read back to the same
number (0.1, not 0.10000000149011612). Non-finite floats are written as NaN, Infinity and
-Infinity, as Python's json module writes and reads them (strict JSON parsers refuse them).

Pretty output indents dicts and lists of lists by two spaces and keeps each innermost list on one
line, so a weight matrix reads as one row per line.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, ClassVar

from ..data import TensorData
from ..dtype import DType, Kind
from ..errors import PyriteError, RecordError
from .checksum import CHECKSUM_KEY, checksum_text, verify_checksum
from .codec import Codec, decoded_tensors, tensor_dtype, tensor_shape
from .limits import check_depth
from .metadata import check_version
from .tree import TENSOR_JSON_KEYS, RecordValue

# First %g precision to try per dtype: %g drops trailing zeros, so starting at the dtype's
# guaranteed digits still finds the shortest form; the last always round-trips.
_DIGITS = {DType.F16: (3, 5), DType.F32: (6, 9)}


class _Corrupt(Exception):
    """Internal: a tensor's values do not match its shape or dtype."""


class JsonCodec(Codec):
    """JSON envelopes; `pretty` picks indented output (reading accepts either)."""

    name: ClassVar[str] = "json"
    version: ClassVar[int] = 2
    checksum_since: ClassVar[int | None] = 2
    description: ClassVar[str] = "a pyrite JSON record"
    data_name: ClassVar[str] = "JSON data"

    def __init__(self, *, pretty: bool) -> None:
        self.pretty = pretty

    def encode(self, envelope: dict[str, RecordValue]) -> bytes:
        tree = _to_json(envelope)
        meta, item = tree["metadata"], tree["item"]
        tree = {"metadata": {**meta, CHECKSUM_KEY: checksum_text(_compact(meta), _compact(item))},
                "item": item}
        text = _pretty(tree, "") + "\n" if self.pretty else json.dumps(tree, separators=(",", ":"))
        return text.encode("utf-8")

    def decode(self, data: bytes, *, source: str) -> object:
        self.expect(data, source=source)
        try:
            raw = json.loads(data.decode("utf-8-sig"))
        except UnicodeDecodeError as err:
            raise RecordError(f"{source}: expected {self.description}, found bytes that are not "
                              f"UTF-8 text ({err})") from err
        except (ValueError, RecursionError) as err:
            raise RecordError(f"{source}: expected {self.description}, found truncated or "
                              f"corrupt JSON ({err})") from err
        check_depth(raw, source=source, what="the file")
        if isinstance(raw, dict):  # paths in errors start inside the record: 'fc1.weight'
            meta = raw.get("metadata")
            if isinstance(meta, dict):
                check_version(meta.get("format_version"), meta.get("pyrite_version"), self,
                              source)
            verify_checksum(meta,
                            lambda rest: [_compact(rest), _compact(raw.get("item"))],
                            source=source, description=self.description)
            return {k: _from_json(v, "" if k == "item" else k, source) for k, v in raw.items()}
        return raw


def _compact(tree: Any) -> bytes:
    """The canonical text the checksum covers: compact JSON, keys in the file's order."""
    return json.dumps(tree, separators=(",", ":")).encode("utf-8")


def _to_json(value: RecordValue) -> Any:
    if isinstance(value, TensorData):
        values = value.values()
        if value.dtype in _DIGITS:
            values = _shortest(values, value.dtype)
        return {"dtype": value.dtype.short, "shape": list(value.shape),
                "values": _nest(values, value.shape)}
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


def _shortest(values: list[float], dt: DType) -> list[float]:
    pack = struct.Struct("<" + dt.fmt).pack
    first, last = _DIGITS[dt]
    out = []
    for v in values:
        if math.isfinite(v):
            want = pack(v)
            for digits in range(first, last + 1):
                short = float(f"{v:.{digits}g}")
                try:
                    if pack(short) == want:
                        v = short
                        break
                except OverflowError:  # rounding up past the dtype's largest value
                    continue
        out.append(v)
    return out


def _nest(flat: list[Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = math.prod(shape[1:])
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _pretty(value: Any, pad: str) -> str:
    inner = pad + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {_pretty(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value):
        items = [inner + _pretty(v, inner) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, separators=(", ", ": "))


def _from_json(value: Any, path: str, source: str) -> Any:
    return decoded_tensors(value, path, lambda node, at: _tensor(node, at, source)
                           if set(node) == TENSOR_JSON_KEYS else None)


def _tensor(node: dict[str, Any], path: str, source: str) -> TensorData:
    dt = tensor_dtype(node["dtype"], path, source)
    shape = tensor_shape(node["shape"], path, source)
    flat: list[Any] = []
    try:
        _unnest(node["values"], shape, flat, dt.kind)
        return TensorData(flat, shape=shape, dtype=dt)
    except (_Corrupt, PyriteError) as err:
        raise RecordError(f"{source}: tensor {path!r} ({dt}, shape {shape}): {err}") from err


def _unnest(values: Any, shape: tuple[int, ...], out: list[Any], kind: Kind) -> None:
    if not shape:
        if not _fits_kind(values, kind):
            raise _Corrupt(f"value {values!r} is not a {kind.value} value")
        out.append(values)
        return
    if not isinstance(values, list) or len(values) != shape[0]:
        found = f"{len(values)} items" if isinstance(values, list) else repr(values)
        raise _Corrupt(f"values do not match the shape: {found} where {shape[0]} were expected")
    for item in values:
        _unnest(item, shape[1:], out, kind)


def _fits_kind(value: Any, kind: Kind) -> bool:
    if kind is Kind.BOOL:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (kind is Kind.FLOAT and isinstance(value, float))


PRETTY_JSON = JsonCodec(pretty=True)
COMPACT_JSON = JsonCodec(pretty=False)
