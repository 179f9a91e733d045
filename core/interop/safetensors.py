"""Hugging Face safetensors files, read and written in pure Python (no numpy, no torch).

The format: an 8-byte little-endian unsigned header length N, N bytes of UTF-8 JSON, then the
byte buffer. The JSON maps each tensor name to `{"dtype": "F32", "shape": [2, 3],
"data_offsets": [begin, end]}` (offsets relative to the buffer's start) and may hold
`"__metadata__"`, a dict of str to str. Tensors are little-endian, row-major and contiguous;
together they cover the buffer exactly, without gaps or overlaps. Files written here pad the
header with spaces to a multiple of 8 bytes and put wider dtypes first, so every tensor is
aligned to its item size.

Dtypes: F64 F32 F16 I64 I32 I16 I8 U8 BOOL map to pyrite's dtypes of the same name. BF16 is
read as F32 (each bfloat16's 16 bits become the high half of a float32, which is exact); pyrite
never writes BF16. Any other dtype (U16, U32, U64, F8_*, ...) is refused with an error naming the
tensor.

Every check of the header runs before the tensors' bytes are read or copied: a truncated file,
a header length beyond the file, invalid JSON, a tensor whose byte range does not match its
shape and dtype, byte ranges outside the buffer, overlapping or leaving gaps, and duplicate
names each raise `RecordError` naming the file and the problem. So a header that declares a
tensor of 10^12 elements is refused without allocating anything.

>>> from pyrite.data import TensorData
>>> blob = dumps({"w": TensorData([[1.0, 2.0]])}, metadata={"format": "pt"})
>>> loads(blob)["w"]
TensorData([[1.0, 2.0]], shape=(1, 2), dtype=f32)
>>> loads_metadata(blob)
{'format': 'pt'}
"""

from __future__ import annotations

import json
import math
import os
import reprlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

from ..data import TensorData
from ..dtype import DType
from ..errors import RecordError
from ..record.atomic import atomic_write
from ..record.limits import check_depth
from ..record.metadata import RecordMetadata, pyrite_version
from ..record.precision import FullPrecision, precision_named
from ..record.recorder import FileRecorder
from ..record.tree import Record, RecordValue, flatten_record, unflatten_record, validate_record

if TYPE_CHECKING:
    from ..tensor import Tensor

PathLike = str | os.PathLike[str]

#: safetensors dtype name -> the pyrite dtype it is read as and written from
DTYPES: dict[str, DType] = {
    "F64": DType.F64, "F32": DType.F32, "F16": DType.F16, "I64": DType.I64, "I32": DType.I32,
    "I16": DType.I16, "I8": DType.I8, "U8": DType.U8, "BOOL": DType.BOOL,
}
_NAMES = {dt: name for name, dt in DTYPES.items()}
# read-only dtypes: name -> bytes per element in the file
_CONVERTED = {"BF16": 2}

METADATA_KEY = "__metadata__"
#: largest header the reader accepts (the safetensors package's own limit)
MAX_HEADER = 100_000_000

# __metadata__ keys a SafetensorsFileRecorder writes
_META_PREFIX = "pyrite."
_EXTRA_KEY = "pyrite.record"  # the record's non-tensor leaves, as JSON


def _err(source: str, message: str) -> RecordError:
    return RecordError(f"{source}: {message}")


# ---- reading -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Entry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


def _header_length(head: bytes, size: int, source: str) -> int:
    if size < 8:
        raise _err(source, f"not a safetensors file: {size} bytes, shorter than the 8-byte "
                           f"header length")
    (n,) = struct.unpack("<Q", head[:8])
    if n > size - 8:
        raise _err(source, f"safetensors header length {n} is larger than the rest of the file "
                           f"({size - 8} bytes): the file is truncated or not safetensors")
    if n > MAX_HEADER:
        raise _err(source, f"safetensors header length {n} exceeds the limit of {MAX_HEADER} "
                           f"bytes")
    if n < 2:
        raise _err(source, f"safetensors header length {n} is too short for a JSON object")
    return int(n)


def _no_duplicates(source: str) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _err(source, f"safetensors header names {key!r} twice")
            out[key] = value
        return out
    return hook


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_header(raw: bytes, buffer_size: int,
                  source: str) -> tuple[list[_Entry], dict[str, str]]:
    """The tensors (in header order) and the metadata; every check, nothing allocated."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _err(source, f"safetensors header is not UTF-8 ({err})") from err
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates(source))
    except (ValueError, RecursionError) as err:  # ValueError: also a 5,000-digit integer
        raise _err(source, f"safetensors header is not valid JSON ({str(err)[:200]})") from err
    check_depth(header, source=source, what="the safetensors header")
    if not isinstance(header, dict):
        raise _err(source, f"safetensors header is a JSON {type(header).__name__}, expected an "
                           f"object")
    meta = header.pop(METADATA_KEY, None)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _err(source, f"safetensors {METADATA_KEY!r} must map str to str, got "
                           f"{reprlib.repr(meta)}")
    entries = [_entry(name, info, buffer_size, source) for name, info in header.items()]
    _check_layout(entries, buffer_size, source)
    return entries, meta


def _entry(name: str, info: object, buffer_size: int, source: str) -> _Entry:
    where = f"tensor {reprlib.repr(name)}"
    if not isinstance(info, dict):
        raise _err(source, f"{where}: expected an object with dtype, shape and data_offsets, "
                           f"got {reprlib.repr(info)}")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str):
        raise _err(source, f"{where}: dtype {reprlib.repr(dtype)} is not a string")
    if dtype in DTYPES:
        itemsize = DTYPES[dtype].itemsize
    elif dtype in _CONVERTED:
        itemsize = _CONVERTED[dtype]
    else:
        known = ", ".join([*DTYPES, "BF16 (read as F32)"])
        raise _err(source, f"{where} has dtype {reprlib.repr(dtype)}, which pyrite does not "
                           f"read; it reads {known}")
    if not isinstance(shape, list) or not all(_is_size(d) for d in shape):
        raise _err(source, f"{where}: shape {reprlib.repr(shape)} is not a list of sizes")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(_is_size(o) for o in offsets) or offsets[0] > offsets[1]):
        raise _err(source, f"{where}: data_offsets {reprlib.repr(offsets)} is not [begin, end] "
                           f"with 0 <= begin <= end")
    begin, end = offsets
    if end > buffer_size:
        raise _err(source, f"{where}: data_offsets [{begin}, {end}] lie outside the "
                           f"{buffer_size}-byte data buffer: the file is truncated or corrupt")
    numel = math.prod(shape)
    if numel * itemsize != end - begin:
        raise _err(source, f"{where}: shape {tuple(shape)} of {dtype} needs {numel * itemsize} "
                           f"bytes, but data_offsets [{begin}, {end}] hold {end - begin}")
    return _Entry(name, dtype, tuple(shape), begin, end)


def _check_layout(entries: list[_Entry], buffer_size: int, source: str) -> None:
    at, last = 0, None
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.begin < at:
            assert last is not None
            raise _err(source, f"tensors {last.name!r} and {e.name!r} overlap (bytes "
                               f"[{last.begin}, {last.end}] and [{e.begin}, {e.end}])")
        if e.begin > at:
            raise _err(source, f"bytes [{at}, {e.begin}] of the data buffer belong to no tensor")
        at, last = e.end, e
    if at != buffer_size:
        raise _err(source, f"the data buffer has {buffer_size} bytes but the tensors cover "
                           f"{at}: bytes [{at}, {buffer_size}] belong to no tensor")


def _bf16_to_f32(raw: bytes) -> bytes:
    out = bytearray(len(raw) * 2)
    out[2::4] = raw[0::2]
    out[3::4] = raw[1::2]
    return bytes(out)


def _tensor(e: _Entry, buffer: bytes | memoryview) -> TensorData:
    raw = bytes(buffer[e.begin:e.end])
    if e.dtype == "BF16":
        return TensorData.raw(_bf16_to_f32(raw), e.shape, DType.F32)
    return TensorData.raw(raw, e.shape, DTYPES[e.dtype])


def _decode(data: bytes, source: str) -> tuple[dict[str, TensorData], dict[str, str]]:
    n = _header_length(data[:8], len(data), source)
    entries, meta = _parse_header(data[8:8 + n], len(data) - 8 - n, source)
    buffer = memoryview(data)[8 + n:]
    return {e.name: _tensor(e, buffer) for e in entries}, meta


def _read_file(path: PathLike, *, tensors: bool) -> tuple[dict[str, TensorData], dict[str, str]]:
    target = Path(path)
    source = str(target)
    if not target.is_file():
        raise _err(source, "no such file")
    with open(target, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        n = _header_length(file.read(8), size, source)
        entries, meta = _parse_header(_read_exactly(file, n, source), size - 8 - n, source)
        if not tensors:
            return {}, meta
        buffer = _read_exactly(file, size - 8 - n, source)
    return {e.name: _tensor(e, buffer) for e in entries}, meta


def _read_exactly(file: BinaryIO, n: int, source: str) -> bytes:
    data = file.read(n)
    if len(data) != n:  # the file shrank while being read
        raise _err(source, f"expected {n} more bytes, read {len(data)}: the file is truncated")
    return data


def loads(data: bytes, *, source: str = "<bytes>") -> dict[str, TensorData]:
    """The tensors in safetensors `data`, by name in the header's order (BF16 read as F32).

    Raises RecordError naming `source` and the problem for data that is not valid safetensors.

    >>> try:
    ...     loads(b"\\x10\\x00\\x00\\x00\\x00\\x00\\x00\\x00{}", source="w.safetensors")
    ... except RecordError as err:
    ...     print(err)  # doctest: +NORMALIZE_WHITESPACE
    w.safetensors: safetensors header length 16 is larger than the rest of the file (2 bytes):
    the file is truncated or not safetensors
    """
    return _decode(bytes(data), source)[0]


def loads_metadata(data: bytes, *, source: str = "<bytes>") -> dict[str, str]:
    """The `__metadata__` of safetensors `data` (an empty dict when it has none)."""
    data = bytes(data)
    n = _header_length(data[:8], len(data), source)
    return _parse_header(data[8:8 + n], len(data) - 8 - n, source)[1]


def load(path: PathLike) -> dict[str, TensorData]:
    """The tensors in the safetensors file at `path`, by name (BF16 read as F32).

    The header is read and checked before the tensors' bytes are read.
    """
    return _read_file(path, tensors=True)[0]


def metadata(path: PathLike) -> dict[str, str]:
    """The `__metadata__` of the file at `path` (an empty dict when it has none); reads only
    the header."""
    return _read_file(path, tensors=False)[1]


# ---- writing -------------------------------------------------------------------------------

def _as_data(name: object, value: object) -> TensorData:
    if isinstance(value, TensorData):
        return value
    to_data = getattr(value, "to_data", None)
    if callable(to_data):
        data = to_data()
        if isinstance(data, TensorData):
            return data
    raise RecordError(f"safetensors: {name!r} is a {type(value).__name__}; only TensorData and "
                      f"Tensor values can be saved")


def _parts(tensors: Mapping[str, TensorData | Tensor],
           metadata: Mapping[str, str] | None) -> list[bytes]:
    """The file's pieces: header length + header, then each tensor's bytes."""
    items: list[tuple[str, TensorData]] = []
    for name, value in tensors.items():
        if not isinstance(name, str) or not name or name == METADATA_KEY:
            raise RecordError(f"safetensors: tensor name {name!r} is not allowed (a non-empty "
                              f"str other than {METADATA_KEY!r})")
        items.append((name, _as_data(name, value)))
    header: dict[str, object] = {}
    if metadata:
        bad = {k: v for k, v in metadata.items()
               if not isinstance(k, str) or not isinstance(v, str)}
        if bad:
            raise RecordError(f"safetensors: metadata maps str to str; these entries do not: "
                              f"{bad!r}")
        header[METADATA_KEY] = dict(metadata)
    # wider items first: with an 8-aligned buffer start, every tensor is aligned to its itemsize
    ordered = sorted(items, key=lambda it: -it[1].dtype.itemsize)
    offset = 0
    for name, data in ordered:
        end = offset + len(data.bytes)
        header[name] = {"dtype": _NAMES[data.dtype], "shape": list(data.shape),
                        "data_offsets": [offset, end]}
        offset = end
    # keep the caller's order in the header, so reading gives the tensors back in that order
    order = [METADATA_KEY] if METADATA_KEY in header else []
    order += [name for name, _ in items]
    text = json.dumps({k: header[k] for k in order}, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return [struct.pack("<Q", len(text)), text, *(data.bytes for _, data in ordered)]


def dumps(tensors: Mapping[str, TensorData | Tensor],
          metadata: Mapping[str, str] | None = None) -> bytes:
    """`tensors` (TensorData or Tensor values) as the bytes of a safetensors file, with
    `metadata` as its `__metadata__`."""
    return b"".join(_parts(tensors, metadata))


def save(tensors: Mapping[str, TensorData | Tensor], path: PathLike,
         metadata: Mapping[str, str] | None = None) -> Path:
    """Write `tensors` to `path` as safetensors, atomically (see `pyrite.record.atomic_write`);
    returns the path. Nothing is written when a value cannot be saved."""
    parts = _parts(tensors, metadata)

    def write(file: BinaryIO) -> None:
        for part in parts:
            file.write(part)
    return atomic_write(path, write)


# ---- a recorder, for Module.save_file / load_file --------------------------------------------

@dataclass(frozen=True)
class SafetensorsFileRecorder(FileRecorder):
    """Records as `.safetensors` files: tensors under their dotted paths (`fc1.weight`).

    The record's other leaves (a module's `_param_ids`, `"epoch": 3`) and pyrite's metadata go
    in `__metadata__` as strings, so other tools see only tensors. Files from other tools (no
    pyrite metadata) load too; their metadata says format "safetensors" and pyrite version
    "unknown". `Module.save_file` and `load_file` use this recorder for paths ending in
    `.safetensors` when no recorder is given.

    >>> from pyrite.data import TensorData
    >>> rec = SafetensorsFileRecorder()
    >>> blob = rec.to_bytes({"fc": {"weight": TensorData([1.0])}, "epoch": 3})
    >>> rec.from_bytes(blob)
    {'fc': {'weight': TensorData([1.0], shape=(1,), dtype=f32)}, 'epoch': 3}
    """

    extension: ClassVar[str] = ".safetensors"
    format_name: ClassVar[str] = "safetensors"
    format_version: ClassVar[int] = 1

    def to_bytes(self, record: Record, *, item_type: str | None = None,
                 source: str = "record") -> bytes:
        tensors, meta = self._split(record, item_type, source)
        return dumps(tensors, meta)

    def save(self, record: Record, path: PathLike, *, item_type: str | None = None) -> Path:
        target = self.path_for(path)
        tensors, meta = self._split(record, item_type, str(target))
        return save(tensors, target, meta)

    def _split(self, record: Record, item_type: str | None,
               source: str) -> tuple[dict[str, TensorData], dict[str, str]]:
        validate_record(record, source=source)
        flat = flatten_record(self.precision.apply(record))
        tensors: dict[str, TensorData] = {}
        extra: dict[str, RecordValue] = {}
        for key, value in flat.items():
            if isinstance(value, TensorData):
                tensors[key] = value
            elif _holds_tensor(value):
                raise RecordError(f"{source}: {key!r} is a list holding tensors; safetensors "
                                  f"stores tensors only under names (use a dict)")
            else:
                extra[key] = value
        info = RecordMetadata(self.format_name, self.format_version, self.precision,
                              pyrite_version(), item_type).to_dict()
        meta = {_META_PREFIX + k: str(v) for k, v in info.items() if v is not None}
        if extra:
            meta[_EXTRA_KEY] = json.dumps(extra, separators=(",", ":"))
        return tensors, meta

    def from_bytes_with_metadata(self, data: bytes, *, item_type: str | None = None,
                                 source: str = "<bytes>") -> tuple[Record, RecordMetadata]:
        tensors, meta = _decode(bytes(data), source)
        return self._join(tensors, meta, item_type, source)

    def load_with_metadata(self, path: PathLike, *,
                           item_type: str | None = None) -> tuple[Record, RecordMetadata]:
        target = self.path_for(path)
        tensors, meta = _read_file(target, tensors=True)
        return self._join(tensors, meta, item_type, str(target))

    def _join(self, tensors: dict[str, TensorData], meta: dict[str, str],
              item_type: str | None, source: str) -> tuple[Record, RecordMetadata]:
        flat: dict[str, RecordValue] = dict(tensors)
        if _EXTRA_KEY in meta:
            try:
                extra = json.loads(meta[_EXTRA_KEY])
            except (ValueError, RecursionError) as err:
                raise _err(source, f"metadata {_EXTRA_KEY!r} is not valid JSON "
                                   f"({str(err)[:200]})") from err
            check_depth(extra, source=source, what=f"metadata {_EXTRA_KEY!r}")
            if not isinstance(extra, dict):
                raise _err(source, f"metadata {_EXTRA_KEY!r} is not a JSON object")
            for key, value in extra.items():
                if key in flat:
                    raise _err(source, f"{key!r} is both a tensor and a metadata value")
                flat[key] = value
        record = unflatten_record(flat)
        info = self._metadata(meta, source)
        if item_type is not None and info.item_type != item_type:
            raise _err(source, f"expected a record of {item_type!r}, found one of "
                               f"{info.item_type!r}")
        return record, info

    def _metadata(self, meta: dict[str, str], source: str) -> RecordMetadata:
        fmt = meta.get(_META_PREFIX + "format")
        if fmt is None:  # written by another tool
            return RecordMetadata(self.format_name, self.format_version, FullPrecision(),
                                  "unknown", None)
        if fmt != self.format_name:
            raise _err(source, f"metadata says format {fmt!r}, expected {self.format_name!r}")
        text = meta.get(_META_PREFIX + "format_version", "")
        if not (text.isascii() and text.isdigit() and len(text) < 10):
            raise _err(source, f"metadata 'pyrite.format_version' is {reprlib.repr(text)}, not "
                               f"a version number (1, 2, ...): the file is corrupt")
        version = int(text)
        if version > self.format_version:
            raise _err(source, f"safetensors record format version {version} is newer than "
                               f"this pyrite ({pyrite_version()}) reads: upgrade pyrite")
        if version < 1:
            raise _err(source, f"safetensors record format version {version} does not exist "
                               f"(versions start at 1): the file is corrupt")
        precision = precision_named(meta.get(_META_PREFIX + "precision", "full"), source=source)
        return RecordMetadata(self.format_name, version, precision,
                              meta.get(_META_PREFIX + "pyrite_version", "unknown"),
                              meta.get(_META_PREFIX + "item_type"))


def _holds_tensor(value: object) -> bool:
    if isinstance(value, TensorData):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, Mapping):
        return any(_holds_tensor(v) for v in value.values())
    return False


__all__ = ["DTYPES", "MAX_HEADER", "SafetensorsFileRecorder", "dumps", "load", "loads",
           "loads_metadata", "metadata", "save"]
