"""Checking a loaded record against the parameters a model expects, before anything is applied.

The Module system calls `check_record_fits` with the record it loaded and the shapes of its own
parameters, so a wrong file fails with one message listing every problem at once, and the model
is never left half-loaded.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..data import TensorData
from ..dtype import Kind
from ..errors import RecordError, RecordWarning
from .tree import RecordValue, flatten_record

# Long lists are cut in the message; the count of the rest is still given.
_SHOWN = 10


def check_record_fits(record: Mapping[str, RecordValue],
                      expected: Mapping[str, Sequence[int]], *, source: str = "record",
                      kinds: Mapping[str, Kind] | None = None) -> None:
    """Raise RecordError unless every expected key holds a tensor of the expected shape (and,
    with `kinds`, of the expected kind: bool or int values never load into a float param, nor
    floats into an int one; precision within a kind is converted on loading).

    `record` may be flat (dotted keys) or nested; `expected` maps dotted keys to shapes.
    Only tensors in the record count as unexpected: metadata leaves (`"epoch": 3`) are ignored
    unless the model expects a tensor under that key. The message lists shape mismatches, then
    missing keys, then unexpected ones, each in the model's or the file's order.

    >>> loaded = {"fc.weight": TensorData([[1.0, 2.0]]), "head.weight": TensorData([1.0])}
    >>> try:
    ...     check_record_fits(loaded, {"fc.weight": (2, 1), "fc.bias": (1,)}, source="m.mpk")
    ... except RecordError as err:
    ...     print(err)
    m.mpk: 'fc.weight' has shape (1, 2) in the file, (2, 1) in the model; missing: fc.bias; \
unexpected: head.weight
    """
    flat = flatten_record(record) if any(isinstance(v, Mapping) for v in record.values()) \
        else dict(record)
    problems: list[str] = []
    missing: list[str] = []
    for key, shape in expected.items():
        want = tuple(int(s) for s in shape)
        if key not in flat:
            missing.append(key)
            continue
        found = flat[key]
        if not isinstance(found, TensorData):
            problems.append(f"{key!r} is a {type(found).__name__} in the file, a tensor of shape "
                            f"{want} in the model")
        elif found.shape != want:
            problems.append(f"{key!r} has shape {found.shape} in the file, {want} in the model")
        elif kinds is not None and key in kinds and found.dtype.kind is not kinds[key]:
            problems.append(f"{key!r} holds {found.dtype} ({found.dtype.kind.value.lower()}) "
                            f"values in the file, {kinds[key].value.lower()} in the model")
    unexpected = [k for k, v in flat.items() if isinstance(v, TensorData) and k not in expected]
    parts = _shorten(problems)
    if missing:
        parts.append("missing: " + ", ".join(_shorten(missing)))
    if unexpected:
        parts.append("unexpected: " + ", ".join(_shorten(unexpected)))
    if parts:
        raise RecordError(f"{source}: " + "; ".join(parts))


def _shorten(items: list[str]) -> list[str]:
    """At most _SHOWN items, then '... and N more'."""
    if len(items) <= _SHOWN:
        return items
    return [*items[:_SHOWN], f"... and {len(items) - _SHOWN} more"]


def warn_nonfinite(record: Mapping[str, RecordValue], *, source: str = "record") -> list[str]:
    """Warn (RecordWarning) when float tensors of `record` hold NaN or infinite values; return
    their dotted keys. Such weights load, since a record may hold them on purpose, but a model
    that predicts NaN is rarely what anyone wanted."""
    flat = flatten_record(record) if any(isinstance(v, Mapping) for v in record.values()) \
        else dict(record)
    bad = [k for k, v in flat.items() if isinstance(v, TensorData) and _nonfinite(v)]
    if bad:
        warnings.warn(f"{source}: {len(bad)} tensor(s) hold NaN or infinite values: "
                      f"{', '.join(_shorten(bad))}", RecordWarning, stacklevel=3)
    return bad


@functools.cache
def numpy_for_checks() -> Any:
    """numpy, or None where it cannot be imported (a page without it). Tried once: a failed
    import searches the whole path again each time, which was 8 searches of 1.5-4 ms per
    record load in a page (and after a restore the first one took 10 ms: the page's snapshot
    holds the answer, pyrite/wasm/preload.py). Either way the checks give the same answer."""
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _nonfinite(data: TensorData) -> bool:
    if data.dtype.kind is not Kind.FLOAT:
        return False
    np = numpy_for_checks()
    if np is None:  # the browser without numpy
        return nonfinite_bits(bytes(data.bytes), data.dtype.itemsize)
    values = np.frombuffer(data.bytes, dtype=np.dtype(data.dtype.np_name).newbyteorder("<"))
    return not bool(np.isfinite(values).all())


def _bits_table(mask: int) -> bytes:
    """A `bytes.translate` table: 1 for the bytes that have every bit of `mask` set, else 0."""
    return bytes(int(b & mask == mask) for b in range(256))


#: per item size (f16, f32, f64; IEEE 754, little-endian): the bytes that hold the exponent,
#: counted from the item's last byte, and the bits of each that belong to it
_EXPONENT = {2: ((1, 0x7C),), 4: ((1, 0x7F), (2, 0x80)), 8: ((1, 0x7F), (2, 0xF0))}
_TABLES = {mask: _bits_table(mask) for parts in _EXPONENT.values() for _, mask in parts}


def nonfinite_bits(raw: bytes, itemsize: int) -> bool:
    """Whether little-endian IEEE floats of `itemsize` bytes in `raw` hold a NaN or an
    infinity (every exponent bit set), found without decoding them: byte slices and
    `translate` at C speed instead of `math.isfinite` per value in Python (a page has no
    numpy, and a record has hundreds of thousands of values).

    >>> import struct
    >>> nonfinite_bits(struct.pack("<3e", 1.0, -65504.0, 0.0), 2)
    False
    >>> [nonfinite_bits(struct.pack("<2f", 2.5, v), 4) for v in (float("nan"), float("-inf"))]
    [True, True]
    >>> nonfinite_bits(struct.pack("<2d", 1e308, float("inf")), 8)
    True
    """
    found = -1
    for back, mask in _EXPONENT[itemsize]:
        column = raw[itemsize - back::itemsize].translate(_TABLES[mask])
        found &= int.from_bytes(column, "little")
        if not found:
            return False
    return True
