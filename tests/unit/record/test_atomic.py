"""Atomic saves: a failed save leaves the old file as it was and no temporary file behind."""

import os
import sys

import pytest

from pyrite.data import TensorData
from pyrite.errors import ConversionOverflow, RecordError
from pyrite.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    HalfPrecision,
    NamedMpkFileRecorder,
    PrettyJsonFileRecorder,
    atomic_write,
)
from pyrite.record.mpk_codec import MpkCodec

OLD = {"w": TensorData([1.0, 2.0]), "epoch": 1}
NEW = {"w": TensorData([3.0, 4.0]), "epoch": 2}


def test_save_replaces_the_old_file_and_leaves_nothing_else(tmp_path):
    path = BinFileRecorder().save(OLD, tmp_path / "m")
    BinFileRecorder().save(NEW, tmp_path / "m")
    assert BinFileRecorder().load(path) == NEW
    assert os.listdir(tmp_path) == ["m.bin"]


def test_encoder_failing_mid_save_keeps_the_old_file(tmp_path, monkeypatch):
    path = NamedMpkFileRecorder().save(OLD, tmp_path / "m")
    before = path.read_bytes()
    seen = []

    def broken_encode(self, envelope):
        seen.extend(p.name for p in tmp_path.iterdir())  # the temporary file exists by now
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(MpkCodec, "encode", broken_encode)
    with pytest.raises(RuntimeError, match="disk on fire"):
        NamedMpkFileRecorder().save(NEW, tmp_path / "m")
    assert len(seen) == 2 and any(name.startswith(".m.mpk.") and name.endswith(".tmp")
                                  for name in seen)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.mpk"]
    monkeypatch.undo()
    assert NamedMpkFileRecorder().load(path) == OLD


def test_write_failing_after_some_bytes_keeps_the_old_file(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(b"old content")

    def half_then_fail(file):
        file.write(b"new con")
        raise OSError("no space left on device")

    with pytest.raises(OSError, match="no space left"):
        atomic_write(target, half_then_fail)
    assert target.read_bytes() == b"old content"
    assert os.listdir(tmp_path) == ["data.bin"]


def test_interrupt_mid_write_cleans_up(tmp_path):
    def interrupted(file):
        file.write(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "x.bin", interrupted)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("record", "error"), [
    ({"w": TensorData([70000.0])}, ConversionOverflow),  # does not fit f16
    ({"w": object()}, RecordError),
])
def test_a_record_that_cannot_be_saved_keeps_the_old_file(record, error, tmp_path):
    path = BinGzFileRecorder(HalfPrecision()).save(OLD, tmp_path / "m")
    before = path.read_bytes()
    with pytest.raises(error):
        BinGzFileRecorder(HalfPrecision()).save(record, tmp_path / "m")
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.bin.gz"]


def test_replace_failing_removes_the_temporary_file(tmp_path):
    (tmp_path / "m.json").mkdir()  # a directory where the file should go
    with pytest.raises(OSError):
        PrettyJsonFileRecorder().save(NEW, tmp_path / "m")
    assert os.listdir(tmp_path) == ["m.json"]
    assert os.listdir(tmp_path / "m.json") == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_new_files_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = atomic_write(tmp_path / "x", lambda f: f.write(b"x"))
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert path.read_bytes() == b"x"


def test_missing_directory_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        BinFileRecorder().save(NEW, tmp_path / "nope" / "m")
    assert os.listdir(tmp_path) == []
