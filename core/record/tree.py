"""What a record is, and the walks over it: validation, dotted-key flattening, tensor mapping.

A record is a nested dict with `str` keys. Its leaves are `TensorData`, `str`, `int`, `float`,
`bool`, `None`, or lists of record values (lists may hold leaves, lists and dicts). A module's
record nests by submodule name, `{"fc1": {"weight": TensorData, "bias": TensorData}}`, and may
carry metadata leaves beside the tensors (`{"epoch": 3, "note": "..."}`).

This module owns the shape of a record; it knows nothing of files or formats (see `recorder.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeAlias

from ..data import TensorData
from ..errors import RecordError

Leaf: TypeAlias = TensorData | str | int | float | bool | None
RecordValue: TypeAlias = Leaf | list["RecordValue"] | dict[str, "RecordValue"]
Record: TypeAlias = dict[str, RecordValue]

# Integers are stored as signed 64-bit in every format (msgpack, the binary format, JSON readers).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

# The JSON formats write a tensor as exactly these keys, so a plain dict may not use this key set.
TENSOR_JSON_KEYS = frozenset({"dtype", "shape", "values"})


def _where(path: str) -> str:
    return repr(path) if path else "the record"


def validate_record(record: object, *, source: str = "record") -> None:
    """Raise RecordError when `record` is not a record (see the module docstring).

    Tuples are accepted where lists are and come back from a file as lists. Integers must fit
    int64. A dict whose keys are exactly {"dtype", "shape", "values"} is refused: the JSON
    formats use that shape for tensors, and the record must read back the same from every format.

    >>> validate_record({"fc": {"weight": TensorData([1.0, 2.0])}, "epoch": 3})
    >>> try:
    ...     validate_record({"fc": {1: 2}})
    ... except RecordError as err:
    ...     print(err)
    record: 'fc' has a key of type int (1); record keys are str
    """
    if not isinstance(record, Mapping):
        raise RecordError(f"{source}: a record is a dict with str keys, "
                          f"got {type(record).__name__}")
    _validate(record, "", source)


def _validate(value: object, path: str, source: str) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise RecordError(f"{source}: {_where(path)} has a key of type "
                                  f"{type(key).__name__} ({key!r}); record keys are str")
            _validate(item, f"{path}.{key}" if path else key, source)
        if value and set(value) == TENSOR_JSON_KEYS:
            raise RecordError(f"{source}: {_where(path)} is a dict with exactly the keys dtype, "
                              f"shape and values, which JSON records reserve for tensors; "
                              f"rename a key or add one")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _validate(item, f"{path}[{i}]", source)
    elif isinstance(value, bool) or value is None or isinstance(value, (str, float, TensorData)):
        return
    elif isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise RecordError(f"{source}: {_where(path)} = {value} does not fit int64; "
                              f"store it as a str or a float")
    else:
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        raise RecordError(f"{source}: {_where(path)} is a {kind}; record leaves are TensorData, "
                          f"str, int, float, bool, None or lists of them (convert it first, "
                          f"e.g. int(x) or TensorData(x))")


def map_tensors(record: Record, fn: Callable[[str, TensorData], TensorData]) -> Record:
    """A copy of `record` with every TensorData leaf replaced by `fn(dotted_path, leaf)`.

    Dicts and lists are copied (tuples become lists); other leaves are shared, being immutable.
    The path names list items as `name[i]`, for error messages.

    >>> map_tensors({"a": {"b": TensorData([1, 2])}}, lambda k, t: t.convert("f32"))["a"]["b"]
    TensorData([1.0, 2.0], shape=(2,), dtype=f32)
    """
    out = _map(record, "", fn)
    assert isinstance(out, dict)
    return out


def _map(value: RecordValue, path: str, fn: Callable[[str, TensorData], TensorData]) -> RecordValue:
    if isinstance(value, TensorData):
        return fn(path, value)
    if isinstance(value, Mapping):
        return {k: _map(v, f"{path}.{k}" if path else k, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_map(v, f"{path}[{i}]", fn) for i, v in enumerate(value)]
    return value


def flatten_record(record: Mapping[str, RecordValue]) -> dict[str, RecordValue]:
    """Nested dicts to one dict with dotted keys; lists and empty dicts are leaves.

    Raises RecordError when a key is empty or holds a dot, since the dotted key would not
    unflatten to the same record.

    >>> flatten_record({"fc1": {"weight": 1, "bias": 2}, "epoch": 3})
    {'fc1.weight': 1, 'fc1.bias': 2, 'epoch': 3}
    """
    flat: dict[str, RecordValue] = {}
    _flatten(record, "", flat)
    return flat


def _flatten(node: Mapping[str, RecordValue], prefix: str, flat: dict[str, RecordValue]) -> None:
    for key, value in node.items():
        if not key or "." in key:
            raise RecordError(f"flatten_record: key {key!r} under {_where(prefix.rstrip('.'))} "
                              f"is empty or contains '.', so it cannot be part of a dotted key")
        if isinstance(value, Mapping) and value:
            _flatten(value, f"{prefix}{key}.", flat)
        else:
            flat[prefix + key] = dict(value) if isinstance(value, Mapping) else value


def unflatten_record(flat: Mapping[str, RecordValue]) -> Record:
    """Dotted keys back to nested dicts: the inverse of `flatten_record`.

    Raises RecordError when one key is a prefix of another (`"fc1"` and `"fc1.weight"`), since
    `fc1` cannot be a leaf and a dict at once.

    >>> unflatten_record({"fc1.weight": 1, "fc1.bias": 2, "epoch": 3})
    {'fc1': {'weight': 1, 'bias': 2}, 'epoch': 3}
    """
    root: Record = {}
    for dotted, value in flat.items():
        parts = dotted.split(".")
        if not all(parts):
            raise RecordError(f"unflatten_record: key {dotted!r} has an empty part")
        node = root
        for i, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise RecordError(f"unflatten_record: {'.'.join(parts[:i + 1])!r} is a leaf, "
                                  f"so {dotted!r} cannot be nested under it")
            node = child
        last = parts[-1]
        if last in node:
            raise RecordError(f"unflatten_record: {dotted!r} is both a leaf and a prefix of "
                              f"other keys")
        node[last] = value
    return root
