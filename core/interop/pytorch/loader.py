"""From a `.pt` file's bytes to pyrite tensors by dotted name, and into a module."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ...data import TensorData
from ...dtype import Kind
from ...record.fits import check_record_fits, warn_nonfinite
from .legacy_format import _LEGACY_HEAD, _read_legacy
from .names import Remap, contiguous_indices, remap_keys
from .storage import _elements, _err, _Storage
from .unpickler import _unpickle
from .walk import Walk
from .zip_format import _read_zip, is_zip

if TYPE_CHECKING:
    from ...module import Module


PathLike = str | os.PathLike[str]
M = TypeVar("M", bound="Module")

#: top-level keys tried, in this order, when `top_key` is not given and the file holds a dict
#: that is not itself a state dict (a training checkpoint)
TOP_KEYS = ("state_dict", "model_state_dict", "model", "module", "net", "params",
            "weights", "network")


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
    if is_zip(data):
        return _read_zip(data, source)
    raise _err(source, "not a PyTorch file: neither a zip nor a pickle (the file is truncated, "
                       "corrupt or of another format)")


def _no_storage(source: str) -> Callable[[tuple[Any, ...]], _Storage]:
    def fail(pid: tuple[Any, ...]) -> _Storage:
        raise _err(source, "a storage outside a PyTorch zip or legacy file")
    return fail


def _flatten(obj: object, prefix: str, out: dict[str, TensorData], walk: Walk,
             depth: int = 0) -> None:
    if isinstance(obj, TensorData):
        out[prefix] = obj
    elif isinstance(obj, Mapping):
        walk.enter(depth)
        for key, value in obj.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out, walk, depth + 1)
    elif isinstance(obj, (list, tuple)):
        walk.enter(depth)
        for i, value in enumerate(obj):
            _flatten(value, f"{prefix}.{i}" if prefix else str(i), out, walk, depth + 1)
    # other leaves (an epoch number, a config string) are not weights


def _some(keys: list[Any], shown: int = 10) -> str:
    """`keys` for a message: the first `shown`, then how many more."""
    if len(keys) <= shown:
        return repr(keys)
    return f"{keys[:shown]!r} and {len(keys) - shown} more"


def _select(obj: object, top_key: str | None, source: str) -> object:
    if top_key is not None:
        if not isinstance(obj, Mapping) or top_key not in obj:
            keys = list(obj) if isinstance(obj, Mapping) else []
            raise _err(source, f"top-level key {top_key!r} not found; the file's top-level keys "
                               f"are {_some(keys)}")
        return obj[top_key]
    if isinstance(obj, Mapping) and not all(isinstance(v, TensorData) for v in obj.values()):
        for key in TOP_KEYS:
            if isinstance(obj.get(key), Mapping):
                return obj[key]
    return obj


def _read_bytes(path: PathLike) -> tuple[bytes, str]:
    target = Path(path)
    source = str(target)
    if not target.is_file():
        raise _err(source, "no such file")
    return target.read_bytes(), source


def _tensors(obj: object, size: int, *, top_key: str | None, remap: Remap | None,
             contiguous: bool, debug: bool, source: str) -> dict[str, TensorData]:
    flat: dict[str, TensorData] = {}
    _flatten(_select(obj, top_key, source), "", flat, Walk(size, source))
    if not flat and isinstance(obj, Mapping):
        raise _err(source, f"no tensors found; the file's top-level keys are {_some(list(obj))} "
                           f"(pass top_key=...)")
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
    return _tensors(obj, len(data), top_key=top_key, remap=remap, contiguous=contiguous_sequential,
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
    from ...nn.linear import Linear
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
         source: str, kinds: Mapping[str, Kind] | None = None) -> dict[str, TensorData]:
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
                          {k: s for k, s in expected.items() if k in tensors}, source=source,
                          kinds=kinds)
        tensors = {k: v for k, v in tensors.items() if k in expected}
    else:
        check_record_fits(tensors, expected, source=source, kinds=kinds)
    warn_nonfinite(tensors, source=source)
    return tensors


def load_into(module: M, path: PathLike, *, top_key: str | None = None,
              remap: Remap | None = None, partial: bool = False,
              contiguous_sequential: bool | None = None, transpose_linear: bool = True,
              debug: bool = False) -> M:
    """A new module like `module` with its params loaded from the `.pt` file at `path`.

    Names are matched by dotted path after `top_key` and `remap` (see `load`). With
    `contiguous_sequential=None` (the default) numeric name parts are renumbered 0, 1, 2...
    when that matches more of the module's params (a torch `Sequential` with activations);
    True or False forces it. Raises RecordError listing every shape or kind mismatch (int or
    bool values for a float param), missing and unexpected key at once, and warns
    (RecordWarning) on NaN or infinite values; with `partial=True`, missing params keep the
    module's values and tensors the module lacks are ignored (shape mismatches are still
    errors). With
    `transpose_linear` (the default), the weight of each `nn.Linear`, stored (out, in) by torch,
    is transposed to pyrite's (in, out).
    """
    data, source = _read_bytes(path)
    tensors = loads(data, top_key=top_key, remap=remap, debug=debug, source=source)
    return _load_tensors(module, tensors, partial=partial, contiguous=contiguous_sequential,
                         transpose=transpose_linear, source=source)


def _load_tensors(module: M, tensors: dict[str, TensorData], *, partial: bool,
                  contiguous: bool | None, transpose: bool, source: str) -> M:
    from ...module.param import Param
    from ...tensor import from_data
    expected = {path: tuple(p.shape) for path, p in module.named_params()}
    kinds = {path: p.dtype.kind for path, p in module.named_params()}
    fitted = _fit(tensors, expected, partial=partial, contiguous=contiguous,
                  transpose=_linear_weights(module) if transpose else set(), source=source,
                  kinds=kinds)

    def put(path: str, p: Param) -> Param:
        data = fitted.get(path)
        if data is None:
            return p
        return p.with_val(from_data(data, device=p.device, dtype=p.dtype))
    return module.map(put)

