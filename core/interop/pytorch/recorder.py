"""`PyTorchFileRecorder`: `.pt` files as records, for `Module.load_file`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ...errors import RecordError
from ...record.metadata import RecordMetadata
from ...record.precision import FullPrecision
from ...record.recorder import FileRecorder
from ...record.tree import Record, RecordValue, unflatten_record
from .loader import PathLike, _read_bytes, loads

# ---- a recorder, for Module.load_file ---------------------------------------------------------

@dataclass(frozen=True)
class PyTorchFileRecorder(FileRecorder):
    """Reads `.pt`/`.pth` files as records (`module.load_file(path, PyTorchFileRecorder())`).

    The tensors, after `top_key`, `remap` and `contiguous_sequential` (see `load`), become a
    record nested by dotted name. Use `load_into` for automatic Sequential renumbering and
    partial loading. Writing is not supported: save pyrite records or safetensors instead.
    """

    top_key: str | None = None
    remap: tuple[tuple[str, str], ...] = ()
    contiguous_sequential: bool = False
    debug: bool = False

    extension: ClassVar[str] = ".pt"
    format_name: ClassVar[str] = "pytorch"
    format_version: ClassVar[int] = 1

    def to_bytes(self, record: Record, *, item_type: str | None = None,
                 source: str = "record") -> bytes:
        raise RecordError(f"{source}: pyrite does not write PyTorch files; save a pyrite record "
                          f"or a .safetensors file instead")

    def save(self, record: Record, path: PathLike, *, item_type: str | None = None) -> Path:
        raise RecordError(f"{path}: pyrite does not write PyTorch files; save a pyrite record "
                          f"or a .safetensors file instead")

    def path_for(self, path: PathLike) -> Path:
        target = Path(path)
        return target if target.suffix else target.with_suffix(self.extension)

    def from_bytes_with_metadata(self, data: bytes, *, item_type: str | None = None,
                                 source: str = "<bytes>") -> tuple[Record, RecordMetadata]:
        tensors = loads(data, top_key=self.top_key, remap=self.remap or None,
                        contiguous_sequential=self.contiguous_sequential, debug=self.debug,
                        source=source)
        flat: dict[str, RecordValue] = dict(tensors)
        return unflatten_record(flat), RecordMetadata(self.format_name, self.format_version,
                                                      FullPrecision(), "unknown", None)

    def load_with_metadata(self, path: PathLike, *,
                           item_type: str | None = None) -> tuple[Record, RecordMetadata]:
        data, source = _read_bytes(self.path_for(path))
        return self.from_bytes_with_metadata(data, source=source)

