"""The layer-norm module op and its gradient, as composites of primitives.

`Backend` inherits `NormOps`; a backend may override `layer_norm` and `layer_norm_grad` with
faster code (numpy does, in `numpy_norm.py`), and Autodiff's rule for `layer_norm` calls the
inner backend's `layer_norm_grad`, so the fast code serves both passes. The composites are
written with front-end tensors on the backend itself (as `attention_ops.py` is): on Fusion
their elementwise parts fuse as before.

Arguments arrive validated by `pyrite.nn.LayerNorm`: x (..., D), gamma and beta (D,), one float
dtype, on this backend; epsilon a Python float. The statistics are over the last dim, with the
biased variance (PyTorch's and Burn's LayerNorm).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..dtype import Kind

if TYPE_CHECKING:
    from ..tensor import Tensor

Prim = Any


class NormOps:
    """Mixin of `Backend`: layer norm over the last dim, forward and backward."""

    def _norm_tensors(self, *prims: Prim) -> list[Tensor]:
        from ..tensor import Tensor
        backend: Any = self
        return [Tensor._wrap(p, backend, Kind.FLOAT) for p in prims]

    def layer_norm(self, x: Prim, gamma: Prim, beta: Prim, epsilon: float) -> Prim:
        """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last dim."""
        xt, gt, bt = self._norm_tensors(x, gamma, beta)
        var, mean = xt.var_mean_bias(-1)
        return ((xt - mean) / (var + epsilon).sqrt() * gt + bt).into_primitive()

    def layer_norm_grad(self, x: Prim, gamma: Prim, grad: Prim,
                        epsilon: float) -> tuple[Prim, Prim, Prim]:
        """The gradients of x, gamma and beta given the output's gradient.

        With x_hat = (x - mean) r, r = 1 / sqrt(var + epsilon) and dy = grad * gamma:
        dx = r (dy - mean(dy) - x_hat mean(dy x_hat)), dgamma = sum(grad x_hat) and
        dbeta = sum(grad), the sums over every dim but the last."""
        xt, gt, gr = self._norm_tensors(x, gamma, grad)
        var, mean = xt.var_mean_bias(-1)
        r = (var + epsilon).sqrt().recip()
        x_hat = (xt - mean) * r
        dy = gr * gt
        dx = (dy - dy.mean_dim(-1) - x_hat * (dy * x_hat).mean_dim(-1)) * r
        d = xt.shape[-1]
        dgamma = (gr * x_hat).reshape([-1, d]).sum_dim(0).reshape([d])
        dbeta = gr.reshape([-1, d]).sum_dim(0).reshape([d])
        return dx.into_primitive(), dgamma.into_primitive(), dbeta.into_primitive()
