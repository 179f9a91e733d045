"""GradientsAccumulator: sum the gradients of several backward passes, then step once.

Used for gradient accumulation (a large effective batch from several small ones): accumulate
each step's `GradientsParams`, and after N of them pop the sums with `grads()`. Averaging, if
wanted, is the caller's choice (divide the learning rate by N, or the loss).
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .grads import GradientsParams, ParamId


class GradientsAccumulator:
    """`acc.accumulate(model, grads)` a few times, then `model = optim.step(lr, model,
    acc.grads())`.

    >>> acc = GradientsAccumulator()
    >>> acc.grads().is_empty()
    True
    """

    def __init__(self) -> None:
        self._sums: dict[ParamId, Tensor] = {}
        self.count = 0

    def accumulate(self, module: Any, grads: GradientsParams) -> None:
        """Add the gradients of `module`'s params found in `grads` to the running sums."""
        def visit(path: str, param: Any) -> None:
            grad = grads.remove(param.id)
            if grad is None:
                return
            prev = self._sums.get(param.id)
            self._sums[param.id] = grad if prev is None else prev + grad.to_device(prev.device)
        module.visit(visit)
        self.count += 1

    def grads(self) -> GradientsParams:
        """The summed gradients, leaving the accumulator empty."""
        out = GradientsParams(self._sums)
        self._sums = {}
        self.count = 0
        return out

    def is_empty(self) -> bool:
        return not self._sums
