"""The payload checksum of the named-mpk and JSON records (format version 2 on).

The binary format frames its payload with a CRC-32 of its own (bin_codec.py). The MessagePack and
JSON formats carry theirs in the metadata, as `"checksum": "crc32:<8 hex digits>"`: the CRC-32
of the metadata without that field, encoded canonically (compact, in the file's key order), then
of the record. Flipping any byte of a tensor, a key or a metadata value then fails the load with
"checksum mismatch", where before version 2 a flipped weight loaded silently.

Version rules (checked in metadata.py): a version-1 file has no checksum and loads as before; a
file of a later version must carry one; a version-1 file that carries one is refused, since only
a damaged version field makes one.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence

from ..errors import RecordError

CHECKSUM_KEY = "checksum"
_PREFIX = "crc32:"


def checksum_text(*parts: bytes | memoryview) -> str:
    """The checksum field's value for the concatenation of `parts`.

    >>> checksum_text(b"pyrite")
    'crc32:be999f41'
    """
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return f"{_PREFIX}{crc:08x}"


def verify_checksum(metadata: object,
                    parts: Callable[[dict[str, object]], Sequence[bytes | memoryview]], *,
                    source: str, description: str) -> None:
    """RecordError unless the metadata's checksum matches `parts(metadata without it)`.

    Does nothing when `metadata` is not a dict or has no checksum: whether one is required is
    the version's business (metadata.py), and a malformed metadata is reported there.
    """
    if not isinstance(metadata, Mapping) or CHECKSUM_KEY not in metadata:
        return
    stored = metadata[CHECKSUM_KEY]
    rest = {k: v for k, v in metadata.items() if k != CHECKSUM_KEY}
    if not isinstance(stored, str) or not stored.startswith(_PREFIX):
        raise RecordError(f"{source}: expected {description}, found a checksum field "
                          f"{str(stored)[:40]!r} that is not 'crc32:<hex>': the file is corrupt")
    if checksum_text(*parts(rest)) != stored:
        raise RecordError(f"{source}: expected {description}, found a checksum mismatch: the "
                          f"file is corrupt (a byte of it changed since it was written)")
