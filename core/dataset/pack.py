"""Dataset packs (`.pyds`): any dataset's dict rows in one file that pure Python reads.

A pack is how a dataset reaches a web page: Pyodide has no pyarrow or Pillow offline, so pages
cannot read Parquet or decode images, but they read packs with the standard library alone
(`array`, `zlib`, `json`). `pyrite dataset pack SOURCE --out data.pyds` writes one from any
source `open_dataset` reads; `PackDataset(path)` reads it, natively and in the page.

Layout (little-endian):

    b"PYRITEDS" u32 version u32 0          header, 16 bytes
    chunk, chunk, ...                       each a zlib stream of up to `chunk_rows` rows
    footer                                  JSON: columns, rows, and per chunk its offset,
                                            size, rows, column kinds, CRC-32, raw size
    u64 footer size, u32 footer CRC-32, b"PYRITEDS"     trailer, 20 bytes

A chunk holds its rows column by column. Each column has one kind per chunk: `int` (int64),
`float` (float64), `bool`, `bytes`, `str`, `image` (an `Image`: height, width, channels and
its pixels) or `json` (anything else JSON holds); a kind ending in `?` has missing values, with
one byte per row (1 = present) before the values. Reading checks the magic, the version, the
footer's and every chunk's CRC-32 and sizes, so a damaged or truncated file is an error, never
wrong items.
"""

from __future__ import annotations

import bisect
import json
import os
import struct
import sys
import tempfile
import threading
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from .base import Dataset
from .image import Image

MAGIC = b"PYRITEDS"
VERSION = 1
CHUNK_ROWS = 1024
#: the largest chunk (decompressed) a reader accepts
MAX_CHUNK_BYTES = 1 << 30
_HEADER = struct.Struct("<8sII")
_TRAILER = struct.Struct("<QI8s")
_LITTLE = sys.byteorder == "little"

Row = dict[str, Any]


def _kind(values: list[Any]) -> tuple[str, bool]:
    present = [v for v in values if v is not None]
    nullable = len(present) != len(values)
    if not present:
        return "json", nullable
    kinds = {type(v) for v in present}
    if kinds == {bool}:
        return "bool", nullable
    if kinds == {int} and all(-(1 << 63) <= v < (1 << 63) for v in present):
        return "int", nullable
    if kinds <= {int, float} and float in kinds:
        return "float", nullable
    if kinds <= {bytes, bytearray, memoryview}:
        return "bytes", nullable
    if kinds == {str}:
        return "str", nullable
    if kinds == {Image}:
        return "image", nullable
    return "json", nullable


def _numbers(code: str, values: Iterable[Any]) -> bytes:
    a = array(code, values)
    if not _LITTLE:
        a.byteswap()
    return a.tobytes()


def _read_numbers(code: str, data: bytes | memoryview) -> array[Any]:
    a = array(code)
    a.frombytes(data)
    if not _LITTLE:
        a.byteswap()
    return a


def _encode_column(values: list[Any], kind: str) -> bytes:
    if kind == "int":
        return _numbers("q", values)
    if kind == "float":
        return _numbers("d", (float(v) for v in values))
    if kind == "bool":
        return bytes(1 if v else 0 for v in values)
    if kind in ("bytes", "str"):
        blobs = [v.encode() if kind == "str" else bytes(v) for v in values]
        return _numbers("Q", (len(b) for b in blobs)) + b"".join(blobs)
    if kind == "image":
        shapes = _numbers("I", (x for im in values for x in im.shape))
        return shapes + b"".join(im.data for im in values)
    try:
        return json.dumps(values, separators=(",", ":"), allow_nan=True).encode()
    except TypeError as e:
        raise DatasetError(f"a dataset pack cannot hold this value: {e}; store bytes, "
                           "numbers, text, images, or lists/dicts of those") from e


def _decode_column(data: memoryview, kind: str, n: int) -> list[Any]:
    if kind == "int":
        return _read_numbers("q", data).tolist()
    if kind == "float":
        return _read_numbers("d", data).tolist()
    if kind == "bool":
        return [b == 1 for b in data]
    if kind in ("bytes", "str"):
        sizes = _read_numbers("Q", data[:8 * n])
        out: list[Any] = []
        at = 8 * n
        for size in sizes:
            blob = data[at:at + size]
            out.append(bytes(blob).decode() if kind == "str" else bytes(blob))
            at += size
        return out
    if kind == "image":
        shapes = _read_numbers("I", data[:12 * n])
        images: list[Any] = []
        at = 12 * n
        for i in range(n):
            h, w, c = shapes[3 * i:3 * i + 3]
            size = h * w * c
            images.append(Image(h, w, c, bytes(data[at:at + size])))
            at += size
        return images
    values = json.loads(bytes(data))
    if not isinstance(values, list) or len(values) != n:
        raise ValueError("json column of the wrong length")
    return values


def _encode_chunk(columns: list[str], rows: list[Mapping[str, Any]]) -> tuple[bytes, list[str]]:
    parts: list[bytes] = []
    kinds: list[str] = []
    for name in columns:
        values = [row[name] for row in rows]
        kind, nullable = _kind(values)
        body = b""
        if nullable:
            body = bytes(0 if v is None else 1 for v in values)
            values = [v for v in values if v is not None]
        body += _encode_column(values, kind)
        parts.append(struct.pack("<Q", len(body)) + body)
        kinds.append(kind + ("?" if nullable else ""))
    return b"".join(parts), kinds


def write_pack(path: str | PathLike[str], rows: Iterable[Mapping[str, Any]], *,
               chunk_rows: int = CHUNK_ROWS, meta: Mapping[str, Any] | None = None) -> Path:
    """Write `rows` (dicts with the same keys) as a pack at `path`, atomically (a temporary file
    in the same folder replaces `path` only once complete). Returns the path."""
    path = Path(path)
    if chunk_rows < 1:
        raise DatasetError(f"chunk_rows must be at least 1, got {chunk_rows}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_HEADER.pack(MAGIC, VERSION, 0))
            columns: list[str] | None = None
            chunks: list[dict[str, Any]] = []
            total = 0
            batch: list[Mapping[str, Any]] = []

            def flush() -> None:
                assert columns is not None
                raw, kinds = _encode_chunk(columns, batch)
                packed = zlib.compress(raw, 6)
                chunks.append({"offset": f.tell(), "size": len(packed), "rows": len(batch),
                               "kinds": kinds, "crc32": zlib.crc32(packed), "raw": len(raw)})
                f.write(packed)
                batch.clear()

            for row in rows:
                if not isinstance(row, Mapping):
                    raise DatasetError(f"a dataset pack holds dict rows; row {total} is a "
                                       f"{type(row).__name__}")
                if columns is None:
                    columns = [str(k) for k in row]
                elif list(row) != columns:
                    raise DatasetError(f"row {total} has columns {list(row)}, the first row "
                                       f"has {columns}: every row needs the same columns")
                batch.append(row)
                total += 1
                if len(batch) == chunk_rows:
                    flush()
            if columns is None:
                raise DatasetError("the dataset has no rows; nothing to pack")
            if batch:
                flush()
            footer = json.dumps({"version": VERSION, "columns": columns, "rows": total,
                                 "chunks": chunks, "meta": dict(meta or {})}).encode()
            f.write(footer)
            f.write(_TRAILER.pack(len(footer), zlib.crc32(footer), MAGIC))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class PackDataset(Dataset[Row]):
    """The rows of a dataset pack (see the module docstring) as dicts, read a chunk at a time:
    only the footer is read when it opens, and the last few decoded chunks are kept."""

    def __init__(self, path: str | PathLike[str], *, keep_chunks: int = 4) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DatasetError(f"PackDataset: no file at {self.path}")
        size = self.path.stat().st_size
        self._file = open(self.path, "rb")  # noqa: SIM115 - kept open for reading chunks
        self._lock = threading.Lock()
        try:
            self._read_footer(size)
        except BaseException:
            self._file.close()
            raise
        self.keep_chunks = max(1, keep_chunks)
        self._decoded: OrderedDict[int, list[list[Any]]] = OrderedDict()

    def _bad(self, why: str) -> DatasetError:
        return DatasetError(f"PackDataset: {self.path} is not a complete pyrite dataset pack "
                            f"({why}); write it again with `pyrite dataset pack`")

    def _read_footer(self, size: int) -> None:
        f = self._file
        if size < _HEADER.size + _TRAILER.size:
            raise self._bad(f"{size} bytes")
        magic, version, _ = _HEADER.unpack(f.read(_HEADER.size))
        if magic != MAGIC:
            raise self._bad("no PYRITEDS header")
        if version != VERSION:
            raise DatasetError(f"PackDataset: {self.path} is a version {version} pack; this "
                               f"pyrite reads version {VERSION}")
        f.seek(size - _TRAILER.size)
        footer_size, footer_crc, magic = _TRAILER.unpack(f.read(_TRAILER.size))
        if magic != MAGIC or footer_size > size - _HEADER.size - _TRAILER.size:
            raise self._bad("its end is missing: truncated?")
        f.seek(size - _TRAILER.size - footer_size)
        raw_footer = f.read(footer_size)
        if zlib.crc32(raw_footer) != footer_crc:
            raise self._bad("its footer fails its CRC-32 check")
        try:
            footer = json.loads(raw_footer)
            self.columns: list[str] = [str(c) for c in footer["columns"]]
            self.meta: dict[str, Any] = dict(footer.get("meta", {}))
            chunks = footer["chunks"]
            self._chunks = [(int(c["offset"]), int(c["size"]), int(c["rows"]),
                             [str(k) for k in c["kinds"]], int(c["crc32"]), int(c["raw"]))
                            for c in chunks]
            rows = int(footer["rows"])
        except (ValueError, KeyError, TypeError) as e:
            raise self._bad(f"unreadable footer: {e}") from e
        self._starts = [0]
        data_end = size - _TRAILER.size - footer_size
        for offset, length, n, kinds, _, raw in self._chunks:
            if (offset < _HEADER.size or offset + length > data_end or n < 1
                    or len(kinds) != len(self.columns) or not 0 <= raw <= MAX_CHUNK_BYTES):
                raise self._bad("a chunk outside the file")
            self._starts.append(self._starts[-1] + n)
        if self._starts[-1] != rows:
            raise self._bad(f"chunks hold {self._starts[-1]} rows, the footer says {rows}")

    def _chunk(self, c: int) -> list[list[Any]]:
        with self._lock:
            got = self._decoded.get(c)
            if got is not None:
                self._decoded.move_to_end(c)
                return got
            offset, size, n, kinds, crc, raw_size = self._chunks[c]
            self._file.seek(offset)
            packed = self._file.read(size)
        if len(packed) != size or zlib.crc32(packed) != crc:
            raise self._bad(f"chunk {c} fails its CRC-32 check")
        try:
            inflater = zlib.decompressobj()
            raw = inflater.decompress(packed, raw_size + 1)
            if len(raw) != raw_size or not inflater.eof:
                raise ValueError("size differs from the footer's")
            columns = []
            view, at = memoryview(raw), 0
            for kind in kinds:
                (length,) = struct.unpack_from("<Q", view, at)
                at += 8
                body = view[at:at + length]
                at += length
                nullable = kind.endswith("?")
                base = kind.rstrip("?")
                if nullable:
                    mask = body[:n]
                    values = iter(_decode_column(body[n:], base, sum(mask)))
                    columns.append([next(values) if m else None for m in mask])
                else:
                    columns.append(_decode_column(body, base, n))
            if any(len(col) != n for col in columns):
                raise ValueError("a column of the wrong length")
        except (zlib.error, ValueError, struct.error, StopIteration, UnicodeDecodeError) as e:
            raise self._bad(f"chunk {c}: {e}") from e
        with self._lock:
            self._decoded[c] = columns
            while len(self._decoded) > self.keep_chunks:
                self._decoded.popitem(last=False)
        return columns

    def get(self, index: int) -> Row | None:
        if not 0 <= index < self._starts[-1]:
            return None
        c = bisect.bisect_right(self._starts, index) - 1
        i = index - self._starts[c]
        return {name: col[i] for name, col in zip(self.columns, self._chunk(c), strict=True)}

    def get_many(self, indices: list[int]) -> list[Row]:
        """The items at `indices` (each in range), as `get` gives them."""
        return [self.get(i) for i in indices]  # type: ignore[misc]

    def len(self) -> int:
        return self._starts[-1]

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> PackDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()

    def __repr__(self) -> str:
        return (f"PackDataset({str(self.path)!r}, {self.len()} rows in {len(self._chunks)} "
                f"chunks, columns={self.columns})")
