"""A module that has not changed since its last flatten is not walked again.

A compiled call flattens its arguments on every call (tree.py). For a model passed to every
call (inference, an evaluation loop) the walk over its submodules, params and settings is the
largest part of the call's Python, and on a GPU host the call's Python is most of a small
step. `remember` keeps, per module (by identity, while the module lives), the walk's result and
a snapshot of everything the walk read:

- each module's attribute dict: its keys, and its values by identity;
- each list held by an attribute: its items by identity (a list of submodules appended to);
- each param's value, id and require_grad (a param given a new value in place).

`recall` gives the result back when every part of the snapshot is still the same object, so
anything changed in place (a dropout's probability, a param's value, a swapped submodule, an
appended layer) is walked again. Only a module flattened a second time gets an entry: a training
loop returns a new model every step, and pays one dictionary lookup for it.
"""

from __future__ import annotations

import weakref
from operator import is_
from typing import Any


class _Entry:
    __slots__ = ("ref", "dicts", "lists", "params", "result")

    def __init__(self, ref: Any, dicts: list[tuple[dict[str, Any], tuple[str, ...],
                                                      tuple[Any, ...]]],
                 lists: list[tuple[list[Any], tuple[Any, ...]]],
                 params: list[tuple[Any, Any, Any, Any]], result: Any) -> None:
        self.ref, self.dicts, self.lists = ref, dicts, lists
        self.params, self.result = params, result

    def still(self) -> bool:
        """Whether everything the walk read is the same object as then."""
        for d, keys, values in self.dicts:
            if len(d) != len(keys) or tuple(d) != keys or not all(map(is_, d.values(), values)):
                return False
        for items, was in self.lists:
            if len(items) != len(was) or not all(map(is_, items, was)):
                return False
        for param, val, pid, grad in self.params:
            if param.val is not val or param.id is not pid or param.require_grad is not grad:
                return False
        return True


#: id(module) -> its weak reference, for modules flattened once (no entry yet)
_SEEN: dict[int, Any] = {}
#: id(module) -> what its last walk found, for modules flattened more than once
_ENTRIES: dict[int, _Entry] = {}


def _forget(key: int) -> Any:
    def gone(_: Any) -> None:
        _SEEN.pop(key, None)
        _ENTRIES.pop(key, None)
    return gone


def recall(module: Any) -> Any:
    """The result `remember` kept for `module`, when nothing it read has changed; else None."""
    entry = _ENTRIES.get(id(module))
    if entry is None or entry.ref() is not module or not entry.still():
        return None
    return entry.result


def wanted(module: Any) -> bool:
    """Whether a walk of `module` should record a snapshot: it was flattened before."""
    key = id(module)
    ref = _SEEN.get(key)
    if ref is not None and ref() is module:
        return True
    try:
        _SEEN[key] = weakref.ref(module, _forget(key))
    except TypeError:  # a module class without weak references: never remembered
        pass
    return False


def remember(module: Any, modules: list[Any], lists: list[list[Any]], params: list[Any],
             result: Any) -> None:
    """Keep `result` for `module`, with the snapshot of what its walk read: the `modules`
    visited, the `lists` their attributes held and the `params` found."""
    ref = _SEEN.get(id(module))
    if ref is None or ref() is not module:
        return
    dicts = []
    for m in modules:
        d = vars(m)
        dicts.append((d, tuple(d), tuple(d.values())))
    _ENTRIES[id(module)] = _Entry(
        ref, dicts, [(items, tuple(items)) for items in lists],
        [(p, p.val, p.id, p.require_grad) for p in params], result)


def clear() -> None:
    """Forget every module (tests)."""
    _SEEN.clear()
    _ENTRIES.clear()


__all__ = ["clear", "recall", "remember", "wanted"]
