"""The metadata every record file carries, and the envelope that holds it beside the record.

Every format stores one top-level dict, the envelope: `{"metadata": {...}, "item": record}`.
The metadata says which format and version wrote the file, which pyrite, which precision
setting, and optionally what the record is (`item_type`, e.g. "Mnist" or "AdamState").

This module owns the envelope's layout and its checks; codecs turn it into bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

from ..errors import RecordError
from .checksum import CHECKSUM_KEY
from .codec import Codec
from .precision import PrecisionSettings, precision_named
from .tree import Record, RecordValue

ENVELOPE_KEYS = ("metadata", "item")

T = TypeVar("T")


@cache
def pyrite_version() -> str:
    """This pyrite's version (`pyrite.__version__`, which the package's metadata repeats).
    Not read through importlib.metadata: in a page that parses METADATA with `email`, which
    the trimmed standard library (pyrite/wasm/stdlib.py) leaves out."""
    from .. import __version__

    return __version__


@dataclass(frozen=True)
class RecordMetadata:
    """What a record file says about itself.

    `format` is the encoding inside any compression ("named-mpk", "bin", "json"), so a gzip
    variant carries the same name as its plain sibling; gzip is recognised by its own header.
    """

    format: str
    format_version: int
    precision: PrecisionSettings
    pyrite_version: str
    item_type: str | None = None

    def to_dict(self) -> dict[str, RecordValue]:
        """The metadata as the file stores it (dtypes spelled out for readers of the file)."""
        return {
            "format": self.format,
            "format_version": self.format_version,
            "pyrite_version": self.pyrite_version,
            "precision": self.precision.name,
            "float_dtype": self.precision.float_dtype.short,
            "int_dtype": self.precision.int_dtype.short,
            "item_type": self.item_type,
        }

    @classmethod
    def from_dict(cls, raw: object, *, source: str) -> RecordMetadata:
        """Parse stored metadata; RecordError names the field that is missing or wrong."""
        if not isinstance(raw, Mapping):
            raise RecordError(f"{source}: metadata is a {type(raw).__name__}, expected a dict")
        fmt = _field(raw, "format", str, source)
        version = _field(raw, "format_version", int, source)
        pyrite = _field(raw, "pyrite_version", str, source)
        precision = precision_named(_field(raw, "precision", str, source), source=source)
        item_type = raw.get("item_type")
        if item_type is not None and not isinstance(item_type, str):
            raise RecordError(f"{source}: metadata field 'item_type' is a "
                              f"{type(item_type).__name__}, expected a str or null")
        return cls(fmt, version, precision, pyrite, item_type)


def _field(raw: Mapping[str, object], name: str, kind: type[T], source: str) -> T:
    value = raw.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        found = "nothing" if name not in raw else f"a {type(value).__name__} ({value!r})"
        raise RecordError(f"{source}: metadata field {name!r}: expected a {kind.__name__}, "
                          f"found {found}")
    return value


def wrap(record: Record, metadata: RecordMetadata) -> dict[str, RecordValue]:
    """The envelope to encode: metadata first, so a file's head shows what it is."""
    return {"metadata": metadata.to_dict(), "item": record}


def unwrap(envelope: object, codec: Codec, *, source: str) -> tuple[Record, RecordMetadata]:
    """Check an envelope that `codec` decoded; return (record, metadata)."""
    if not isinstance(envelope, dict) or set(envelope) != set(ENVELOPE_KEYS):
        raise RecordError(f"{source}: expected {codec.description}, found {codec.data_name} "
                          f"without 'metadata' and 'item' at the top level")
    meta = RecordMetadata.from_dict(envelope["metadata"], source=source)
    if meta.format != codec.name:
        raise RecordError(f"{source}: expected {codec.description}, found metadata saying "
                          f"format {meta.format!r}")
    check_version(meta.format_version, meta.pyrite_version, codec, source)
    _check_checksum_rule(envelope["metadata"], meta.format_version, codec, source)
    item = envelope["item"]
    if not isinstance(item, dict):
        raise RecordError(f"{source}: the record ('item') is a {type(item).__name__}, "
                          f"expected a dict")
    return item, meta


def check_version(version: object, written_by: object, codec: Codec, source: str) -> None:
    """RecordError unless `version` is one `codec` reads (1 to its version; 0 and negative
    versions do not exist). Codecs call it before verifying a checksum, so a newer file says
    "upgrade" rather than "corrupt"; a version that is not an int is left to `from_dict`."""
    if not isinstance(version, int) or isinstance(version, bool):
        return
    if version > codec.version:
        raise RecordError(f"{source}: {codec.name} format version {version} was written by "
                          f"pyrite {written_by}; this pyrite ({pyrite_version()}) reads up to "
                          f"version {codec.version}: upgrade pyrite")
    if version < 1:
        raise RecordError(f"{source}: {codec.name} format version {version} does not exist "
                          f"(versions start at 1): the file is corrupt")


def _check_checksum_rule(raw: Mapping[str, object], version: int, codec: Codec,
                         source: str) -> None:
    """A version that carries a checksum must have one, and an older one must not (the codec
    verified its value already; see checksum.py)."""
    since = codec.checksum_since
    needed = since is not None and version >= since
    if needed and CHECKSUM_KEY not in raw:
        raise RecordError(f"{source}: {codec.name} format version {version} carries a "
                          f"checksum, but this file has none: the file is corrupt")
    if not needed and CHECKSUM_KEY in raw:
        raise RecordError(f"{source}: {codec.name} format version {version} has no checksum, "
                          f"but this file carries one: the file is corrupt (its version was "
                          f"changed?)")
