"""The values a compiled step takes and returns, as leaves and a structure.

`flatten(value)` walks tuples, lists, dicts, modules (their params and constant tensors),
optimizers (the state of each param) and small objects that hold tensors (a batch, a
`TrainOutput`, a `ClassificationOutput`), and returns the leaves (tensors and the numbers that
may change from step to step) and a `Spec`: the structure, hashable, with every other value in it
(so a different value of a plain argument makes a different signature). `Spec.build(leaves)`
makes the same structure again around new leaves, which is how a replay returns what the eager
call returned. Which numbers change: floats anywhere, and the numbers of an optimizer's state
(Adam's step count); ints and everything else are fixed, part of the signature.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeGuard

from ..backend.autodiff import Gradients
from ..module.base import Module
from ..module.param import Param
from ..tensor import Tensor
from . import memo

if TYPE_CHECKING:
    from ..optim.optimizer import Optimizer

_OPTIMIZER = __name__.rsplit(".", 2)[0] + ".optim.optimizer"  # pyrite.optim.optimizer


class Refused(Exception):
    """A value a compiled step cannot take or return; the message says which and why."""


TENSOR = "T"
NUMBER = "N"

Leaf = Any  # a Tensor, or a number that changes from step to step


class Spec:
    """One node of a flattened value's structure."""

    __slots__ = ("kind", "key", "template", "children", "sig")

    def __init__(self, kind: str, key: Any, template: Any = None,
                 children: tuple[Spec, ...] = ()) -> None:
        self.kind, self.key, self.template, self.children = kind, key, template, children
        # made as the structure is built: a call's signature costs no second walk
        self.sig: Any = (kind, key, tuple(c.sig for c in children)) if children else (kind, key)

    def signature(self) -> Any:
        return self.sig

    def build(self, leaves: list[Leaf], at: list[int] | None = None) -> Any:
        """This structure with its leaves taken in order from `leaves`."""
        at = [0] if at is None else at
        kind = self.kind
        if kind in (TENSOR, NUMBER):
            value = leaves[at[0]]
            at[0] += 1
            return value
        if kind == "static":
            return self.template
        values = [c.build(leaves, at) for c in self.children]
        if kind == "tuple":
            return tuple(values) if self.template is tuple else self.template(*values)
        if kind == "list":
            return values
        if kind == "dict":
            return dict(zip(self.key[1], values, strict=True))
        if kind == "module":
            return _build_module(self.template, values)
        if kind == "optimizer":
            _restore_optimizer(self.template, self.key, values)
            return self.template
        if kind == "object":
            out = copy.copy(self.template)
            for name, value in zip(self.key[1], values, strict=True):
                object.__setattr__(out, name, value)
            return out
        raise AssertionError(kind)


_TENSOR = Spec(TENSOR, None)  # one shared leaf node (they hold nothing of a call)


def _holds_tensor(obj: Any, depth: int = 2) -> bool:
    if isinstance(obj, Tensor):
        return True
    if depth == 0:
        return False
    if isinstance(obj, (tuple, list)):
        return any(_holds_tensor(v, depth - 1) for v in obj)
    if isinstance(obj, dict):
        return any(_holds_tensor(v, depth - 1) for v in obj.values())
    return any(_holds_tensor(v, depth - 1) for _, v in _fields(obj))


def _fields(obj: Any) -> list[tuple[str, Any]]:
    names: list[str] = []
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__weakref__", "__dict__") and name not in names:
                names.append(name)
    found = [(n, getattr(obj, n)) for n in names if hasattr(obj, n)]
    found += list(getattr(obj, "__dict__", {}).items())
    return found


def _static(value: Any) -> Spec:
    try:
        hash(value)
        key: Any = ("v", type(value).__name__, value)
    except TypeError:
        key = ("id", id(value))
    return Spec("static", key, value)


def flatten(value: Any, leaves: list[Leaf], *, numbers: bool = False) -> Spec:
    """The structure of `value`; its leaves are appended to `leaves`. `numbers`: ints are
    leaves too (inside an optimizer's state)."""
    if isinstance(value, Tensor):
        leaves.append(value)
        return _TENSOR
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        return _static(value)
    if isinstance(value, float) or (numbers and isinstance(value, int)):
        leaves.append(value)
        return Spec(NUMBER, type(value).__name__)
    if isinstance(value, int):
        return _static(value)
    if isinstance(value, Gradients):
        raise Refused("it takes or returns raw Gradients (from loss.backward()); return "
                      "GradientsParams.from_grads(grads, model) or apply them inside the step")
    if isinstance(value, (tuple, list)):
        kids = tuple(flatten(v, leaves, numbers=numbers) for v in value)
        kind = "tuple" if isinstance(value, tuple) else "list"
        # the type, not the value: a template must not keep the call's tensors alive
        return Spec(kind, (type(value).__name__, len(value)), type(value), kids)
    if isinstance(value, dict):
        keys = tuple(value)
        kids = tuple(flatten(value[k], leaves, numbers=numbers) for k in keys)
        return Spec("dict", ("dict", keys), None, kids)
    if isinstance(value, Module):
        return _flatten_module(value, leaves)
    if _is_optimizer(value):
        return _flatten_optimizer(value, leaves)
    if dataclasses.is_dataclass(value) or _holds_tensor(value):
        fields = _fields(value)
        kids = tuple(flatten(v, leaves, numbers=numbers) for _, v in fields)
        hollow = copy.copy(value)  # without the call's tensors (a template keeps nothing alive)
        for (name, _), kid in zip(fields, kids, strict=True):
            if kid.kind != "static":
                object.__setattr__(hollow, name, None)
        return Spec("object", (type(value), tuple(n for n, _ in fields)), hollow, kids)
    return _static(value)


# ---- modules: params and constants in visiting order ------------------------------------------
def _flatten_module(module: Module, leaves: list[Leaf]) -> Spec:
    """Params and constant tensors in `Module._visit`'s order (so `_map` puts them back), and
    every plain attribute of the module and its submodules (a dropout's probability, a
    convolution's stride): a replay computes with the values captured, so another value is
    another signature. One walk gathers both; a module unchanged since its last walk is not
    walked again (memo.py)."""
    found = memo.recall(module)
    if found is not None:  # the key and leaves only: an entry must not keep the module alive
        leaves.extend(found[1])
        return Spec("module", found[0], module, (_TENSOR,) * len(found[1]))
    mine: list[Leaf] = []
    shape: list[Any] = []
    settings: list[Any] = []
    seen: tuple[list[Any], list[Any], list[Any]] | None = \
        ([], [], []) if memo.wanted(module) else None
    _walk(module, "", mine, shape, settings, seen)
    key = (type(module), tuple(shape), tuple(settings))
    if seen is not None:
        memo.remember(module, *seen, (key, tuple(mine)))
    leaves.extend(mine)
    return Spec("module", key, module, (_TENSOR,) * len(shape))


def _walk(module: Module, prefix: str, leaves: list[Leaf], shape: list[Any],
          settings: list[Any], seen: tuple[list[Any], list[Any], list[Any]] | None) -> None:
    """`seen`, when given, gets the modules visited, the lists their attributes hold and the
    params found (what memo.py's snapshot checks)."""
    if seen is not None:
        seen[0].append(module)
    for name, value in module._attrs():
        path = prefix + name
        if isinstance(value, Param):
            leaves.append(value.val)
            shape.append((path, value.id, value.require_grad))
            if seen is not None:
                seen[2].append(value)
        elif isinstance(value, Module):
            _walk(value, path + ".", leaves, shape, settings, seen)
        elif isinstance(value, Tensor):
            leaves.append(value)
            shape.append((path,))
        elif isinstance(value, (list, tuple)) and value and all(
                isinstance(v, (Module, Param)) for v in value):
            if seen is not None and isinstance(value, list):
                seen[1].append(value)
            for i, item in enumerate(value):
                if isinstance(item, Param):
                    leaves.append(item.val)
                    shape.append((f"{path}.{i}", item.id, item.require_grad))
                    if seen is not None:
                        seen[2].append(item)
                else:
                    _walk(item, f"{path}.{i}.", leaves, shape, settings, seen)
        elif value is None or isinstance(value, (bool, int, float, str, tuple)):
            try:
                hash(value)
            except TypeError:
                continue
            settings.append((path, value))
        elif seen is not None and isinstance(value, list):
            seen[1].append(value)  # it may hold submodules later


def _build_module(template: Module, values: list[Any]) -> Module:
    it = iter(values)
    on_param: Callable[[str, Any], Any] = lambda _, p: p.with_val(next(it))  # noqa: E731
    return template._map("", on_param, lambda _: next(it))


# ---- optimizers: mutated in place, so their state is both an input and an output -------------
def _flatten_optimizer(optim: Optimizer, leaves: list[Leaf]) -> Spec:
    if optim._pending:
        # loaded from a record: becomes tensors at the first step (eagerly, then captured)
        return Spec("static", ("pending-optimizer", id(optim)), optim)
    shape: list[Any] = []
    kids: list[Spec] = []
    for pid, state in optim._states.items():
        keys = tuple(state)
        shape.append((pid, keys))
        for k in keys:
            value = state[k]
            if isinstance(value, Tensor):  # the usual state: moments and step counts
                leaves.append(value)
                kids.append(_TENSOR)
            else:
                kids.append(flatten(value, leaves, numbers=True))
    return Spec("optimizer", (id(optim), repr(optim.rule), tuple(shape)), optim, tuple(kids))


def _restore_optimizer(optim: Optimizer, key: Any, values: list[Any]) -> None:
    it = iter(values)
    optim._states = {pid: {k: next(it) for k in keys} for pid, keys in key[2]}


def _is_optimizer(value: Any) -> TypeGuard[Optimizer]:
    """Whether `value` is an Optimizer, without importing pyrite.optim (all its optimizers)
    where nothing has: no optimizer can exist then (a page that only predicts)."""
    found = sys.modules.get(_OPTIMIZER)
    return found is not None and isinstance(value, found.Optimizer)


def optimizers_in(*values: Any) -> list[Optimizer]:
    """The optimizers among `values`, each once."""
    found: list[Optimizer] = []
    for v in values:
        if _is_optimizer(v) and v not in found:
            found.append(v)
    return found


__all__ = ["NUMBER", "TENSOR", "Refused", "Spec", "flatten", "optimizers_in"]
