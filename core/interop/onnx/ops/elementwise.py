"""Elementwise operators: arithmetic, math functions, activations, comparisons, logic."""

from __future__ import annotations

from ....tensor import Tensor
from ..registry import op


@op("Relu")
def relu(x: Tensor) -> Tensor:
    return x.clamp_min(0)
