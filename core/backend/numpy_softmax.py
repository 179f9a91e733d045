"""numpy overrides of softmax, log_softmax and softmax's gradient (the composites are in
`base.py`): each works in place on one new array instead of one per step, and sums over the last
dim as a matrix-vector product (numpy's own reduction over a short last axis is several times
slower). Conformance: `tests/conformance/test_activation.py` and `test_softmax_grad.py`.
"""

from __future__ import annotations

from typing import Any

from .numpy_blas import product

Prim = Any


class NumpySoftmaxOps:
    """Mixin of `NumpyBackend`."""

    np: Any

    def _sum_keep(self, x: Prim, dim: int) -> Prim:
        """x summed along dim, the dim kept with size 1."""
        if dim == x.ndim - 1 and x.dtype.kind == "f" and x.dtype.itemsize >= 4:
            return product(self.np, x, self.np.ones(x.shape[-1], dtype=x.dtype))[..., None]
        return x.sum(axis=dim, keepdims=True)

    def softmax(self, x: Prim, dim: int) -> Prim:
        np = self.np
        out = np.subtract(x, x.max(axis=dim, keepdims=True))
        np.exp(out, out=out)
        out /= self._sum_keep(out, dim)
        return out

    def log_softmax(self, x: Prim, dim: int) -> Prim:
        np = self.np
        out = np.subtract(x, x.max(axis=dim, keepdims=True))
        total = self._sum_keep(np.exp(out), dim)
        out -= np.log(total, out=total)
        return out

    def softmax_grad(self, out: Prim, grad: Prim, dim: int) -> Prim:
        np = self.np
        dx = np.multiply(grad, out)
        total = self._sum_keep(dx, dim)
        np.subtract(grad, total, out=dx)
        dx *= out
        return dx
