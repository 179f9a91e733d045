"""The restricted unpickler: it rebuilds tensors and plain containers and refuses any other
global before anything is called."""

from __future__ import annotations

import io
import math
import pickle
import struct
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ...data import TensorData
from ...errors import RecordError
from ..safetensors import _bf16_to_f32
from .storage import (
    _STORAGES,
    _TORCH_DTYPES,
    MAX_EXPANDED,
    _byteswap,
    _err,
    _gather,
    _is_size,
    _Storage,
    _StorageType,
)


class _Unpickler(pickle._Unpickler):
    """Rebuilds tensors and plain containers; refuses every other global.

    Python's own unpickler, not the C one: the C unpickler sizes its memo array by the largest
    index a file names, so a 484-byte file with `LONG_BINPUT 174417761` made it allocate
    1.4 GB; this one keeps the memo in a dict. Weight files' pickles are small (the tensors'
    bytes are stored beside them), so its speed does not matter.
    """

    def __init__(self, file: io.BytesIO, source: str,
                 storage: Callable[[tuple[Any, ...]], _Storage], big_endian: bool = False) -> None:
        super().__init__(file)
        self.source = source
        self.storage = storage
        self.big_endian = big_endian
        self.rebuilt = 0  # bytes of the tensors rebuilt so far
        self.storages: dict[int, int] = {}  # id -> bytes of the storages they came from

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils":
            if name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
                return self._rebuild_tensor
            if name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
                return _rebuild_parameter
        if module == "torch":
            if name in _STORAGES:
                return _StorageType(name)
            if name in _TORCH_DTYPES:
                return _StorageType(_TORCH_DTYPES[name])
            if name == "Size":
                return tuple
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module in ("builtins", "__builtin__") and name in ("set", "frozenset"):
            return set if name == "set" else frozenset
        raise _err(self.source, f"refused to load the global '{module}.{name}': a PyTorch "
                                f"weight file may only hold tensors and plain containers "
                                f"(nothing was executed)")

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise _err(self.source, f"unknown persistent id {pid!r} in the pickle")
        return self.storage(pid)

    def _rebuild_tensor(self, storage: object, offset: object, size: object, stride: object,
                        *_: object) -> TensorData:
        if not isinstance(storage, _Storage):
            raise _err(self.source, f"a tensor's storage is a {type(storage).__name__}, not a "
                                    f"storage")
        if (not _is_size(offset) or not isinstance(size, tuple) or not isinstance(stride, tuple)
                or len(size) != len(stride) or not all(_is_size(s) for s in size + stride)):
            raise _err(self.source, f"a tensor has an invalid layout: offset {offset!r}, size "
                                    f"{size!r}, stride {stride!r}")
        assert isinstance(offset, int)
        shape = tuple(int(s) for s in size)
        strides = tuple(int(s) for s in stride)
        numel = math.prod(shape)
        if numel:
            needed = offset + sum((sz - 1) * st for sz, st in zip(shape, strides, strict=True)) + 1
            if needed > storage.numel:
                raise _err(self.source, f"a tensor of shape {shape} (offset {offset}, strides "
                                        f"{strides}) needs {needed} elements, but its storage "
                                        f"holds {storage.numel}: the file is corrupt")
            self._budget(storage, shape, numel)
        raw = _gather(storage, offset, shape, strides)
        kind = storage.kind
        if self.big_endian:
            raw = _byteswap(raw, kind.itemsize)
        if kind.name == "BFloat16Storage":
            raw = _bf16_to_f32(raw)
        return TensorData.raw(raw, shape, kind.dtype)


    def _budget(self, storage: _Storage, shape: tuple[int, ...], numel: int) -> None:
        """Refuse tensors that together hold more than twice their storages' bytes plus
        MAX_EXPANDED elements: views of views (or one storage viewed a thousand times) would
        otherwise let a small file allocate without bound."""
        self.storages.setdefault(id(storage), storage.numel * storage.kind.itemsize)
        self.rebuilt += numel * storage.kind.itemsize
        allowed = 2 * sum(self.storages.values()) + MAX_EXPANDED * 8
        if self.rebuilt > allowed:
            raise _err(self.source, f"a tensor of shape {shape} brings the file's tensors to "
                                    f"{self.rebuilt} bytes from storages of "
                                    f"{sum(self.storages.values())}: refused (tensors may hold "
                                    f"at most twice their storages plus {MAX_EXPANDED} "
                                    f"elements that the file does not hold)")


def _rebuild_parameter(data: object, *_: object) -> object:
    return data


#: what a malformed or truncated pickle raises while it is read
_PICKLE_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
                  AttributeError, struct.error, MemoryError, RecursionError)


def _unpickle(data: bytes, source: str, storage: Callable[[tuple[Any, ...]], _Storage],
              big_endian: bool = False) -> Any:
    try:
        return _Unpickler(io.BytesIO(data), source, storage, big_endian).load()
    except RecordError:
        raise
    except _PICKLE_ERRORS as err:
        raise _err(source, f"the pickle is invalid or truncated ({type(err).__name__}: "
                           f"{err})") from err


def _storage_type(value: object, source: str) -> _StorageType:
    if isinstance(value, _StorageType):
        return value
    raise _err(source, f"storage type {value!r} is not one pyrite reads (storages of "
                       f"{', '.join(_STORAGES)})")

