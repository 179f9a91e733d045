"""Every recorder, precision and dtype round-trips, with metadata, extension and gzip."""

import gzip
import importlib.metadata
import json
import math
import random
import struct

import pytest

from pyrite.data import TensorData
from pyrite.dtype import DType, Kind
from pyrite.record import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    DefaultFileRecorder,
    DoublePrecision,
    FullPrecision,
    HalfPrecision,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    RecordMetadata,
    convert_record,
)

FILE_RECORDERS = [NamedMpkFileRecorder, NamedMpkGzFileRecorder, BinFileRecorder,
                  BinGzFileRecorder, PrettyJsonFileRecorder, JsonGzFileRecorder]
RECORDERS = [*FILE_RECORDERS, BinBytesRecorder]
PRECISIONS = [HalfPrecision(), FullPrecision(), DoublePrecision()]
# exact in every float dtype / in every int dtype, so conversions lose nothing
VALUES = {Kind.FLOAT: [0.0, -1.25, 0.5, 1024.0, 3.0, -0.0],
          Kind.INT: [0, 1, 7, 100, 127, 42], Kind.BOOL: [True, False, True, True, False, False]}


def roundtrip(recorder, record, tmp_path, **kw):
    """Save and load with one recorder, through a file when it writes files."""
    if isinstance(recorder, BinBytesRecorder):
        return recorder.from_bytes_with_metadata(recorder.to_bytes(record, **kw))
    path = recorder.save(record, tmp_path / "model", **kw)
    return recorder.load_with_metadata(path)


@pytest.mark.parametrize("dtype", list(DType), ids=lambda d: d.short)
@pytest.mark.parametrize("precision", PRECISIONS, ids=lambda p: p.name)
@pytest.mark.parametrize("cls", RECORDERS, ids=lambda c: c.__name__)
def test_round_trip_every_dtype(cls, precision, dtype, tmp_path):
    original = TensorData(VALUES[dtype.kind], shape=(2, 3), dtype=dtype)
    record = {"layer": {"param": original}, "epoch": 4}
    back, meta = roundtrip(cls(precision), record, tmp_path)
    stored = {Kind.FLOAT: precision.float_dtype, Kind.INT: precision.int_dtype,
              Kind.BOOL: DType.BOOL}[dtype.kind]
    loaded = back["layer"]["param"]
    assert loaded.dtype is stored
    assert loaded.shape == (2, 3)
    assert loaded.to_list() == original.convert(stored).to_list()
    assert back["epoch"] == 4
    assert meta.precision == precision
    float_dt = dtype if dtype.kind is Kind.FLOAT else None
    int_dt = dtype if dtype.kind is Kind.INT else None
    assert convert_record(back, float_dt, int_dt) == record


@pytest.mark.parametrize("cls", RECORDERS, ids=lambda c: c.__name__)
def test_round_trip_structure_shapes_and_special_values(cls, tmp_path):
    record = {
        "scalar": TensorData(2.5),
        "empty": TensorData([], shape=(0, 3), dtype="f32"),
        "empty_inner": TensorData([], shape=(2, 0), dtype="i32"),
        "cube": TensorData(list(range(24)), shape=(2, 3, 4), dtype="i32"),
        "specials": TensorData([float("inf"), -float("inf"), -0.0, 1e-30], dtype="f32"),
        "meta": {"name": "mnist", "lr": 0.1, "epoch": -3, "big": 2**63 - 1, "done": True,
                 "parent": None, "unicode": "ünï €", "nested": [[1, [2.5]], {"a": None}]},
        "optim": [{"step": 1, "moment": TensorData([0.25], dtype="f32")}],
        "": {"empty_key": 1},
    }
    back, _ = roundtrip(cls(), record, tmp_path)
    assert back == record
    assert back["scalar"].shape == ()
    assert back["empty_inner"].shape == (2, 0)


@pytest.mark.parametrize("cls", RECORDERS, ids=lambda c: c.__name__)
def test_nan_survives(cls, tmp_path):
    back, _ = roundtrip(cls(), {"w": TensorData([float("nan"), 1.0])}, tmp_path)
    value, one = back["w"].to_list()
    assert math.isnan(value) and one == 1.0


@pytest.mark.parametrize("cls", RECORDERS, ids=lambda c: c.__name__)
def test_tuples_come_back_as_lists(cls, tmp_path):
    back, _ = roundtrip(cls(), {"pair": (1, (2, "x"))}, tmp_path)
    assert back == {"pair": [1, [2, "x"]]}


@pytest.mark.parametrize("cls", RECORDERS, ids=lambda c: c.__name__)
def test_metadata_is_stored_and_read_back(cls, tmp_path):
    _, meta = roundtrip(cls(HalfPrecision()), {"x": 1}, tmp_path, item_type="Mnist")
    fmt = {NamedMpkFileRecorder: "named-mpk", NamedMpkGzFileRecorder: "named-mpk",
           PrettyJsonFileRecorder: "json", JsonGzFileRecorder: "json"}.get(cls, "bin")
    version = 1 if fmt == "bin" else 2  # version 2 added the checksum to mpk and json
    assert meta == RecordMetadata(format=fmt, format_version=version, precision=HalfPrecision(),
                                  pyrite_version=importlib.metadata.version("pyrite"),
                                  item_type="Mnist")
    _, meta = roundtrip(cls(), {"x": 1}, tmp_path)
    assert meta.item_type is None and meta.precision == FullPrecision()


def test_metadata_is_in_the_file_for_any_reader(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    path = NamedMpkFileRecorder(DoublePrecision()).save({"w": TensorData([1.0])},
                                                      tmp_path / "m", item_type="Net")
    raw = msgpack.unpackb(path.read_bytes())
    checksum = raw["metadata"].pop("checksum")
    assert raw["metadata"] == {"format": "named-mpk", "format_version": 2,
                               "pyrite_version": importlib.metadata.version("pyrite"),
                               "precision": "double", "float_dtype": "f64", "int_dtype": "i64",
                               "item_type": "Net"}
    assert checksum.startswith("crc32:") and len(checksum) == len("crc32:") + 8
    assert raw["item"] == {"w": {"dtype": "f64", "shape": [1],
                                 "bytes": struct.pack("<d", 1.0)}}


def test_loading_with_another_precision_keeps_the_stored_dtypes(tmp_path):
    path = BinFileRecorder(HalfPrecision()).save({"w": TensorData([0.5])}, tmp_path / "m")
    back, meta = BinFileRecorder(DoublePrecision()).load_with_metadata(path)
    assert back["w"] == TensorData([0.5], dtype="f16")
    assert meta.precision == HalfPrecision()


@pytest.mark.parametrize(("cls", "ext"), [
    (NamedMpkFileRecorder, ".mpk"), (NamedMpkGzFileRecorder, ".mpk.gz"),
    (BinFileRecorder, ".bin"), (BinGzFileRecorder, ".bin.gz"),
    (PrettyJsonFileRecorder, ".json"), (JsonGzFileRecorder, ".json.gz")])
def test_extension_is_appended_only_when_the_path_has_none(cls, ext, tmp_path):
    record = {"w": TensorData([1.0, 2.0])}
    path = cls().save(record, tmp_path / "model")
    assert path == tmp_path / f"model{ext}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"model{ext}"]
    assert cls().load(tmp_path / "model") == {"w": TensorData([1.0, 2.0])}
    assert cls().load(str(path)) == {"w": TensorData([1.0, 2.0])}
    assert cls().save(record, tmp_path / "model.epoch3") == tmp_path / "model.epoch3"


def test_default_recorder_is_named_messagepack():
    assert DefaultFileRecorder is NamedMpkFileRecorder
    assert DefaultFileRecorder() == NamedMpkFileRecorder(FullPrecision())


def test_recorders_are_frozen_values():
    assert BinFileRecorder(HalfPrecision()) == BinFileRecorder(HalfPrecision())
    assert BinFileRecorder(HalfPrecision()) != BinFileRecorder()
    assert repr(BinGzFileRecorder()) == "BinGzFileRecorder(precision=FullPrecision())"


@pytest.mark.parametrize(("gz", "plain", "head"), [
    (NamedMpkGzFileRecorder, NamedMpkFileRecorder, b"\x82\xa8metadata"),
    (BinGzFileRecorder, BinFileRecorder, b"PYRB"),
    (JsonGzFileRecorder, None, b'{"metadata":{"format":"json"'),
])
def test_gzip_variants_really_are_gzip(gz, plain, head, tmp_path):
    record = {"w": TensorData([0.0] * 1000)}
    path = gz().save(record, tmp_path / "m")
    data = path.read_bytes()
    assert data[:3] == b"\x1f\x8b\x08"  # gzip magic, deflate
    inner = gzip.decompress(data)
    assert inner.startswith(head)
    if plain is not None:
        assert inner == plain().to_bytes(record)
    assert len(data) < len(inner) / 5  # 4000 zero bytes compress well
    assert gz().save(record, tmp_path / "again").read_bytes() == data  # mtime 0: reproducible


def test_bin_bytes_recorder_reads_a_bin_file(tmp_path):
    record = {"w": TensorData([1.5, 2.5]), "epoch": 9}
    path = BinFileRecorder().save(record, tmp_path / "m")
    assert BinBytesRecorder().from_bytes(path.read_bytes()) == record
    assert BinBytesRecorder().to_bytes(record) == path.read_bytes()


def test_pretty_json_is_indented_and_readable(tmp_path):
    record = {"fc1": {"weight": TensorData([[0.1, 0.2, 0.3], [1.5, -2.0, 3e-05]]),
                      "bias": TensorData([1, 2], dtype="i32")}, "epoch": 3}
    text = PrettyJsonFileRecorder().save(record, tmp_path / "m").read_text()
    lines = text.splitlines()
    assert lines[:3] == ["{", '  "metadata": {', '    "format": "json",']
    i = lines.index('    "fc1": {')
    assert lines[i:i + 14] == [
        '    "fc1": {',
        '      "weight": {',
        '        "dtype": "f32",',
        '        "shape": [2, 3],',
        '        "values": [',
        "          [0.1, 0.2, 0.3],",  # f32 values in their shortest form
        "          [1.5, -2.0, 3e-05]",
        "        ]",
        "      },",
        '      "bias": {',
        '        "dtype": "i32",',
        '        "shape": [2],',
        '        "values": [1, 2]',
        "      }",
    ]
    assert text.endswith('  }\n}\n')
    assert json.loads(text)["item"]["epoch"] == 3


def test_compact_json_inside_gzip_has_no_indentation(tmp_path):
    path = JsonGzFileRecorder().save({"w": TensorData([[1.0, 2.0]])}, tmp_path / "m")
    text = gzip.decompress(path.read_bytes()).decode()
    assert "\n" not in text and ": " not in text
    assert json.loads(text)["item"] == {"w": {"dtype": "f32", "shape": [1, 2],
                                              "values": [[1.0, 2.0]]}}


@pytest.mark.parametrize("cls", [PrettyJsonFileRecorder, JsonGzFileRecorder])
def test_json_keeps_every_f32_and_f16_bit_pattern(cls):
    rng = random.Random(0)
    f32 = [struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0] for _ in range(3000)]
    f32 = [v for v in f32 if not math.isnan(v)]
    f16 = [struct.unpack("<e", struct.pack("<H", bits))[0] for bits in range(1 << 16)]
    f16 = [v for v in f16 if not math.isnan(v)]
    record = {"a": TensorData(f32, dtype="f32")}
    assert cls().from_bytes(cls().to_bytes(record)) == record
    record = {"b": TensorData(f16, dtype="f16")}
    assert cls(HalfPrecision()).from_bytes(cls(HalfPrecision()).to_bytes(record)) == record


def test_bin_is_the_most_compact_uncompressed_format():
    record = {f"layer{i}": {"weight": TensorData([[0.5] * 4] * 4), "bias": TensorData([0.5] * 4)}
              for i in range(20)}
    sizes = {cls.__name__: len(cls().to_bytes(record))
             for cls in (BinFileRecorder, NamedMpkFileRecorder, PrettyJsonFileRecorder)}
    assert sizes["BinFileRecorder"] < sizes["NamedMpkFileRecorder"] < \
        sizes["PrettyJsonFileRecorder"]
    tensor_bytes = 20 * (16 + 4) * 4
    assert sizes["BinFileRecorder"] < tensor_bytes + 800  # under 40 bytes of overhead a layer
