"""pyrite's compact binary record format ("bin"), written and read with the standard library only.

Layout of a file (all integers little-endian)::

    offset   size  field
    0        4     magic b"PYRB"
    4        2     format version, u16 (1)
    6        8     payload length N, u64
    14       N     payload: the envelope, encoded as one value (below)
    14+N     4     CRC-32 (zlib) of the payload, u32

A value is one tag byte followed by its body. Lengths, counts and sizes are unsigned LEB128
varints (7 bits a byte, low bits first, high bit set on all but the last byte; at most 10
bytes), so small ones take one byte:

    0x00 None        (no body)
    0x01 False       (no body)
    0x02 True        (no body)
    0x03 int         zigzag varint: n >= 0 as 2n, n < 0 as -2n - 1 (fits int64)
    0x04 float       f64
    0x05 str         varint byte length, UTF-8 bytes
    0x06 list        varint count, then `count` values
    0x07 dict        varint count, then `count` times: key (varint byte length, UTF-8), value
    0x08 tensor      u8 dtype code, varint rank, rank varint dims, then the element bytes
                     (product of dims x itemsize of the dtype; the TensorData bytes as they are)

dtype codes: 0 f64, 1 f32, 2 f16, 3 i64, 4 i32, 5 i16, 6 i8, 7 u8, 8 bool. Codes and tags are
never reused; a new kind of value gets a new tag and a new format version.
"""

from __future__ import annotations

import math
import struct
import zlib
from typing import ClassVar

from ..data import TensorData
from ..dtype import DType
from ..errors import RecordError
from .codec import BIN_MAGIC, Codec
from .limits import check_depth
from .tree import RecordValue

_HEADER = struct.Struct("<4sHQ")
_CRC = struct.Struct("<I")
_F64 = struct.Struct("<d")
_NONE, _FALSE, _TRUE, _INT, _FLOAT, _STR, _LIST, _DICT, _TENSOR = range(9)
_DTYPE_CODES = [DType.F64, DType.F32, DType.F16, DType.I64, DType.I32, DType.I16, DType.I8,
                DType.U8, DType.BOOL]
_CODE_OF = {dt: code for code, dt in enumerate(_DTYPE_CODES)}


class _Corrupt(Exception):
    """Internal: the payload does not parse; becomes a RecordError naming the file."""


class BinCodec(Codec):
    """The format described in the module docstring."""

    name: ClassVar[str] = "bin"
    version: ClassVar[int] = 1
    description: ClassVar[str] = "a pyrite binary record"
    data_name: ClassVar[str] = "pyrite binary data"

    def encode(self, envelope: dict[str, RecordValue]) -> bytes:
        out: list[bytes] = []
        _write(envelope, out)
        payload = b"".join(out)
        return b"".join([_HEADER.pack(BIN_MAGIC, self.version, len(payload)), payload,
                         _CRC.pack(zlib.crc32(payload))])

    def decode(self, data: bytes, *, source: str) -> object:
        self.expect(data, source=source)
        if len(data) < _HEADER.size:
            raise RecordError(f"{source}: expected {self.description}, found a truncated "
                              f"header ({len(data)} of {_HEADER.size} bytes)")
        _, version, length = _HEADER.unpack_from(data)
        if version > self.version:
            raise RecordError(f"{source}: binary format version {version}; this pyrite reads up "
                              f"to version {self.version}: upgrade pyrite")
        if version < 1:
            raise RecordError(f"{source}: binary format version {version} does not exist "
                              f"(versions start at 1): the file is corrupt")
        end = _HEADER.size + length
        if len(data) != end + _CRC.size:
            state = "truncated" if len(data) < end + _CRC.size else "longer than its header says"
            raise RecordError(f"{source}: expected {self.description} of {end + _CRC.size} bytes "
                              f"(as its header says), found {len(data)} bytes: the file is "
                              f"{state}")
        payload = memoryview(data)[_HEADER.size:end]
        (crc,) = _CRC.unpack_from(data, end)
        if zlib.crc32(payload) != crc:
            raise RecordError(f"{source}: expected {self.description}, found a checksum "
                              f"mismatch: the file is corrupt")
        try:
            value, pos = _read(payload, 0)
        except (_Corrupt, struct.error, UnicodeDecodeError, RecursionError) as err:
            raise RecordError(f"{source}: expected {self.description}, found a payload that does "
                              f"not parse ({err or type(err).__name__})") from err
        check_depth(value, source=source)
        if pos != len(payload):
            raise RecordError(f"{source}: expected {self.description}, found "
                              f"{len(payload) - pos} stray bytes after the payload")
        return value


def _write(value: RecordValue, out: list[bytes]) -> None:
    # bool before int: bool is an int subclass
    if value is None:
        out.append(b"\x00")
    elif value is False or value is True:
        out.append(b"\x02" if value else b"\x01")
    elif isinstance(value, int):
        out.append(b"\x03" + _varint(value * 2 if value >= 0 else -2 * value - 1))
    elif isinstance(value, float):
        out.append(b"\x04" + _F64.pack(value))
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        out.append(b"\x05" + _varint(len(raw)) + raw)
    elif isinstance(value, (list, tuple)):
        out.append(b"\x06" + _varint(len(value)))
        for item in value:
            _write(item, out)
    elif isinstance(value, dict):
        out.append(b"\x07" + _varint(len(value)))
        for key, item in value.items():
            raw = key.encode("utf-8")
            out.append(_varint(len(raw)) + raw)
            _write(item, out)
    elif isinstance(value, TensorData):
        dims = b"".join(_varint(d) for d in value.shape)
        out.append(bytes([_TENSOR, _CODE_OF[value.dtype]]) + _varint(len(value.shape)) + dims)
        out.append(value.bytes)
    else:
        raise TypeError(f"bin codec: cannot encode {type(value).__name__}")  # validated before


def _take(buf: memoryview, pos: int, size: int) -> tuple[memoryview, int]:
    if pos + size > len(buf):
        raise _Corrupt(f"{size} bytes needed at offset {pos}, {len(buf) - pos} left")
    return buf[pos:pos + size], pos + size


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    n = shift = 0
    for i in range(pos, min(pos + 10, len(buf))):
        n |= (buf[i] & 0x7F) << shift
        if buf[i] < 0x80:
            return n, i + 1
        shift += 7
    raise _Corrupt(f"bad or truncated varint at offset {pos}")


def _read_str(buf: memoryview, pos: int) -> tuple[str, int]:
    size, pos = _read_varint(buf, pos)
    raw, pos = _take(buf, pos, size)
    return str(raw, "utf-8"), pos


def _read(buf: memoryview, pos: int) -> tuple[RecordValue, int]:
    raw_tag, pos = _take(buf, pos, 1)
    tag = raw_tag[0]
    if tag <= _TRUE:
        return (None, False, True)[tag], pos
    if tag == _INT:
        zigzag, pos = _read_varint(buf, pos)
        return zigzag >> 1 if zigzag % 2 == 0 else -(zigzag >> 1) - 1, pos
    if tag == _FLOAT:
        return _F64.unpack_from(buf, pos)[0], pos + 8
    if tag == _STR:
        return _read_str(buf, pos)
    if tag == _LIST:
        count, pos = _read_varint(buf, pos)
        items: list[RecordValue] = []
        for _ in range(count):
            item, pos = _read(buf, pos)
            items.append(item)
        return items, pos
    if tag == _DICT:
        count, pos = _read_varint(buf, pos)
        node: dict[str, RecordValue] = {}
        for _ in range(count):
            key, pos = _read_str(buf, pos)
            node[key], pos = _read(buf, pos)
        return node, pos
    if tag == _TENSOR:
        code, pos = _take(buf, pos, 1)
        if code[0] >= len(_DTYPE_CODES):
            raise _Corrupt(f"unknown dtype code {code[0]} at offset {pos - 1}")
        dt = _DTYPE_CODES[code[0]]
        rank, pos = _read_varint(buf, pos)
        dims = []
        for _ in range(rank):
            dim, pos = _read_varint(buf, pos)
            dims.append(dim)
        shape = tuple(dims)
        raw, pos = _take(buf, pos, math.prod(shape) * dt.itemsize)
        return TensorData.raw(bytes(raw), shape, dt), pos
    raise _Corrupt(f"unknown tag 0x{tag:02x} at offset {pos - 1}")


BIN = BinCodec()
