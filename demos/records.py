"""A demo's record from a file or from its bytes (as a page fetches them), with the name
errors give it: what the demos' `load` functions share before `init_from_record`."""

from __future__ import annotations

from pathlib import Path

from pyrite.errors import RecordError
from pyrite.record import BinBytesRecorder, BinFileRecorder, Record


def read_bin(record: Path | bytes) -> tuple[Record, str]:
    """(the binary record `record` holds, its name for messages); RecordError naming the
    file when there is none (the recorder's extension is added to a path without one)."""
    if isinstance(record, bytes):
        return BinBytesRecorder().from_bytes(record), "record"
    path = BinFileRecorder().path_for(record)
    if not path.exists():
        raise RecordError(f"{path}: no such file; save one with module.save_file(...) or "
                          f"check the path")
    return BinFileRecorder().load(path), str(path)


__all__ = ["read_bin"]
