"""Cutting a batch into per-device slices and merging the slices' items back into one.

A batch is whatever a `Batcher` makes: a tensor, or a dataclass, tuple, list, dict or plain
object holding tensors. Every tensor of a batch has the batch's items along dim 0, so slicing
each tensor the same way gives the sub-batches; values that are not tensors are shared.

Items (what a train step returns for the metrics) merge back the other way: a `loss` is the
mean over the slices weighted by their sizes (the loss of the whole batch for a mean loss),
every other tensor is concatenated along dim 0. An item class with a `merge(items, sizes)`
classmethod merges itself instead.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..backend.base import Backend
from ..creation import cat
from ..errors import ConfigError
from ..tensor import Tensor


def slice_sizes(total: int, parts: int) -> list[int]:
    """`total` items in `parts` nearly equal runs, the larger ones first.

    >>> slice_sizes(10, 3)
    [4, 3, 3]
    """
    return [total // parts + (1 if r < total % parts else 0) for r in range(parts)]


def tensors_in(value: Any) -> list[Tensor]:
    """The tensors inside `value`, in the order `replace_tensors` takes them."""
    found: list[Tensor] = []

    def note(t: Tensor) -> Tensor:
        found.append(t)
        return t
    _walk(value, note)
    return found


def replace_tensors(value: Any, tensors: Sequence[Tensor]) -> Any:
    """`value` with its tensors replaced, in `tensors_in` order, by `tensors`."""
    it = iter(tensors)
    return _walk(value, lambda _: next(it))


def batch_length(batch: Any) -> int:
    """The number of items in `batch`: the leading size of its first tensor."""
    found = [int(t.shape[0]) for t in tensors_in(batch)[:1]]
    if not found:
        raise ConfigError(f"data parallel: the batch ({type(batch).__name__}) holds no tensor "
                          f"to split across devices; a batcher must return tensors with the "
                          f"items along dim 0")
    return found[0]


def split_batch(batch: Any, sizes: Sequence[int], devices: Sequence[Backend]) -> list[Any]:
    """`batch` cut into runs of `sizes` items, run r moved to `devices[r]` (None: empty run)."""
    out: list[Any] = []
    start = 0
    for size, dev in zip(sizes, devices, strict=True):
        if size == 0:
            out.append(None)
            continue
        out.append(replace_tensors(batch, [t.narrow(0, start, size).to_device(dev)
                                           for t in tensors_in(batch)]))
        start += size
    return out


def _walk(value: Any, fn: Callable[[Tensor], Any]) -> Any:
    """`value` with every tensor inside it replaced by `fn(tensor)`."""
    if isinstance(value, Tensor):
        return fn(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _walk(getattr(value, f.name), fn)
                   for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple | list):
        items = [_walk(v, fn) for v in value]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if isinstance(value, dict):
        return {k: _walk(v, fn) for k, v in value.items()}
    names = _attributes(value)
    if not names:
        return value
    out = copy.copy(value)
    for name in names:
        object.__setattr__(out, name, _walk(getattr(value, name), fn))
    return out


def _attributes(value: Any) -> list[str]:
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return []
    names = [n for cls in type(value).__mro__ for n in getattr(cls, "__slots__", ())
             if hasattr(value, n)]
    return names + list(getattr(value, "__dict__", {}))


def merge_items(items: Sequence[Any], sizes: Sequence[int], device: Backend) -> Any:
    """One item for the whole batch from the items of its slices (see the module docstring),
    its tensors on `device`."""
    kind = type(items[0])
    merge = getattr(kind, "merge", None)
    if callable(merge):
        return merge(items, sizes)
    if len(items) == 1:
        return items[0]
    names = _attributes(items[0])
    out = copy.copy(items[0])
    total = sum(sizes)
    for name in names:
        values = [getattr(item, name) for item in items]
        if not isinstance(values[0], Tensor):
            continue
        moved = [v.detach().to_device(device) for v in values]
        if name == "loss":
            merged = moved[0] * (sizes[0] / total)
            for v, n in zip(moved[1:], sizes[1:], strict=True):
                merged = merged + v * (n / total)
        else:
            merged = cat(moved, 0)
        object.__setattr__(out, name, merged)
    return out
