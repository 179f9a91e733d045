"""Reductions, softmax, arg-reductions, cumulative sums and top-k."""

from __future__ import annotations

import math

from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm


def _softmax_like(x: Tensor, axis: int, opset: int, log: bool) -> Tensor:
    if opset >= 13:
        d = norm(axis, x.ndim)
        return x.log_softmax(d) if log else x.softmax(d)
    # before opset 13: coerce to 2-d at `axis`, normalise each row
    a = norm(axis, x.ndim) if axis != x.ndim else x.ndim
    shape = x.shape
    flat = x.reshape((math.prod(shape[:a]), math.prod(shape[a:])))
    y = flat.log_softmax(1) if log else flat.softmax(1)
    return y.reshape(shape)


@op("Softmax")
def softmax(x: Tensor, *, axis: int | None = None, opset: int = 13) -> Tensor:
    """Softmax along `axis` (default -1 from opset 13, 1 with 2-d coercion before)."""
    axis = (-1 if opset >= 13 else 1) if axis is None else axis
    return _softmax_like(x, axis, opset, log=False)


@op("LogSoftmax")
def log_softmax(x: Tensor, *, axis: int | None = None, opset: int = 13) -> Tensor:
    """Log-softmax, with Softmax's axis rules."""
    axis = (-1 if opset >= 13 else 1) if axis is None else axis
    return _softmax_like(x, axis, opset, log=True)
