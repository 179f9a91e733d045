"""Param: a module's trainable (or saved-but-frozen) tensor, with a stable id.

A Param owns one float tensor (`val`), an `id` that survives `map`, device moves and a save/load
round trip (optimizer state is keyed by it), and a `require_grad` flag. On an autodiff device a
Param with `require_grad=True` holds a graph leaf, so `loss.backward()` reaches it; with
`require_grad=False` it is saved in records but never tracked, so optimizers skip it.

Params are immutable: changing one means building a new Param with `with_val` (which keeps the
id and the flag), as optimizers and `Module.map` do.
"""

from __future__ import annotations

import secrets
from typing import Any

from ..backend.base import Backend
from ..dtype import DType, Kind
from ..errors import KindError
from ..tensor import Tensor

ParamId = str


def new_param_id() -> ParamId:
    """A fresh random id: 16 hex digits (64 bits, as Burn's ParamId)."""
    return secrets.token_hex(8)


class Param:
    """A module parameter: `Param(tensor)`, `param.val`, `param.id`, `param.require_grad`.

    >>> from pyrite import zeros
    >>> from pyrite.module import Param
    >>> p = Param(zeros((2, 3)))
    >>> p.shape, p.require_grad, len(p.id)
    ((2, 3), True, 16)
    >>> p.with_val(zeros((2, 3))).id == p.id
    True
    """

    __slots__ = ("id", "val", "require_grad")

    id: ParamId
    val: Tensor
    require_grad: bool

    def __init__(self, val: Tensor, *, require_grad: bool = True,
                 id: ParamId | None = None) -> None:  # noqa: A002 - Burn's name
        if not isinstance(val, Tensor):
            raise TypeError(f"Param: expects a Tensor, got {type(val).__name__}; build one with "
                            f"pyrite.tensor(...)")
        if require_grad and val.kind is not Kind.FLOAT:
            raise KindError(f"Param: a {val.kind.value} tensor cannot require grad; pass "
                            f"require_grad=False to save it without training it")
        # A param is always a leaf: a fresh graph leaf when trained, untracked otherwise. This
        # also cuts the graph of values an optimizer computed on an autodiff device.
        self.val = val.set_require_grad(require_grad)
        self.require_grad = require_grad
        self.id = new_param_id() if id is None else str(id)

    # ---- derived values ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.val.shape

    @property
    def device(self) -> Backend:
        return self.val.device

    @property
    def dtype(self) -> DType:
        return self.val.dtype

    def numel(self) -> int:
        return self.val.numel()

    def grad(self, grads: Any) -> Tensor | None:
        """This param's gradient in `grads` (from `loss.backward()`), or None."""
        return self.val.grad(grads)

    # ---- new params from this one ------------------------------------------------------------
    def with_val(self, val: Tensor) -> Param:
        """A Param with the same id and flag holding `val`."""
        return Param(val, require_grad=self.require_grad, id=self.id)

    def set_require_grad(self, require_grad: bool) -> Param:
        """A Param with the same id and value and this flag."""
        return Param(self.val, require_grad=require_grad, id=self.id)

    def to_device(self, device: Backend | str) -> Param:
        return self.with_val(self.val.to_device(device))

    def __repr__(self) -> str:
        dims = ", ".join(str(s) for s in self.shape)
        frozen = "" if self.require_grad else ", require_grad=False"
        return f"Param(id={self.id}, shape=[{dims}], dtype={self.dtype}{frozen})"
