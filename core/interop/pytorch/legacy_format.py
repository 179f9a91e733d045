"""The legacy format of `torch.save` (`_use_new_zipfile_serialization=False`): pickles in a row,
then the storages' bytes."""

from __future__ import annotations

import io
import pickle
import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...data import TensorData
from ...errors import RecordError
from .storage import _err, _is_size, _Storage, _StorageType
from .unpickler import _PICKLE_ERRORS, _storage_type, _Unpickler
from .walk import Walk

_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_LEGACY_PROTOCOL = 1001
_LEGACY_HEAD = pickle.dumps(_LEGACY_MAGIC, protocol=2)[:-1]  # without the STOP opcode

# ---- the legacy format -----------------------------------------------------------------------

def _read_legacy(data: bytes, source: str) -> Any:
    stream = io.BytesIO(data)

    def no_storage(pid: tuple[Any, ...]) -> _Storage:
        raise _err(source, "unexpected storage in the legacy header")

    def next_pickle(storage: Callable[[tuple[Any, ...]], _Storage] = no_storage) -> Any:
        start = stream.tell()
        try:
            return _LegacyUnpickler(stream, source, storage).load()
        except RecordError:
            raise
        except _PICKLE_ERRORS as err:
            raise _err(source, f"the pickle at byte {start} is invalid or truncated "
                               f"({type(err).__name__}: {err})") from err

    magic = next_pickle()
    if magic != _LEGACY_MAGIC:
        raise _err(source, "not a PyTorch file: neither a zip nor the legacy format (wrong "
                           "magic number)")
    protocol = next_pickle()
    if protocol != _LEGACY_PROTOCOL:
        raise _err(source, f"legacy PyTorch protocol {protocol!r} is not supported (expected "
                           f"{_LEGACY_PROTOCOL})")
    next_pickle()  # sys info
    declared: dict[str, tuple[_StorageType, int]] = {}
    storages: dict[str, _Storage] = {}
    views: list[tuple[_Storage, str, int, int]] = []

    def storage(pid: tuple[Any, ...]) -> _Storage:
        if len(pid) < 5 or not isinstance(pid[2], str) or not _is_size(pid[4]):
            raise _err(source, f"invalid storage id {pid!r}")
        kind = _storage_type(pid[1], source)
        key, numel = pid[2], int(pid[4])
        declared.setdefault(key, (kind, numel))
        root = storages.setdefault(key, _Storage(kind, numel, b""))
        view = pid[5] if len(pid) > 5 else None
        if view is None:
            return root
        if (not isinstance(view, tuple) or len(view) != 3 or not _is_size(view[1])
                or not _is_size(view[2])):
            raise _err(source, f"invalid storage view {view!r}")
        out = _Storage(kind, int(view[2]), b"")
        views.append((out, key, int(view[1]), int(view[2])))
        return out

    # tensors are rebuilt after the storages' bytes are read: _LegacyUnpickler defers them
    obj = next_pickle(storage)
    keys = next_pickle()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise _err(source, "the legacy storage key list is invalid")
    size = len(data)
    for key in keys:
        if key not in declared:
            raise _err(source, f"storage {key!r} is listed but no tensor uses it")
        kind, numel = declared[key]
        head = stream.read(8)
        if len(head) != 8:
            raise _err(source, f"storage {key!r} is missing: the file is truncated")
        (count,) = struct.unpack("<q", head)
        if count != numel:
            raise _err(source, f"storage {key!r} holds {count} elements, but the pickle declares "
                               f"{numel}: the file is corrupt")
        nbytes = numel * kind.itemsize
        if nbytes > size - stream.tell():
            raise _err(source, f"storage {key!r} needs {nbytes} bytes, but only "
                               f"{size - stream.tell()} remain: the file is truncated")
        storages[key].raw = stream.read(nbytes)
    missing = [k for k in declared if k not in keys]
    if missing:
        raise _err(source, f"storages {missing} are used but not stored: the file is corrupt")
    for out, key, offset, numel in views:
        root = storages[key]
        if offset + numel > root.numel:
            raise _err(source, f"a view of storage {key!r} lies outside it")
        k = root.kind.itemsize
        out.raw = root.raw[offset * k:(offset + numel) * k]
    return _resolve(obj, Walk(len(data), source))


@dataclass
class _Deferred:
    """A tensor whose storage bytes are not read yet (legacy format)."""
    storage: _Storage
    args: tuple[Any, ...]
    rebuild: Callable[..., TensorData] = field(repr=False)


def _resolve(obj: Any, walk: Walk, depth: int = 0) -> Any:
    if isinstance(obj, _Deferred):
        return obj.rebuild(obj.storage, *obj.args)
    if not isinstance(obj, (dict, list, tuple)):
        return obj
    walk.enter(depth)
    if isinstance(obj, OrderedDict):
        return OrderedDict((k, _resolve(v, walk, depth + 1)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: _resolve(v, walk, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(v, walk, depth + 1) for v in obj]
    return tuple(_resolve(v, walk, depth + 1) for v in obj)


class _LegacyUnpickler(_Unpickler):
    """Defers rebuilding tensors until the storages' bytes, stored after the pickle, are read."""

    def _rebuild_tensor(self, storage: object, *args: object) -> Any:
        if not isinstance(storage, _Storage):
            raise _err(self.source, f"a tensor's storage is a {type(storage).__name__}, not a "
                                    f"storage")
        return _Deferred(storage, args, super()._rebuild_tensor)

