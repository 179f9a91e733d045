"""What a record file cannot sneak past loading: flipped bytes (checksums), versions that do not
exist, values of the wrong kind for a param, non-finite weights (a warning), deep nesting and
gzip bombs."""

from __future__ import annotations

import gzip
import json
import random
import struct
import warnings

import pytest

from pyrite import nn
from pyrite.data import TensorData
from pyrite.errors import RecordError, RecordWarning
from pyrite.record import (
    BinBytesRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
)
from pyrite.record.limits import MAX_DEPTH, gunzip_limited, inflate_limit

RECORD = {"fc": {"weight": TensorData([[0.25, -0.5], [1.5, 2.0]]), "bias": TensorData([0.1, 0.2])},
          "epoch": 3}


def _mutants(blob: bytes, region: range) -> list[bytes]:
    return [blob[:i] + bytes([blob[i] ^ 1]) + blob[i + 1:] for i in region]


@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder(), PrettyJsonFileRecorder()],
                         ids=["mpk", "json"])
def test_every_flipped_bit_in_the_record_is_refused(recorder) -> None:
    blob = recorder.to_bytes(RECORD)
    item = blob.index(b"item")
    accepted = []
    for i, bad in enumerate(_mutants(blob, range(item, len(blob)))):
        try:
            back = recorder.from_bytes(bad)
        except RecordError:
            continue
        if back != RECORD:
            accepted.append(item + i)
    assert accepted == []  # JSON whitespace may change freely; a value never silently


def test_flipped_version_bytes_are_refused() -> None:
    blob = bytearray(NamedMpkFileRecorder().to_bytes(RECORD))
    at = blob.index(b"format_version") + len(b"format_version")
    assert blob[at] == 2  # a positive fixint
    for value, message in [(0, "version 0 does not exist"), (0xF9, "version -7 does not exist"),
                           (1, "checksum mismatch: the file is corrupt"),
                           (3, "version 3 was written by .* upgrade pyrite")]:
        blob[at] = value
        with pytest.raises(RecordError, match=message):
            NamedMpkFileRecorder().from_bytes(bytes(blob))


def test_binary_header_version_zero_is_refused() -> None:
    blob = bytearray(BinBytesRecorder().to_bytes(RECORD))
    blob[4] = 0
    with pytest.raises(RecordError, match="binary format version 0 does not exist"):
        BinBytesRecorder().from_bytes(bytes(blob))


def test_version_two_without_checksum_is_refused_and_version_one_loads() -> None:
    text = json.loads(PrettyJsonFileRecorder().to_bytes(RECORD))
    del text["metadata"]["checksum"]
    with pytest.raises(RecordError, match="version 2 carries a checksum, but this file has none"):
        PrettyJsonFileRecorder().from_bytes(json.dumps(text).encode())
    text["metadata"]["format_version"] = 1  # a file written before checksums
    assert PrettyJsonFileRecorder().from_bytes(json.dumps(text).encode()) == RECORD


def test_gzip_bomb_is_refused_before_it_is_inflated() -> None:
    bomb = gzip.compress(bytes(64 << 20), mtime=0)
    assert 64 << 20 > inflate_limit(len(bomb))
    with pytest.raises(RecordError, match="decompresses to more than .* decompression bomb"):
        NamedMpkGzFileRecorder().from_bytes(bomb)


def test_gzip_of_an_all_zero_model_within_the_slack_loads() -> None:
    record = {"w": TensorData([0.0] * 100_000)}
    blob = JsonGzFileRecorder().to_bytes(record)
    assert JsonGzFileRecorder().from_bytes(blob) == record


def test_gunzip_reads_members_of_several_pieces_and_refuses_stray_bytes() -> None:
    # incompressible members larger than the 64 KiB input pieces, one after the other
    rng = random.Random(0)
    parts = [rng.randbytes(200_000), rng.randbytes(70_000), b"x" * 10]
    stream = b"".join(gzip.compress(p, mtime=0) for p in parts)
    assert gunzip_limited(stream, source="s", expected="e") == b"".join(parts)
    assert gunzip_limited(stream + bytes(9), source="s", expected="e") == b"".join(parts)
    with pytest.raises(RecordError, match="found 3 stray bytes after the gzip stream"):
        gunzip_limited(stream + b"abc", source="s", expected="e")
    with pytest.raises(RecordError, match="found a truncated gzip stream"):
        gunzip_limited(stream[:-5], source="s", expected="e")


def test_mpk_stray_bytes_and_a_large_metadata() -> None:
    from pyrite.record.mpk_codec import MPK
    envelope = {"metadata": {"format": "named-mpk", "format_version": 2, "pad": "p" * 300_000},
                "item": {"w": TensorData([1.0, 2.0])}}
    blob = MPK.encode(envelope)  # metadata past the first 64 KiB piece fed to the unpacker
    decoded = MPK.decode(blob, source="m")
    assert isinstance(decoded, dict) and decoded["item"] == {"w": TensorData([1.0, 2.0])}
    assert decoded["metadata"]["pad"] == "p" * 300_000
    with pytest.raises(RecordError, match="found 2 stray bytes after it"):
        MPK.decode(blob + b"\x00\x00", source="m")
    with pytest.raises(RecordError, match="truncated or corrupt"):
        MPK.decode(blob[:100_000], source="m")


def test_deep_nesting_is_refused() -> None:
    deep: object = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    text = json.loads(PrettyJsonFileRecorder().to_bytes({"x": 1}))
    text["item"]["x"] = deep
    text["metadata"]["format_version"] = 1
    del text["metadata"]["checksum"]
    with pytest.raises(RecordError, match="nests containers more than 64 deep"):
        PrettyJsonFileRecorder().from_bytes(json.dumps(text).encode())
    very = b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b', "item": {}}'
    with pytest.raises(RecordError, match="truncated or corrupt JSON"):
        PrettyJsonFileRecorder().from_bytes(very)


def _linear_record(weight: TensorData) -> dict[str, object]:
    model = nn.LinearConfig(2, 2).init("numpy")
    record = model.into_record()
    record["weight"] = weight
    return record


def test_bool_or_int_values_never_load_into_a_float_param() -> None:
    model = nn.LinearConfig(2, 2).init("numpy")
    for weight, kind in [(TensorData([[True, False], [False, True]]), "bool"),
                         (TensorData([[1, 2], [3, 4]]), "int")]:
        with pytest.raises(RecordError, match=rf"m\.mpk: 'weight' holds \w+ \({kind}\) values in "
                                              rf"the file, float in the model"):
            model.load_record(_linear_record(weight), source="m.mpk")


def test_non_finite_weights_load_with_a_warning() -> None:
    model = nn.LinearConfig(2, 2).init("numpy")
    record = _linear_record(TensorData([[float("nan"), 1.0], [2.0, float("inf")]]))
    with pytest.warns(RecordWarning, match=r"m\.mpk: 1 tensor\(s\) hold NaN or infinite values: "
                                           r"weight"):
        model.load_record(record, source="m.mpk")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.load_record(_linear_record(TensorData([[0.0, 1.0], [2.0, 3.0]])))


def test_bin_crc_covers_every_payload_byte() -> None:
    blob = BinBytesRecorder().to_bytes(RECORD)
    (length,) = struct.unpack_from("<Q", blob, 6)
    for bad in _mutants(blob, range(14, 14 + length)):
        with pytest.raises(RecordError, match="checksum mismatch"):
            BinBytesRecorder().from_bytes(bad)


@pytest.mark.parametrize("version", ["0", "-7", "1e3", "x", "99"])
def test_safetensors_record_versions_are_checked_exactly(version: str) -> None:
    from pyrite.interop import safetensors as st
    from pyrite.interop.safetensors import SafetensorsFileRecorder
    meta = {"pyrite.format": "safetensors", "pyrite.format_version": version,
            "pyrite.precision": "full"}
    blob = st.dumps({"w": TensorData([1.0])}, meta)
    message = "upgrade pyrite" if version == "99" else "the file is corrupt"
    with pytest.raises(RecordError, match=message):
        SafetensorsFileRecorder().from_bytes(blob)
