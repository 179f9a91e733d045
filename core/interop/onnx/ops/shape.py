"""Operators that move, reshape, join or split data, and the ones that make shapes."""

from __future__ import annotations

import math

from ....creation import cat
from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm


@op("Concat")
def concat(*xs: Tensor, axis: int) -> Tensor:
    """Join along `axis` (empty inputs are skipped)."""
    parts = [x for x in xs if x is not None]
    d = norm(axis, parts[0].ndim)
    parts = [p for p in parts if p.shape[d] != 0] or parts[:1]
    return parts[0] if len(parts) == 1 else cat(parts, d)


@op("Flatten")
def flatten(x: Tensor, *, axis: int = 1) -> Tensor:
    """2-d: dims before `axis` make the rows, the rest the columns."""
    a = norm(axis, x.ndim + 1) if axis != x.ndim else x.ndim
    rows = math.prod(x.shape[:a])
    return x.reshape((rows, math.prod(x.shape[a:])))

