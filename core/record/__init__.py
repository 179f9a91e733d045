"""pyrite.record: saving and loading records (nested dicts of tensors and metadata).

Importing this package reads no file and imports neither numpy nor msgpack; the MessagePack
recorders import msgpack when first used. See docs/records.md.
"""

from .atomic import atomic_write
from .fits import check_record_fits
from .metadata import RecordMetadata, pyrite_version
from .precision import (
    DoublePrecision,
    FullPrecision,
    HalfPrecision,
    PrecisionSettings,
    convert_record,
)
from .recorder import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    DefaultFileRecorder,
    FileRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    Recorder,
)
from .tree import (
    Leaf,
    Record,
    RecordValue,
    flatten_record,
    map_tensors,
    unflatten_record,
    validate_record,
)

__all__ = [
    "BinBytesRecorder",
    "BinFileRecorder",
    "BinGzFileRecorder",
    "DefaultFileRecorder",
    "DoublePrecision",
    "FileRecorder",
    "FullPrecision",
    "HalfPrecision",
    "JsonGzFileRecorder",
    "Leaf",
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "PrecisionSettings",
    "PrettyJsonFileRecorder",
    "Record",
    "RecordMetadata",
    "RecordValue",
    "Recorder",
    "atomic_write",
    "check_record_fits",
    "convert_record",
    "flatten_record",
    "map_tensors",
    "pyrite_version",
    "unflatten_record",
    "validate_record",
]
