"""The binary format's documented layout, byte for byte."""

import struct
import zlib

import pytest

from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.errors import RecordError
from pyrite.record.bin_codec import BIN


def framed(payload: bytes) -> bytes:
    return b"PYRB" + struct.pack("<HQ", 1, len(payload)) + payload + \
        struct.pack("<I", zlib.crc32(payload))


def test_layout_of_a_small_envelope():
    value = {"a": 1, "t": TensorData([1.5], dtype="f32")}
    payload = (b"\x07\x02"                        # dict of 2
               b"\x01a" b"\x03\x02"               # "a": int 1 (zigzag 2)
               b"\x01t" b"\x08\x01\x01\x01"       # "t": tensor f32, rank 1, dim 1
               + struct.pack("<f", 1.5))
    assert BIN.encode(value) == framed(payload)
    assert BIN.decode(framed(payload), source="x") == value


@pytest.mark.parametrize(("value", "body"), [
    (None, b"\x00"), (False, b"\x01"), (True, b"\x02"),
    (0, b"\x03\x00"), (-1, b"\x03\x01"), (1, b"\x03\x02"), (-64, b"\x03\x7f"),
    (64, b"\x03\x80\x01"), (150, b"\x03\xac\x02"),
    (2**63 - 1, b"\x03" + b"\xfe" + b"\xff" * 8 + b"\x01"),
    (-(2**63), b"\x03" + b"\xff" * 9 + b"\x01"),
    (0.5, b"\x04" + struct.pack("<d", 0.5)),
    ("hé", b"\x05\x03h\xc3\xa9"),
    ([1, None], b"\x06\x02\x03\x02\x00"),
    ({}, b"\x07\x00"),
    (TensorData([True, False]), b"\x08\x08\x01\x02\x01\x00"),
    (TensorData([[1], [2]], dtype="u8"), b"\x08\x07\x02\x02\x01\x01\x02"),
    (TensorData(3, dtype="i16"), b"\x08\x05\x00\x03\x00"),
    (TensorData([], shape=(0, 300), dtype="f64"), b"\x08\x00\x02\x00\xac\x02"),
])
def test_value_encodings(value, body):
    assert BIN.encode(value) == framed(body)
    assert BIN.decode(framed(body), source="x") == value


def test_dtype_codes_are_fixed():
    codes = {dt: BIN.encode(TensorData([], shape=(0,), dtype=dt))[15] for dt in DType}
    assert [codes[dt] for dt in (DType.F64, DType.F32, DType.F16, DType.I64, DType.I32,
                                 DType.I16, DType.I8, DType.U8, DType.BOOL)] == list(range(9))


@pytest.mark.parametrize(("payload", "message"), [
    (b"\x09", "unknown tag 0x09 at offset 0"),
    (b"\x08\x09\x00", "unknown dtype code 9 at offset 1"),
    (b"\x08\x01\x01\x02\x00\x00\x80\x3f",  # f32 x 2 needs 8 bytes, has 4
     "8 bytes needed at offset 4, 4 left"),
    (b"\x03\x80", "bad or truncated varint at offset 1"),
    (b"\x05\x02\xff\xfe", "utf-8"),
])
def test_payloads_that_do_not_parse(payload, message):
    with pytest.raises(RecordError) as err:
        BIN.decode(framed(payload), source="m.bin")
    text = str(err.value)
    assert text.startswith("m.bin: expected a pyrite binary record, found a payload that does "
                           "not parse (")
    assert message in text


def test_stray_bytes_inside_the_payload():
    with pytest.raises(RecordError, match="found 1 stray bytes after the payload"):
        BIN.decode(framed(b"\x00\x00"), source="m.bin")


def test_newer_version_asks_for_an_upgrade():
    data = bytearray(framed(b"\x00"))
    data[4] = 2
    with pytest.raises(RecordError, match="binary format version 2; this pyrite reads up to "
                                          "version 1: upgrade pyrite"):
        BIN.decode(bytes(data), source="m.bin")


def test_truncated_header():
    with pytest.raises(RecordError, match=r"found a truncated header \(10 of 14 bytes\)"):
        BIN.decode(framed(b"\x00")[:10], source="m.bin")
