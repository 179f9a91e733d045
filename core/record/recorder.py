"""Recorders: a precision setting + a format (+ gzip) that save records and load them back.

| recorder                 | format        | gzip | extension  |
|--------------------------|---------------|------|------------|
| `NamedMpkFileRecorder`   | named-mpk     | no   | `.mpk`     |
| `NamedMpkGzFileRecorder` | named-mpk     | yes  | `.mpk.gz`  |
| `BinFileRecorder`        | bin           | no   | `.bin`     |
| `BinGzFileRecorder`      | bin           | yes  | `.bin.gz`  |
| `PrettyJsonFileRecorder` | json, indented| no   | `.json`    |
| `JsonGzFileRecorder`     | json, compact | yes  | `.json.gz` |
| `BinBytesRecorder`       | bin           | no   | (in memory)|

`DefaultFileRecorder` is `NamedMpkFileRecorder`. Every recorder also has `to_bytes` and
`from_bytes`, so a page can fetch a record file and decode it without touching the file system;
`BinBytesRecorder` reads the bytes of a `.bin` file.

Loading returns tensors in the dtypes the file holds (the saving recorder's precision, whatever
the loading recorder's is); `convert_record` turns them into the dtypes a model wants.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..errors import RecordError
from .atomic import atomic_write
from .bin_codec import BIN
from .codec import Codec, gunzip_bytes, gzip_bytes
from .json_codec import COMPACT_JSON, PRETTY_JSON
from .metadata import RecordMetadata, pyrite_version, unwrap, wrap
from .mpk_codec import MPK
from .precision import FullPrecision, PrecisionSettings
from .tree import Record, validate_record

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Recorder:
    """Turns records into bytes and back with one precision setting and one format.

    A base class: the concrete recorders below fix `codec` and `gzip`. The precision applies
    when saving; it is recorded in the file's metadata.

    >>> blob = BinBytesRecorder(FullPrecision()).to_bytes({"epoch": 3}, item_type="Mnist")
    >>> BinBytesRecorder().from_bytes_with_metadata(blob)  # doctest: +ELLIPSIS
    ({'epoch': 3}, RecordMetadata(format='bin', format_version=1, precision=FullPrecision(), \
pyrite_version='...', item_type='Mnist'))
    """

    precision: PrecisionSettings = field(default_factory=FullPrecision)
    codec: ClassVar[Codec]
    gzip: ClassVar[bool] = False

    def to_bytes(self, record: Record, *, item_type: str | None = None,
                 source: str = "record") -> bytes:
        """The record as this recorder's bytes; `item_type` names what it is, for loaders.

        Raises RecordError for values a record cannot hold, and ConversionOverflow when a tensor
        does not fit the precision setting (70000.0 under HalfPrecision).
        """
        validate_record(record, source=source)
        meta = RecordMetadata(self.codec.name, self.codec.version, self.precision,
                              pyrite_version(), item_type)
        data = self.codec.encode(wrap(self.precision.apply(record), meta))
        return gzip_bytes(data) if self.gzip else data

    def from_bytes(self, data: bytes, *, item_type: str | None = None,
                   source: str = "<bytes>") -> Record:
        """The record in `data`; with `item_type`, RecordError unless the file says the same."""
        return self.from_bytes_with_metadata(data, item_type=item_type, source=source)[0]

    def from_bytes_with_metadata(self, data: bytes, *, item_type: str | None = None,
                                 source: str = "<bytes>") -> tuple[Record, RecordMetadata]:
        """`from_bytes`, plus what the file says about itself."""
        data = bytes(data)
        if self.gzip:
            data = gunzip_bytes(data, self.codec, source=source)
            self.codec.expect(data, source=source, compressed=True)
        record, meta = unwrap(self.codec.decode(data, source=source), self.codec, source=source)
        if item_type is not None and meta.item_type != item_type:
            raise RecordError(f"{source}: expected a record of {item_type!r}, found one of "
                              f"{meta.item_type!r}")
        return record, meta


@dataclass(frozen=True)
class BinBytesRecorder(Recorder):
    """The binary format in memory: embed a model's `.bin` file in a page or a package."""

    codec: ClassVar[Codec] = BIN


@dataclass(frozen=True)
class FileRecorder(Recorder):
    """A recorder that writes files, with a fixed extension (a base class, like Recorder).

    The extension is appended when the path has no suffix at all ("model" -> "model.mpk"); a
    path with any suffix ("model.mpk", "model.epoch3") is used as given. Saving is atomic: see
    `atomic.py`.
    """

    extension: ClassVar[str]

    def path_for(self, path: PathLike) -> Path:
        """Where `save` writes and `load` reads for `path`.

        >>> NamedMpkFileRecorder().path_for("ckpt/model").name
        'model.mpk'
        >>> NamedMpkGzFileRecorder().path_for("ckpt/model.epoch3").name
        'model.epoch3'
        """
        p = Path(path)
        return p if p.suffix else p.with_name(p.name + self.extension)

    def save(self, record: Record, path: PathLike, *, item_type: str | None = None) -> Path:
        """Write `record` to `path` (extension added as `path_for` says); return the path."""
        target = self.path_for(path)
        atomic_write(target, lambda f: f.write(self.to_bytes(record, item_type=item_type,
                                                              source=str(target))))
        return target

    def load(self, path: PathLike, *, item_type: str | None = None) -> Record:
        """The record saved at `path` by a recorder of this format (any precision).

        RecordError names the file, the format expected and what the file holds instead.
        """
        return self.load_with_metadata(path, item_type=item_type)[0]

    def load_with_metadata(self, path: PathLike, *,
                           item_type: str | None = None) -> tuple[Record, RecordMetadata]:
        """`load`, plus what the file says about itself (format, precision, pyrite version)."""
        target = self.path_for(path)
        return self.from_bytes_with_metadata(target.read_bytes(), item_type=item_type,
                                             source=str(target))


@dataclass(frozen=True)
class NamedMpkFileRecorder(FileRecorder):
    """Named MessagePack: readable by any MessagePack library; the default recorder."""

    codec: ClassVar[Codec] = MPK
    extension: ClassVar[str] = ".mpk"


@dataclass(frozen=True)
class NamedMpkGzFileRecorder(FileRecorder):
    """Named MessagePack, gzipped: smaller, and gzip's CRC catches corruption."""

    codec: ClassVar[Codec] = MPK
    gzip: ClassVar[bool] = True
    extension: ClassVar[str] = ".mpk.gz"


@dataclass(frozen=True)
class BinFileRecorder(FileRecorder):
    """pyrite's binary format: the smallest uncompressed files, standard library only."""

    codec: ClassVar[Codec] = BIN
    extension: ClassVar[str] = ".bin"


@dataclass(frozen=True)
class BinGzFileRecorder(FileRecorder):
    """pyrite's binary format, gzipped."""

    codec: ClassVar[Codec] = BIN
    gzip: ClassVar[bool] = True
    extension: ClassVar[str] = ".bin.gz"


@dataclass(frozen=True)
class PrettyJsonFileRecorder(FileRecorder):
    """Indented JSON with values as numbers: for reading and diffing weights, not for size."""

    codec: ClassVar[Codec] = PRETTY_JSON
    extension: ClassVar[str] = ".json"


@dataclass(frozen=True)
class JsonGzFileRecorder(FileRecorder):
    """Compact JSON, gzipped: text inside, portable to anything that reads gzip and JSON."""

    codec: ClassVar[Codec] = COMPACT_JSON
    gzip: ClassVar[bool] = True
    extension: ClassVar[str] = ".json.gz"


DefaultFileRecorder = NamedMpkFileRecorder
