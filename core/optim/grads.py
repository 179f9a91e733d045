"""GradientsParams: gradients keyed by parameter id, ready for an optimizer step.

`loss.backward()` returns a `Gradients` keyed by graph node; an optimizer needs them keyed by
the `Param.id` of the module it updates. `from_grads` / `from_module` / `from_params` move the
gradients of some params out of a `Gradients` (removing them there), so different parts of a
model can be stepped with different optimizers or learning rates, and what is left can still be
taken by a final `from_grads`.

This module owns the id -> gradient map; accumulation lives in `accumulator.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..backend.autodiff import Gradients
from ..tensor import Tensor

ParamId = str


class GradientsParams:
    """Gradients of params by id: `GradientsParams.from_grads(loss.backward(), model)`.

    Each gradient is a tensor on the inner (non-autodiff) backend.

    >>> grads = GradientsParams()
    >>> grads.is_empty()
    True
    """

    __slots__ = ("_grads",)

    def __init__(self, grads: dict[ParamId, Tensor] | None = None) -> None:
        self._grads: dict[ParamId, Tensor] = dict(grads or {})

    # ---- building from backward() ------------------------------------------------------------
    @classmethod
    def from_grads(cls, grads: Gradients, module: Any) -> GradientsParams:
        """The gradients of every param of `module`, removed from `grads`."""
        out = cls()
        out._take(grads, module, None)
        return out

    @classmethod
    def from_module(cls, grads: Gradients, module: Any) -> GradientsParams:
        """The gradients of the params of `module` (often a submodule, `model.conv1`), removed
        from `grads` so a later `from_grads(grads, model)` takes only the rest."""
        return cls.from_grads(grads, module)

    @classmethod
    def from_params(cls, grads: Gradients, module: Any,
                    param_ids: Iterable[ParamId]) -> GradientsParams:
        """The gradients of the params of `module` whose id is in `param_ids`, removed from
        `grads` (e.g. `[model.linear1.bias.id]` for a smaller rate on one bias)."""
        out = cls()
        out._take(grads, module, {str(i) for i in param_ids})
        return out

    def _take(self, grads: Gradients, module: Any, ids: set[ParamId] | None) -> None:
        def visit(path: str, param: Any) -> None:
            if ids is not None and param.id not in ids:
                return
            grad = param.val.grad_remove(grads)
            if grad is not None:
                self.register(param.id, grad)
        module.visit(visit)

    # ---- the map -----------------------------------------------------------------------------
    def get(self, param_id: ParamId) -> Tensor | None:
        """The gradient of `param_id`, or None."""
        return self._grads.get(param_id)

    def remove(self, param_id: ParamId) -> Tensor | None:
        """The gradient of `param_id`, taken out of this container (None when absent)."""
        return self._grads.pop(param_id, None)

    def register(self, param_id: ParamId, grad: Tensor) -> None:
        """Set the gradient of `param_id` (replacing any already there)."""
        self._grads[param_id] = grad

    def ids(self) -> list[ParamId]:
        return list(self._grads)

    def items(self) -> Iterator[tuple[ParamId, Tensor]]:
        return iter(list(self._grads.items()))

    def is_empty(self) -> bool:
        return not self._grads

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, param_id: object) -> bool:
        return param_id in self._grads

    def __repr__(self) -> str:
        return f"GradientsParams({len(self._grads)} params)"
