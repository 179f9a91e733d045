"""The codec contract (envelope <-> bytes), gzip framing, and naming what a file really holds.

A codec encodes the envelope (see `metadata.py`) to bytes and back, and knows nothing of paths,
precision or compression. `describe` names the format of some bytes, so that loading a file with
the wrong recorder says what the file is and which recorder reads it.
"""

from __future__ import annotations

import gzip
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from ..data import TensorData
from ..dtype import DType
from ..errors import RecordError
from .limits import gunzip_limited
from .tree import RecordValue

GZIP_MAGIC = b"\x1f\x8b"
BIN_MAGIC = b"PYRB"
# msgpack of the envelope starts with a 2-entry map whose first key is "metadata"
MPK_HEAD = b"\x82\xa8metadata"


class Codec(ABC):
    """Encodes one envelope dict to bytes and decodes it back."""

    name: ClassVar[str]  # stored in the metadata's "format" field
    version: ClassVar[int]  # the newest format version this codec writes; it reads 1..version
    checksum_since: ClassVar[int | None] = None  # first version whose metadata has a checksum
    description: ClassVar[str]  # for errors: "a pyrite binary record"
    data_name: ClassVar[str]  # the container format in general: "MessagePack data"

    @abstractmethod
    def encode(self, envelope: dict[str, RecordValue]) -> bytes:
        """The envelope as bytes; TensorData leaves keep their dtype."""

    @abstractmethod
    def decode(self, data: bytes, *, source: str) -> object:
        """The envelope back; RecordError (naming `source`) on data it cannot read."""

    def expect(self, data: bytes, *, source: str, compressed: bool = False) -> None:
        """Raise RecordError when `data` is recognisably another format than this codec's."""
        found = describe(data)
        if found != self.description:
            inside = " inside gzip" if compressed else ""
            raise RecordError(f"{source}: expected {self.description}{inside}, "
                              f"found {found}{_hint(found, compressed)}")


def tensor_dtype(name: object, path: str, source: str) -> DType:
    """The DType a decoded tensor names ("f32"); RecordError naming the tensor otherwise."""
    for dt in DType:
        if dt.short == name:
            return dt
    names = ", ".join(d.short for d in DType)
    raise RecordError(f"{source}: tensor {path!r} has dtype {name!r}, expected one of {names}")


def tensor_shape(shape: object, path: str, source: str) -> tuple[int, ...]:
    """The shape a decoded tensor names (a list of sizes); RecordError naming it otherwise."""
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise RecordError(f"{source}: tensor {path!r} has shape {shape!r}, expected a list of "
                          f"sizes")
    return tuple(shape)


def decoded_tensors(value: object, path: str,
                    tensor: Callable[[dict[str, Any], str], TensorData | None]) -> object:
    """A decoded tree with each dict that `tensor(node, path)` reads as a tensor replaced by
    what it returns (None: a plain dict, walked into). Paths name values in errors as the
    record's walks do: `fc1.weight`, `layers[2]`."""
    if isinstance(value, dict):
        found = tensor(value, path)
        if found is not None:
            return found
        return {k: decoded_tensors(v, f"{path}.{k}" if path else k, tensor)
                for k, v in value.items()}
    if isinstance(value, list):
        return [decoded_tensors(v, f"{path}[{i}]", tensor) for i, v in enumerate(value)]
    return value


def describe(data: bytes) -> str:
    """What `data` looks like, in words, for error messages.

    >>> describe(b"PYRB\\x01\\x00")
    'a pyrite binary record'
    >>> describe(b"")
    'an empty file'
    """
    if not data:
        return "an empty file"
    if data.startswith(GZIP_MAGIC):
        return "gzip-compressed data"
    if data.startswith(BIN_MAGIC):
        return "a pyrite binary record"
    if data.startswith(MPK_HEAD):
        return "a pyrite named MessagePack record"
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{"):
        return "a pyrite JSON record"
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle (pyrite never loads pickles)"
    if data.startswith(b"PK\x03\x04"):
        return "a zip archive (a PyTorch .pt file? import it with pyrite.interop)"
    return f"unrecognised data starting with {data[:8].hex(' ')}"


_RECORDERS = {
    "a pyrite binary record": ("BinFileRecorder or BinBytesRecorder", "BinGzFileRecorder"),
    "a pyrite named MessagePack record": ("NamedMpkFileRecorder", "NamedMpkGzFileRecorder"),
    "a pyrite JSON record": ("PrettyJsonFileRecorder", "JsonGzFileRecorder"),
}


def _hint(found: str, compressed: bool) -> str:
    if found == "gzip-compressed data" and not compressed:
        return ("; load it with a gzip recorder (NamedMpkGzFileRecorder, BinGzFileRecorder "
                "or JsonGzFileRecorder)")
    if found in _RECORDERS:
        plain, gz = _RECORDERS[found]
        return f"; load it with {gz if compressed else plain}"
    if found.startswith("unrecognised data"):
        return ("; it is not a pyrite record: give a file pyrite wrote (Module.save_file, or "
                "`pyrite train ... --export`)")
    return ""


def gzip_bytes(data: bytes) -> bytes:
    """gzip `data` with mtime 0, so equal records give equal files."""
    return gzip.compress(data, compresslevel=6, mtime=0)


def gunzip_bytes(data: bytes, codec: Codec, *, source: str) -> bytes:
    """Undo `gzip_bytes`; RecordError for data that is not gzip, or is truncated or corrupt.

    gzip carries a CRC-32 of its content, so corruption anywhere is caught here. `codec` is the
    format expected inside, named in errors. Data that would inflate past
    `limits.inflate_limit` is refused before it is all decompressed.
    """
    expected = f"{codec.description} inside gzip"
    if not data.startswith(GZIP_MAGIC):
        found = describe(data)
        plain = " (not compressed)" if found in _RECORDERS else ""
        raise RecordError(f"{source}: expected {expected}, found {found}{plain}"
                          f"{_hint(found, False)}")
    return gunzip_limited(data, source=source, expected=expected)
