"""Activation functions (Burn's `activation` module), composed from tensor ops once for all
backends. softmax/log_softmax go through the backend so a fast kernel can serve them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .backend import unary as U
from .backend.registry import FLOAT
from .errors import ShapeError

if TYPE_CHECKING:
    from .tensor import Tensor


def relu(x: Tensor) -> Tensor:
    """max(x, 0); the gradient is 0 at and below 0 (a registry op: see backend/unary.py)."""
    return x._unary(U.RELU)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, negative_slope * x otherwise."""
    x._need("leaky_relu", FLOAT)
    return x.mask_where(x.lower_elem(0.0), x * negative_slope)


def prelu(x: Tensor, alpha: Tensor) -> Tensor:
    """leaky_relu with a learned slope; `alpha` has 1 value or one per channel (dim 1)."""
    x._need("prelu", FLOAT)
    if alpha.ndim != 1:
        raise ShapeError(f"prelu: alpha must be 1-D, got shape {alpha.shape}")
    if x.ndim >= 2 and alpha.shape[0] not in (1, x.shape[1]):
        raise ShapeError(f"prelu: alpha has {alpha.shape[0]} values; need 1 or one per "
                         f"channel ({x.shape[1]})")
    shape = [1] * x.ndim
    if x.ndim >= 2:
        shape[1] = alpha.shape[0]
    slope = alpha.reshape(shape) if x.ndim >= 2 else alpha
    return x.mask_where(x.lower_elem(0.0), x * slope)


def gelu(x: Tensor) -> Tensor:
    """x * Phi(x) with the exact erf form (a registry op: see backend/unary.py)."""
    return x._unary(U.GELU)


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def hard_sigmoid(x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """clamp(alpha * x + beta, 0, 1) (ONNX's defaults, as Burn)."""
    x._need("hard_sigmoid", FLOAT)
    return (x * alpha + beta).clamp(0.0, 1.0)


def log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-x)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    return x * x.sigmoid()


def softplus(x: Tensor, beta: float = 1.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, computed as max(z, 0) + log1p(exp(-|z|)) to avoid overflow."""
    x._need("softplus", FLOAT)
    z = x * beta
    return (relu(z) + (-z.abs()).exp().log1p()) / beta


def mish(x: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return x * softplus(x).tanh()


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def softmax(x: Tensor, dim: int) -> Tensor:
    """exp(x) / sum(exp(x)) along dim."""
    return x.softmax(dim)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    return x.log_softmax(dim)


def softmin(x: Tensor, dim: int) -> Tensor:
    """softmax(-x)."""
    return (-x).softmax(dim)


def quiet_softmax(x: Tensor, dim: int) -> Tensor:
    """exp(x) / (1 + sum(exp(x))): like softmax with an extra zero logit, so all-small rows
    can give all-small outputs (useful in attention)."""
    x._need("quiet_softmax", FLOAT)
    shift = x.max_dim(dim).detach()
    e = (x - shift).exp()
    return e / ((-shift).exp() + e.sum_dim(dim))
