"""PyTorch `.pt`/`.pth` weight files, read in pure Python without torch (and without numpy).

Both of torch's formats are read:

- the zip format (`torch.save` since 1.6): a zip holding `<prefix>/data.pkl`, a pickle of the
  saved object, and `<prefix>/data/<key>`, the raw bytes of each storage (little-endian unless
  `<prefix>/byteorder` says "big");
- the legacy format (`_use_new_zipfile_serialization=False`): pickles of the magic number, the
  protocol version and system info, then the object's pickle, a pickled list of storage keys and
  each storage as an 8-byte element count followed by its bytes.

The pickle is read by a restricted unpickler: it rebuilds tensors (`torch._utils._rebuild_tensor`,
`_rebuild_tensor_v2`, `_rebuild_parameter`, typed storages such as `torch.FloatStorage`) and plain
containers (dict, `collections.OrderedDict`, list, tuple, set, str, numbers); any other global,
such as `os.system` in a malicious file, is refused with a `RecordError` naming it, before
anything is called. Every size is checked against the bytes the file really holds before memory
is allocated, so a file declaring a tensor of 10^12 elements is refused.

Dtypes: float64/32/16, int64/32/16/8, uint8 and bool map to pyrite's dtypes of the same name;
bfloat16 is read as f32 (exactly). Tensors with any strides (a saved transposed view) come back
contiguous, in row-major order.

>>> try:
...     loads(b"c" + b"os\\nsystem\\n(S'echo hi'\\ntR.", source="evil.pt")
... except RecordError as err:
...     print(err)  # doctest: +NORMALIZE_WHITESPACE
evil.pt: refused to load the global 'os.system': a PyTorch weight file may only hold tensors
and plain containers (nothing was executed)
"""

from __future__ import annotations

import io
import math
import os
import pickle
import re
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..data import TensorData
from ..dtype import DType
from ..errors import RecordError
from ..record.fits import check_record_fits
from ..record.metadata import RecordMetadata
from ..record.precision import FullPrecision
from ..record.recorder import FileRecorder
from ..record.tree import Record, RecordValue, unflatten_record
from .safetensors import _bf16_to_f32

if TYPE_CHECKING:
    from ..module import Module

PathLike = str | os.PathLike[str]
M = TypeVar("M", bound="Module")

#: top-level keys tried, in this order, when `top_key` is not given and the file holds a dict
#: that is not itself a state dict (a training checkpoint)
TOP_KEYS = ("state_dict", "model_state_dict", "model", "module", "net", "params",
            "weights", "network")

#: a tensor may have more elements than its storage (stride 0, an expanded view) only up to this
MAX_EXPANDED = 1 << 22

_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_LEGACY_PROTOCOL = 1001
_LEGACY_HEAD = pickle.dumps(_LEGACY_MAGIC, protocol=2)[:-1]  # without the STOP opcode

# torch storage class name -> (pyrite dtype, bytes per element in the file)
_STORAGES: dict[str, tuple[DType, int]] = {
    "DoubleStorage": (DType.F64, 8), "FloatStorage": (DType.F32, 4),
    "HalfStorage": (DType.F16, 2), "BFloat16Storage": (DType.F32, 2),
    "LongStorage": (DType.I64, 8), "IntStorage": (DType.I32, 4), "ShortStorage": (DType.I16, 2),
    "CharStorage": (DType.I8, 1), "ByteStorage": (DType.U8, 1), "BoolStorage": (DType.BOOL, 1),
}
# torch dtype name -> storage class name
_TORCH_DTYPES = {
    "float64": "DoubleStorage", "double": "DoubleStorage", "float32": "FloatStorage",
    "float": "FloatStorage", "float16": "HalfStorage", "half": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "long": "LongStorage",
    "int32": "IntStorage", "int": "IntStorage", "int16": "ShortStorage", "short": "ShortStorage",
    "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
}


def _elements(raw: bytes, itemsize: int) -> memoryview[int]:
    """`raw` as a memoryview of `itemsize`-byte unsigned integers (for strided copies)."""
    view = memoryview(raw)
    if itemsize == 1:
        return view.cast("B")
    if itemsize == 2:
        return view.cast("H")
    if itemsize == 4:
        return view.cast("I")
    return view.cast("Q")


def _err(source: str, message: str) -> RecordError:
    return RecordError(f"{source}: {message}")


# ---- the pieces the unpickler builds -------------------------------------------------------

@dataclass(frozen=True)
class _StorageType:
    """A torch storage class (`torch.FloatStorage`) or dtype (`torch.float32`)."""
    name: str

    @property
    def dtype(self) -> DType:
        return _STORAGES[self.name][0]

    @property
    def itemsize(self) -> int:
        return _STORAGES[self.name][1]


@dataclass
class _Storage:
    kind: _StorageType
    numel: int
    raw: bytes  # exactly numel * itemsize bytes, little-endian


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _gather(storage: _Storage, offset: int, size: tuple[int, ...],
            stride: tuple[int, ...]) -> bytes:
    """The elements of the strided view, contiguous in row-major order (sizes checked)."""
    k = storage.kind.itemsize
    numel = math.prod(size)
    if numel == 0:
        return b""
    contiguous, acc = [], 1
    for s in reversed(size):
        contiguous.append(acc)
        acc *= s
    contiguous.reverse()
    if all(st == c or sz == 1 for sz, st, c in zip(size, stride, contiguous, strict=True)):
        return bytes(storage.raw[offset * k:(offset + numel) * k])
    view = _elements(storage.raw, k)
    if not size:
        return view[offset:offset + 1].tobytes()
    last, last_stride = size[-1], stride[-1]
    out = bytearray()
    index = [0] * (len(size) - 1)
    while True:
        start = offset + sum(i * st for i, st in zip(index, stride, strict=False))
        if last_stride == 0:
            out += view[start:start + 1].tobytes() * last
        else:
            out += view[start:start + (last - 1) * last_stride + 1:last_stride].tobytes()
        d = len(index) - 1
        while d >= 0:
            index[d] += 1
            if index[d] < size[d]:
                break
            index[d] = 0
            d -= 1
        if d < 0:
            return bytes(out)


def _byteswap(raw: bytes, k: int) -> bytes:
    if k == 1:
        return raw
    out = bytearray(len(raw))
    for j in range(k):
        out[j::k] = raw[k - 1 - j::k]
    return bytes(out)


class _Unpickler(pickle.Unpickler):
    """Rebuilds tensors and plain containers; refuses every other global."""

    def __init__(self, file: io.BytesIO, source: str,
                 storage: Callable[[tuple[Any, ...]], _Storage], big_endian: bool = False) -> None:
        super().__init__(file)
        self.source = source
        self.storage = storage
        self.big_endian = big_endian

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
            if numel > max(storage.numel, MAX_EXPANDED):
                raise _err(self.source, f"a tensor of shape {shape} has {numel} elements from a "
                                        f"storage of {storage.numel}: refused (more than "
                                        f"{MAX_EXPANDED} elements that the file does not hold)")
        raw = _gather(storage, offset, shape, strides)
        kind = storage.kind
        if self.big_endian:
            raw = _byteswap(raw, kind.itemsize)
        if kind.name == "BFloat16Storage":
            raw = _bf16_to_f32(raw)
        return TensorData.raw(raw, shape, kind.dtype)


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


# ---- the zip format --------------------------------------------------------------------------

def _read_zip(data: bytes, source: str) -> Any:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise _err(source, f"not a valid PyTorch zip file ({err}): the file is truncated or "
                           f"corrupt") from err
    with archive:
        entries = {info.filename: info for info in archive.infolist()}
        pkl = [name for name in entries if name == "data.pkl" or name.endswith("/data.pkl")]
        if not pkl:
            raise _err(source, "the zip holds no data.pkl: not a PyTorch file")
        prefix = min(pkl, key=len)[:-len("data.pkl")]

        def read(name: str, limit: int | None = None) -> bytes:
            info = entries.get(name)
            if info is None:
                raise _err(source, f"the zip has no entry {name!r}: the file is truncated or "
                                   f"corrupt")
            if limit is not None and info.file_size != limit:
                raise _err(source, f"zip entry {name!r} holds {info.file_size} bytes, but the "
                                   f"pickle declares {limit}: the file is corrupt")
            if info.file_size > max(len(data), 1) * (1 if info.compress_type == 0 else 1100):
                raise _err(source, f"zip entry {name!r} declares {info.file_size} bytes, more "
                                   f"than the file can hold")
            try:
                return archive.read(info)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, zipfile.LargeZipFile,
                    NotImplementedError) as err:
                raise _err(source, f"cannot read zip entry {name!r} ({err}): the file is "
                                   f"truncated or corrupt") from err

        big = False
        if prefix + "byteorder" in entries:
            order = read(prefix + "byteorder").decode("ascii", "replace").strip()
            if order not in ("little", "big"):
                raise _err(source, f"unknown byteorder {order!r}")
            big = order == "big"
        cache: dict[str, _Storage] = {}

        def storage(pid: tuple[Any, ...]) -> _Storage:
            if len(pid) < 5 or not isinstance(pid[2], str) or not _is_size(pid[4]):
                raise _err(source, f"invalid storage id {pid!r}")
            kind = _storage_type(pid[1], source)
            key, numel = pid[2], int(pid[4])
            if key not in cache:
                raw = read(f"{prefix}data/{key}", numel * kind.itemsize)
                cache[key] = _Storage(kind, numel, raw)
            return cache[key]

        return _unpickle(read(prefix + "data.pkl"), source, storage, big)


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
    return _resolve(obj, source)


@dataclass
class _Deferred:
    """A tensor whose storage bytes are not read yet (legacy format)."""
    storage: _Storage
    args: tuple[Any, ...]
    rebuild: Callable[..., TensorData] = field(repr=False)


def _resolve(obj: Any, source: str) -> Any:
    if isinstance(obj, _Deferred):
        return obj.rebuild(obj.storage, *obj.args)
    if isinstance(obj, OrderedDict):
        return OrderedDict((k, _resolve(v, source)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: _resolve(v, source) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(v, source) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_resolve(v, source) for v in obj)
    return obj


class _LegacyUnpickler(_Unpickler):
    """Defers rebuilding tensors until the storages' bytes, stored after the pickle, are read."""

    def _rebuild_tensor(self, storage: object, *args: object) -> Any:
        if not isinstance(storage, _Storage):
            raise _err(self.source, f"a tensor's storage is a {type(storage).__name__}, not a "
                                    f"storage")
        return _Deferred(storage, args, super()._rebuild_tensor)


# ---- from the file's object to flat tensors --------------------------------------------------

def _decode(data: bytes, source: str) -> Any:
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        return _read_zip(data, source)
    if not data:
        raise _err(source, "the file is empty")
    if data[:1] == b"\x80" or data[:1] in (b"c", b"(", b"]", b"}"):
        if data.startswith(_LEGACY_HEAD):
            return _read_legacy(data, source)
        return _unpickle(data, source, _no_storage(source))
    if zipfile.is_zipfile(io.BytesIO(data)):
        return _read_zip(data, source)
    raise _err(source, "not a PyTorch file: neither a zip nor a pickle (the file is truncated, "
                       "corrupt or of another format)")


def _no_storage(source: str) -> Callable[[tuple[Any, ...]], _Storage]:
    def fail(pid: tuple[Any, ...]) -> _Storage:
        raise _err(source, "a storage outside a PyTorch zip or legacy file")
    return fail


def _flatten(obj: object, prefix: str, out: dict[str, TensorData]) -> None:
    if isinstance(obj, TensorData):
        out[prefix] = obj
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _flatten(value, f"{prefix}.{i}" if prefix else str(i), out)
    # other leaves (an epoch number, a config string) are not weights


def _select(obj: object, top_key: str | None, source: str) -> object:
    if top_key is not None:
        if not isinstance(obj, Mapping) or top_key not in obj:
            keys = list(obj) if isinstance(obj, Mapping) else []
            raise _err(source, f"top-level key {top_key!r} not found; the file's top-level keys "
                               f"are {keys}")
        return obj[top_key]
    if isinstance(obj, Mapping) and not all(isinstance(v, TensorData) for v in obj.values()):
        for key in TOP_KEYS:
            if isinstance(obj.get(key), Mapping):
                return obj[key]
    return obj


Remap = Sequence[tuple[str | re.Pattern[str], str]]


def remap_keys(keys: Iterable[str], remap: Remap, *, source: str = "remap") -> dict[str, str]:
    """Each key -> the key after every `(regex, replacement)` of `remap`, in order (`re.sub`).

    >>> remap_keys(["conv.0.weight"], [(r"^conv\\.(\\d+)", r"conv\\1")])
    {'conv.0.weight': 'conv0.weight'}
    """
    patterns = [(re.compile(p) if isinstance(p, str) else p, r) for p, r in remap]
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key in keys:
        new = key
        for pattern, replacement in patterns:
            new = pattern.sub(replacement, new)
        if new in seen:
            raise RecordError(f"{source}: remapping gives {new!r} for both {seen[new]!r} and "
                              f"{key!r}")
        seen[new] = key
        out[key] = new
    return out


def contiguous_indices(keys: Iterable[str]) -> dict[str, str]:
    """Each key -> the key with numeric parts renumbered 0, 1, 2, ... under each parent.

    A torch `Sequential` numbers its layers with the activations included (`layers.0`,
    `layers.2`, `layers.4` hold the weights), while a pyrite list holds only the layers with
    params: renumbering gives `layers.0`, `layers.1`, `layers.2`.

    >>> contiguous_indices(["seq.0.weight", "seq.2.weight", "seq.2.bias", "seq.10.weight"])
    {'seq.0.weight': 'seq.0.weight', 'seq.2.weight': 'seq.1.weight', \
'seq.2.bias': 'seq.1.bias', 'seq.10.weight': 'seq.2.weight'}
    """
    keys = list(keys)
    parts = {key: key.split(".") for key in keys}
    depth = max((len(p) for p in parts.values()), default=0)
    for d in range(depth):
        # parent prefix (already renumbered) -> the numeric parts found at depth d
        found: dict[tuple[str, ...], set[int]] = {}
        for p in parts.values():
            if d < len(p) - 1 and p[d].isdigit():
                found.setdefault(tuple(p[:d]), set()).add(int(p[d]))
        numbering = {parent: {n: str(i) for i, n in enumerate(sorted(ns))}
                     for parent, ns in found.items()}
        for p in parts.values():
            parent = tuple(p[:d])
            if d < len(p) - 1 and p[d].isdigit() and parent in numbering:
                p[d] = numbering[parent][int(p[d])]
    return {key: ".".join(parts[key]) for key in keys}


def _read_bytes(path: PathLike) -> tuple[bytes, str]:
    target = Path(path)
    source = str(target)
    if not target.is_file():
        raise _err(source, "no such file")
    return target.read_bytes(), source


def _tensors(obj: object, *, top_key: str | None, remap: Remap | None,
             contiguous: bool, debug: bool, source: str) -> dict[str, TensorData]:
    flat: dict[str, TensorData] = {}
    _flatten(_select(obj, top_key, source), "", flat)
    if not flat and isinstance(obj, Mapping):
        raise _err(source, f"no tensors found; the file's top-level keys are {list(obj)} (pass "
                           f"top_key=...)")
    names = {k: k for k in flat}
    if contiguous:
        names = contiguous_indices(flat)
    if remap:
        after = remap_keys(names.values(), remap, source=source)
        names = {k: after[v] for k, v in names.items()}
    out: dict[str, TensorData] = {}
    for key, new in names.items():
        if new in out:
            raise _err(source, f"two tensors are named {new!r} after renaming")
        out[new] = flat[key]
    if debug:
        print(f"{source}: {len(flat)} tensors")
        for key, new in names.items():
            t = flat[key]
            arrow = f"{key} -> {new}" if new != key else key
            print(f"  {arrow}  {list(t.shape)} {t.dtype.short}")
    return out


def loads(data: bytes, *, top_key: str | None = None, remap: Remap | None = None,
          contiguous_sequential: bool = False, debug: bool = False,
          source: str = "<bytes>") -> dict[str, TensorData]:
    """The tensors in the bytes of a `.pt` file, by dotted name (see `load`)."""
    obj = _decode(bytes(data), source)
    return _tensors(obj, top_key=top_key, remap=remap, contiguous=contiguous_sequential,
                    debug=debug, source=source)


def load(path: PathLike, *, top_key: str | None = None, remap: Remap | None = None,
         contiguous_sequential: bool = False, debug: bool = False) -> dict[str, TensorData]:
    """The tensors in the `.pt`/`.pth` file at `path`, by dotted name, in the file's order.

    - `top_key`: the entry of a checkpoint dict that holds the weights; when None and the file
      holds a dict with non-tensor values, the first of `TOP_KEYS` present is used.
    - `remap`: `(regex, replacement)` pairs applied in order to every name (`re.sub`).
    - `contiguous_sequential`: renumber numeric name parts 0, 1, 2... (see
      `contiguous_indices`); applied before `remap`.
    - `debug`: print each original name, its new name, shape and dtype.

    Nested dicts and lists give dotted names; non-tensor values are skipped.
    """
    data, source = _read_bytes(path)
    return loads(data, top_key=top_key, remap=remap, contiguous_sequential=contiguous_sequential,
                 debug=debug, source=source)


def _transposed(t: TensorData) -> TensorData:
    rows, cols = t.shape
    view = _elements(t.bytes, t.dtype.itemsize)
    raw = b"".join(view[j::cols].tobytes() for j in range(cols))
    return TensorData.raw(raw, (cols, rows), t.dtype)


def _linear_weights(module: Module) -> set[str]:
    """The dotted paths of the weights of every `nn.Linear` in `module`."""
    from ..nn.linear import Linear
    found: set[str] = set()

    def walk(m: Module, prefix: str) -> None:
        if isinstance(m, Linear):
            found.add(prefix + "weight")
        for name, child in m.children():
            walk(child, f"{prefix}{name}.")
    walk(module, "")
    return found


def _fit(tensors: dict[str, TensorData], expected: Mapping[str, tuple[int, ...]], *,
         partial: bool, contiguous: bool | None, transpose: set[str],
         source: str) -> dict[str, TensorData]:
    if contiguous is None:  # automatic: renumber when that matches more of the model's keys
        renumbered = contiguous_indices(tensors)
        if len(set(renumbered.values())) == len(renumbered):
            before = sum(k in expected for k in tensors)
            after = sum(v in expected for v in renumbered.values())
            if after > before:
                tensors = {renumbered[k]: v for k, v in tensors.items()}
    elif contiguous:
        renumbered = contiguous_indices(tensors)
        tensors = {renumbered[k]: v for k, v in tensors.items()}
    for key in transpose:  # torch's Linear weight is (out, in), pyrite's (in, out)
        t = tensors.get(key)
        want = expected.get(key)
        if (t is not None and want is not None and len(t.shape) == 2 and t.shape != want
                and t.shape == want[::-1]):
            tensors = {**tensors, key: _transposed(t)}
    if partial:
        check_record_fits({k: v for k, v in tensors.items() if k in expected},
                          {k: s for k, s in expected.items() if k in tensors}, source=source)
        return {k: v for k, v in tensors.items() if k in expected}
    check_record_fits(tensors, expected, source=source)
    return tensors


def load_into(module: M, path: PathLike, *, top_key: str | None = None,
              remap: Remap | None = None, partial: bool = False,
              contiguous_sequential: bool | None = None, transpose_linear: bool = True,
              debug: bool = False) -> M:
    """A new module like `module` with its params loaded from the `.pt` file at `path`.

    Names are matched by dotted path after `top_key` and `remap` (see `load`). With
    `contiguous_sequential=None` (the default) numeric name parts are renumbered 0, 1, 2...
    when that matches more of the module's params (a torch `Sequential` with activations);
    True or False forces it. Raises RecordError listing every shape mismatch, missing and
    unexpected key at once; with `partial=True`, missing params keep the module's values and
    tensors the module lacks are ignored (shape mismatches are still errors). With
    `transpose_linear` (the default), the weight of each `nn.Linear`, stored (out, in) by torch,
    is transposed to pyrite's (in, out).
    """
    data, source = _read_bytes(path)
    tensors = loads(data, top_key=top_key, remap=remap, debug=debug, source=source)
    return _load_tensors(module, tensors, partial=partial, contiguous=contiguous_sequential,
                         transpose=transpose_linear, source=source)


def _load_tensors(module: M, tensors: dict[str, TensorData], *, partial: bool,
                  contiguous: bool | None, transpose: bool, source: str) -> M:
    from ..module.param import Param
    from ..tensor import from_data
    expected = {path: tuple(p.shape) for path, p in module.named_params()}
    fitted = _fit(tensors, expected, partial=partial, contiguous=contiguous,
                  transpose=_linear_weights(module) if transpose else set(), source=source)

    def put(path: str, p: Param) -> Param:
        data = fitted.get(path)
        if data is None:
            return p
        return p.with_val(from_data(data, device=p.device, dtype=p.dtype))
    return module.map(put)


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


__all__ = ["MAX_EXPANDED", "TOP_KEYS", "PyTorchFileRecorder", "contiguous_indices", "load",
           "load_into", "loads", "remap_keys"]
