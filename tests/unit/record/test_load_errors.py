"""Loading the wrong format, a truncated or a corrupt file: RecordError says where, what, which."""

import gzip
import json
import pickle
import struct

import pytest

from pyrite.data import TensorData
from pyrite.errors import RecordError
from pyrite.record import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
)
from pyrite.record.checksum import checksum_text

FILE_RECORDERS = [NamedMpkFileRecorder, NamedMpkGzFileRecorder, BinFileRecorder,
                  BinGzFileRecorder, PrettyJsonFileRecorder, JsonGzFileRecorder]
RECORD = {"fc1": {"weight": TensorData([[0.5] * 8] * 8), "bias": TensorData([1.0] * 8)},
          "epoch": 3, "name": "mnist"}
EXPECTED = {
    NamedMpkFileRecorder: "expected a pyrite named MessagePack record",
    NamedMpkGzFileRecorder: "expected a pyrite named MessagePack record inside gzip",
    BinFileRecorder: "expected a pyrite binary record",
    BinGzFileRecorder: "expected a pyrite binary record inside gzip",
    PrettyJsonFileRecorder: "expected a pyrite JSON record",
    JsonGzFileRecorder: "expected a pyrite JSON record inside gzip",
}
FOUND = {
    NamedMpkFileRecorder: "found a pyrite named MessagePack record; load it with "
                          "NamedMpkFileRecorder",
    BinFileRecorder: "found a pyrite binary record; load it with BinFileRecorder",
    PrettyJsonFileRecorder: "found a pyrite JSON record; load it with PrettyJsonFileRecorder",
}


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("writer", "reader"), [
    pytest.param(w, r, id=f"{w.__name__}-read-by-{r.__name__}")
    for w in FILE_RECORDERS for r in FILE_RECORDERS if w is not r])
def test_another_format_is_named_in_the_error(writer, reader, tmp_path):
    path = writer().save(RECORD, tmp_path / "model.ckpt")
    with pytest.raises(RecordError) as err:
        reader().load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: expected ")
    assert EXPECTED[reader] in message
    if reader.gzip and not writer.gzip:
        assert " inside gzip, " + FOUND[writer].replace(";", " (not compressed);") in message
    elif writer.gzip and not reader.gzip:
        assert "found gzip-compressed data; load it with a gzip recorder" in message
    elif writer.gzip and reader.gzip:
        plain = {NamedMpkGzFileRecorder: NamedMpkFileRecorder, BinGzFileRecorder: BinFileRecorder,
                 JsonGzFileRecorder: PrettyJsonFileRecorder}[writer]
        assert "inside gzip, " + FOUND[plain].replace(plain.__name__, writer.__name__) in message
    else:
        assert FOUND[writer] in message


def test_exact_message_for_a_gzip_file_read_as_plain_messagepack(tmp_path):
    path = NamedMpkGzFileRecorder().save(RECORD, tmp_path / "model")
    with pytest.raises(RecordError) as err:
        NamedMpkFileRecorder().load(path)
    assert str(err.value) == (
        f"{path}: expected a pyrite named MessagePack record, found gzip-compressed data; load "
        f"it with a gzip recorder (NamedMpkGzFileRecorder, BinGzFileRecorder or "
        f"JsonGzFileRecorder)")


@pytest.mark.parametrize("cls", FILE_RECORDERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("keep", [0.5, -3], ids=["half", "all-but-3-bytes"])
def test_truncated_file_is_a_record_error(cls, keep, tmp_path):
    path = cls().save(RECORD, tmp_path / "model")
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)] if keep > 0 else data[:keep])
    with pytest.raises(RecordError) as err:
        cls().load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: expected ")
    assert "truncated" in message


@pytest.mark.parametrize("cls", FILE_RECORDERS, ids=lambda c: c.__name__)
def test_empty_file(cls, tmp_path):
    path = write(tmp_path, "model.x", b"")
    with pytest.raises(RecordError, match="found an empty file"):
        cls().load(path)


@pytest.mark.parametrize("cls", [NamedMpkFileRecorder, BinFileRecorder, PrettyJsonFileRecorder])
def test_a_pickle_is_never_loaded(cls, tmp_path):
    path = write(tmp_path, "model.pt", pickle.dumps({"w": [1.0]}, protocol=4))
    with pytest.raises(RecordError, match=r"found a Python pickle \(pyrite never loads pickles\)"):
        cls().load(path)


def test_unrecognised_bytes_are_shown_in_hex(tmp_path):
    path = write(tmp_path, "model.bin", b"\x89PNG\r\n\x1a\n....")
    with pytest.raises(RecordError) as err:
        BinFileRecorder().load(path)
    assert str(err.value) == (f"{path}: expected a pyrite binary record, found unrecognised "
                              f"data starting with 89 50 4e 47 0d 0a 1a 0a; it is not a pyrite "
                              f"record: give a file pyrite wrote (Module.save_file, or "
                              f"`pyrite train ... --export`)")


@pytest.mark.parametrize("cls", [BinFileRecorder, BinGzFileRecorder, NamedMpkGzFileRecorder,
                                 JsonGzFileRecorder], ids=lambda c: c.__name__)
def test_a_flipped_byte_is_caught_by_the_checksum(cls, tmp_path):
    path = cls().save(RECORD, tmp_path / "model")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(RecordError, match="corrupt"):
        cls().load(path)


def test_bin_with_trailing_bytes(tmp_path):
    path = BinFileRecorder().save(RECORD, tmp_path / "model")
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(RecordError, match="the file is longer than its header says"):
        BinFileRecorder().load(path)


def test_messagepack_with_trailing_bytes(tmp_path):
    path = NamedMpkFileRecorder().save(RECORD, tmp_path / "model")
    path.write_bytes(path.read_bytes() + b"\x01\x02")
    with pytest.raises(RecordError, match="found 2 stray bytes after it"):
        NamedMpkFileRecorder().load(path)


def test_data_without_an_envelope(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    path = write(tmp_path, "m.mpk", msgpack.packb({"metadata": {}, "other": 1}))
    with pytest.raises(RecordError) as err:
        NamedMpkFileRecorder().load(path)
    assert str(err.value) == (f"{path}: expected a pyrite named MessagePack record, found "
                              f"MessagePack data without 'metadata' and 'item' at the top level")
    path = write(tmp_path, "m.json", b'{"weights": [1, 2]}')
    with pytest.raises(RecordError, match="found JSON data without 'metadata' and 'item'"):
        PrettyJsonFileRecorder().load(path)


def edited_json(tmp_path, edit):
    """A pretty JSON record file with its parsed content changed by `edit`."""
    path = PrettyJsonFileRecorder().save(RECORD, tmp_path / "model")
    content = json.loads(path.read_text())
    edit(content)
    meta = content["metadata"]
    if isinstance(meta, dict) and "checksum" in meta:  # signed again, as a deliberate edit is
        rest = {k: v for k, v in meta.items() if k != "checksum"}
        meta["checksum"] = checksum_text(*(json.dumps(part, separators=(",", ":")).encode()
                                           for part in (rest, content["item"])))
    path.write_text(json.dumps(content))
    return path


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c["metadata"].update(format_version=99),
     "json format version 99 was written by pyrite .*; this pyrite .* reads up to version 2: "
     "upgrade pyrite"),
    (lambda c: c["metadata"].update(format="bin"),
     "expected a pyrite JSON record, found metadata saying format 'bin'"),
    (lambda c: c["metadata"].pop("precision"),
     "metadata field 'precision': expected a str, found nothing"),
    (lambda c: c["metadata"].update(format_version="1"),
     r"metadata field 'format_version': expected a int, found a str \('1'\)"),
    (lambda c: c["metadata"].update(precision="quarter"), "unknown precision setting 'quarter'"),
    (lambda c: c["metadata"].update(item_type=5), "'item_type' is a int, expected a str or null"),
    (lambda c: c.update(item=[1]), r"the record \('item'\) is a list, expected a dict"),
    (lambda c: c["item"]["fc1"]["bias"].update(dtype="f128"),
     "tensor 'fc1.bias' has dtype 'f128', expected one of f64, f32"),
    (lambda c: c["item"]["fc1"]["bias"].update(shape=[2, -4]),
     r"tensor 'fc1.bias' has shape \[2, -4\], expected a list of sizes"),
    (lambda c: c["item"]["fc1"]["bias"].update(shape=[9]),
     r"tensor 'fc1.bias' \(f32, shape \(9,\)\): values do not match the shape: 8 items where 9"),
    (lambda c: c["item"]["fc1"]["bias"]["values"].__setitem__(0, "x"),
     r"tensor 'fc1.bias' \(f32, shape \(8,\)\): value 'x' is not a Float value"),
    (lambda c: c["item"]["fc1"]["bias"]["values"].__setitem__(0, 1e39),
     r"tensor 'fc1.bias' .*does not fit f32"),
])
def test_bad_json_content_is_named_precisely(edit, message, tmp_path):
    path = edited_json(tmp_path, edit)
    with pytest.raises(RecordError, match=message) as err:
        PrettyJsonFileRecorder().load(path)
    assert str(err.value).startswith(f"{path}: ")


def test_messagepack_tensor_with_wrong_byte_count(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    path = NamedMpkFileRecorder().save({"w": TensorData([1.0, 2.0])}, tmp_path / "m")
    content = msgpack.unpackb(path.read_bytes())
    content["item"]["w"]["bytes"] = struct.pack("<f", 1.0)
    del content["metadata"]["checksum"]  # a version-1 file has none, so its tensors are checked
    content["metadata"]["format_version"] = 1
    path.write_bytes(msgpack.packb(content))
    with pytest.raises(RecordError) as err:
        NamedMpkFileRecorder().load(path)
    assert str(err.value) == (f"{path}: tensor 'w' holds 4 bytes, but shape (2,) of f32 needs 8: "
                              f"the file is corrupt")


def test_item_type_is_checked_when_asked(tmp_path):
    path = BinFileRecorder().save(RECORD, tmp_path / "m", item_type="Mnist")
    assert BinFileRecorder().load(path, item_type="Mnist") == BinFileRecorder().load(path)
    with pytest.raises(RecordError) as err:
        BinFileRecorder().load(path, item_type="AdamState")
    assert str(err.value) == f"{path}: expected a record of 'AdamState', found one of 'Mnist'"


def test_bytes_recorder_errors_name_the_source():
    data = gzip.compress(b"x")
    with pytest.raises(RecordError, match="^<bytes>: expected a pyrite binary record, found gzip"):
        BinBytesRecorder().from_bytes(data)
    with pytest.raises(RecordError) as err:
        BinGzFileRecorder().from_bytes(BinBytesRecorder().to_bytes({"a": 1}))
    assert str(err.value) == ("<bytes>: expected a pyrite binary record inside gzip, found a "
                              "pyrite binary record (not compressed); load it with "
                              "BinFileRecorder or BinBytesRecorder")
    with pytest.raises(RecordError, match="^model.bin: expected"):
        BinBytesRecorder().from_bytes(b"nope", source="model.bin")


def test_missing_file_is_a_file_not_found_error_with_the_full_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="model.mpk"):
        NamedMpkFileRecorder().load(tmp_path / "model")


def test_missing_msgpack_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "msgpack", None)
    with pytest.raises(ModuleNotFoundError, match="pip install msgpack .*BinFileRecorder"):
        NamedMpkFileRecorder().to_bytes({"a": 1})
