"""Module: a parameter container whose parts are found from its attributes.

The Python analogue of Burn's `#[derive(Module)]`: a subclass assigns attributes in `__init__`
(or declares them as dataclass fields) and the base class walks them, in assignment order:

| attribute value                     | what it is                                             |
|-------------------------------------|--------------------------------------------------------|
| `Param`                             | a parameter: visited, mapped, saved, counted            |
| `Module`                            | a submodule (its params get dotted paths: `fc1.weight`) |
| list / tuple of `Module` or `Param` | numbered children: `layers.0.weight`                    |
| `Tensor`                            | a constant: moves with the module, is not saved        |
| anything else (int, str, tuple, ..) | a setting: shown when the module is printed            |

Constants follow Burn: a plain tensor is something the config can recreate (a sinusoidal table,
a mask), so records hold only params. Modules are treated as values: `map`, `to_device`,
`no_grad`, `load_record`, ... return a new module and leave the original untouched; the one
exception is a layer's own running state (BatchNorm's running mean), which its forward updates.

This module owns traversal, device moves and records; printing lives in `display.py`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ..backend.base import Backend
from ..data import TensorData
from ..device import device as resolve_device
from ..errors import RecordError
from ..tensor import Tensor
from .param import Param
from .record_values import record_values

if TYPE_CHECKING:
    from ..quantization.module import Quantizer
    from ..record import FileRecorder, Record, RecordValue

#: record key holding the params' ids (nested like the params), so a reloaded model keeps the
#: ids its optimizer state refers to. Not a tensor, so record checks ignore it.
PARAM_IDS_KEY = "_param_ids"

PathLike = str | os.PathLike[str]
ParamFn = Callable[[str, Param], Param]
TensorFn = Callable[[Tensor], Tensor]


def _is_child(value: object) -> bool:
    return isinstance(value, (Module, Param))


def _is_child_list(value: object) -> bool:
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        _is_child(v) for v in value)


class Module:
    """Base class of every module: subclass it, assign params and submodules as attributes.

    >>> from pyrite import zeros
    >>> from pyrite.module import Module, Param
    >>> class Affine(Module):
    ...     def __init__(self) -> None:
    ...         self.scale = Param(zeros((3,)))
    ...         self.shift = Param(zeros((3,)))
    ...     def forward(self, x):
    ...         return x * self.scale.val + self.shift.val
    >>> m = Affine()
    >>> m.num_params(), [path for path, _ in m.named_params()]
    (6, ['scale', 'shift'])
    """

    # ---- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(self, "forward", None)
        if forward is None:
            raise NotImplementedError(f"{type(self).__name__}: define forward(...) to call it")
        return forward(*args, **kwargs)

    # ---- discovery ---------------------------------------------------------------------------
    def _attrs(self) -> Iterator[tuple[str, Any]]:
        for name, value in vars(self).items():
            if not name.startswith("__"):
                yield name, value

    def children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules as (name, module); list items are named `name.i`."""
        for name, value in self._attrs():
            if isinstance(value, Module):
                yield name, value
            elif _is_child_list(value):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{i}", item

    def settings(self) -> dict[str, Any]:
        """The module's settings shown when it is printed: by default every public attribute
        that is not a param, submodule or tensor. Layers override this to choose and order."""
        return {name: value for name, value in self._attrs()
                if not name.startswith("_") and value is not None
                and not _is_child(value) and not _is_child_list(value)
                and not isinstance(value, Tensor)}

    def named_params(self) -> list[tuple[str, Param]]:
        """Every param with its dotted path, in attribute order, depth first."""
        found: list[tuple[str, Param]] = []
        self.visit(lambda path, p: found.append((path, p)))
        return found

    def params(self) -> list[Param]:
        """Every param, in the order of `named_params`."""
        return [p for _, p in self.named_params()]

    def visit(self, fn: Callable[[str, Param], object]) -> None:
        """Call `fn(path, param)` for every param (Burn's ModuleVisitor)."""
        self._visit("", fn, None)

    def _visit(self, prefix: str, on_param: Callable[[str, Param], object],
               on_const: Callable[[str, Tensor], object] | None) -> None:
        for name, value in self._attrs():
            path = prefix + name
            if isinstance(value, Param):
                on_param(path, value)
            elif isinstance(value, Module):
                value._visit(path + ".", on_param, on_const)
            elif isinstance(value, Tensor):
                if on_const is not None:
                    on_const(path, value)
            elif _is_child_list(value):
                for i, item in enumerate(value):
                    if isinstance(item, Param):
                        on_param(f"{path}.{i}", item)
                    else:
                        item._visit(f"{path}.{i}.", on_param, on_const)

    # ---- mapping -----------------------------------------------------------------------------
    def map(self, fn: ParamFn) -> Self:
        """A new module with every param replaced by `fn(path, param)` (Burn's ModuleMapper).

        Keep the id (`param.with_val(...)`) unless you mean to make a different param.
        """
        return self._map("", fn, None)

    def _map(self, prefix: str, on_param: ParamFn, on_const: TensorFn | None) -> Self:
        out = copy.copy(self)
        for name, value in self._attrs():
            path = prefix + name
            if isinstance(value, Param):
                new: Any = _checked(path, on_param(path, value))
            elif isinstance(value, Module):
                new = value._map(path + ".", on_param, on_const)
            elif isinstance(value, Tensor):
                new = value if on_const is None else on_const(value)
            elif _is_child_list(value):
                items = [_checked(f"{path}.{i}", on_param(f"{path}.{i}", item))
                         if isinstance(item, Param)
                         else item._map(f"{path}.{i}.", on_param, on_const)
                         for i, item in enumerate(value)]
                new = type(value)(items) if isinstance(value, tuple) else items
            else:
                continue
            object.__setattr__(out, name, new)
        return out

    def _map_tensors(self, fn: TensorFn) -> Self:
        """Apply `fn` to every param value (ids and flags kept) and every constant."""
        return self._map("", lambda _, p: p.with_val(fn(p.val)), fn)

    # ---- devices and gradients ---------------------------------------------------------------
    def devices(self) -> list[Backend]:
        """The devices the params and constants live on, first seen first."""
        found: list[Backend] = []

        def note(_: str, t: Param | Tensor) -> None:
            dev = t.device
            if dev not in found:
                found.append(dev)
        self._visit("", note, note)
        return found

    def to_device(self, device: Backend | str) -> Self:
        """The module on `device`; params already there are kept as they are (same leaves)."""
        target = resolve_device(device)

        def move(_: str, p: Param) -> Param:
            return p if p.device == target else p.to_device(target)
        return self._map("", move, lambda t: t.to_device(target))

    def fork(self, device: Backend | str) -> Self:
        """The module on `device` with every param a fresh graph leaf (Burn's `fork`): gradients
        of the fork never reach the original's params."""
        target = resolve_device(device)
        return self._map("", lambda _, p: p.with_val(p.val.to_device(target).detach()),
                         lambda t: t.to_device(target).detach())

    def no_grad(self) -> Self:
        """Every param with `require_grad=False`: still saved, never trained."""
        return self.map(lambda _, p: p.set_require_grad(False))

    def valid(self) -> Self:
        """The module on the inner backend of its autodiff device, for inference (Burn's
        `valid`): no graph is recorded, and Dropout and BatchNorm switch to inference.
        A module already on a non-autodiff device comes back unchanged."""
        return self._map_tensors(lambda t: t.inner())

    def num_params(self) -> int:
        """How many numbers the params hold (frozen ones included, as Burn counts them)."""
        total = 0

        def add(_: str, p: Param) -> None:
            nonlocal total
            total += p.numel()
        self.visit(add)
        return total

    # ---- records -----------------------------------------------------------------------------
    def into_record(self) -> Record:
        """The params as a nested dict of TensorData (`{"fc1": {"weight": ...}}`, list items
        under "0", "1", ...) plus `_param_ids`, the params' ids nested the same way."""
        record: dict[str, Any] = {}
        ids: dict[str, Any] = {}
        for path, p in self.named_params():
            if p.val.is_quantized():  # integers, scheme and params (pyrite.quantization.record)
                from ..quantization.record import quantized_record
                _put(record, path, quantized_record(p.val))  # type: ignore[arg-type]
            else:
                _put(record, path, p.val.to_data())
            _put(ids, path, p.id)
        if ids:
            record[PARAM_IDS_KEY] = ids
        return record

    def load_record(self, record: Mapping[str, RecordValue], *, source: str = "record") -> Self:
        """A new module with the params' values (and ids, when the record has them) from
        `record`. Values are converted to each param's dtype and put on its device.

        Raises RecordError listing missing, unexpected, mis-shaped and wrong-kind (bool or int
        values for a float param) keys before anything changes; warns (RecordWarning) when
        float values are NaN or infinite.
        """
        from ..quantization.record import split_quantized
        from ..record import check_record_fits, flatten_record
        from ..record.fits import warn_nonfinite
        record, quantized = split_quantized(record, source)
        shapes = {path: p.shape for path, p in self.named_params()}
        wrong = [f"{path!r} has shape {entry.shape} in the file, {tuple(shapes[path])} in "
                 f"the model" for path, entry in quantized.items()
                 if path in shapes and entry.shape != tuple(shapes[path])]
        stray = [path for path in quantized if path not in shapes]
        if wrong or stray:
            raise RecordError(f"{source}: " + "; ".join(
                wrong + ([f"unexpected: {', '.join(stray)}"] if stray else [])))
        expected = {path: shape for path, shape in shapes.items() if path not in quantized}
        kinds = {path: p.dtype.kind for path, p in self.named_params() if path not in quantized}
        check_record_fits(record, expected, source=source, kinds=kinds)
        warn_nonfinite(record, source=source)
        flat = flatten_record(record)
        prefix = PARAM_IDS_KEY + "."
        # converted to each param's dtype on the way in (on the device where it can), all of
        # a device's values at once (record_values.py)
        plain = [(path, p) for path, p in self.named_params() if path not in quantized]
        entries = [(p, flat[path]) for path, p in plain]
        assert all(isinstance(d, TensorData) for _, d in entries)  # check_record_fits did
        values = dict(zip((path for path, _ in plain),
                          record_values(entries), strict=True))  # type: ignore[arg-type]

        def load(path: str, p: Param) -> Param:
            saved = flat.get(prefix + path)
            keep = saved if isinstance(saved, str) else p.id
            if path in quantized:  # a quantized param stays quantized: dequantize() to train
                return Param(quantized[path].to_tensor(p.device), require_grad=False, id=keep)
            return Param(values[path], require_grad=p.require_grad, id=keep)
        return self.map(load)

    def save_file(self, path: PathLike, recorder: FileRecorder | None = None) -> Path:
        """Save the record with `recorder` (default: named MessagePack, full precision, or
        safetensors for a path ending in `.safetensors`); returns the path written (the recorder
        adds its extension when `path` has none)."""
        rec = _recorder_for(path, recorder)
        return rec.save(self.into_record(), path, item_type=type(self).__name__)

    def load_file(self, path: PathLike, recorder: FileRecorder | None = None,
                  device: Backend | str | None = None) -> Self:
        """A new module with the params saved at `path` (see `load_record`), on `device` when
        given, else where this module's params are. A path ending in `.safetensors` is read
        as safetensors when no recorder is given; its tensors are matched by dotted path."""
        rec = _recorder_for(path, recorder)
        target = rec.path_for(path)
        if not target.exists():
            raise RecordError(f"{target}: no such file; save one with module.save_file(...) or "
                              f"check the path")
        module = self if device is None else self.to_device(device)
        return module.load_record(rec.load(target), source=str(target))

    # ---- quantization (pyrite.quantization; docs/quantization.md) ----------------------------
    def quantize_weights(self, quantizer: Quantizer) -> Self:
        """The module with its weights quantized by `quantizer` (Burn's `quantize_weights`)."""
        from ..quantization.module import quantize_weights
        return quantize_weights(self, quantizer)

    def dequantize(self) -> Self:
        """The module with every quantized param back in float (trainable again)."""
        from ..quantization.module import dequantize_module
        return dequantize_module(self)

    # ---- display -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        from .display import render
        return render(self)


def _recorder_for(path: PathLike, recorder: FileRecorder | None) -> FileRecorder:
    """`recorder`, else safetensors for a `.safetensors` path, else the default recorder."""
    if recorder is not None:
        return recorder
    if os.fspath(path).lower().endswith(".safetensors"):
        from ..interop.safetensors import SafetensorsFileRecorder
        return SafetensorsFileRecorder()
    from ..record import DefaultFileRecorder
    return DefaultFileRecorder()


def _checked(path: str, value: object) -> Param:
    if not isinstance(value, Param):
        raise TypeError(f"map: the function returned {type(value).__name__} for {path!r}; it "
                        f"must return a Param (param.with_val(tensor) keeps the id)")
    return value


def _put(tree: dict[str, Any], path: str, value: RecordValue) -> None:
    *parents, last = path.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value
