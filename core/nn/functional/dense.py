"""Dense ops: `linear` and `embedding`."""

from __future__ import annotations

from ... import checks, consuming
from ...dtype import Kind
from ...errors import ShapeError
from ...tensor import Tensor
from ._check import (
    _rank,
    _same_device,
    _tensor,
)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight + bias, weight (d_input, d_output) as Burn stores it.

    Shapes: (..., d_input) -> (..., d_output).
    """
    op = "linear"
    _tensor(op, "input", x)
    _tensor(op, "weight", weight)
    if x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"linear: input has {x.shape[-1] if x.ndim else 0} features (shape "
                         f"{x.shape}), the weight expects {weight.shape[0]} (shape "
                         f"{weight.shape})")
    _same_device(op, x, weight, bias)
    out = x @ weight
    if bias is None:
        return out
    if out.device.is_autodiff:  # its graph keeps the product: the plain add, no extra checks
        return out + bias
    # the product is new memory nobody else holds: the bias may be added into it (numpy does;
    # see pyrite.consuming)
    return consuming.add(out, bias)




def embedding(weight: Tensor, indices: Tensor) -> Tensor:
    """Rows of `weight` at `indices`. Shapes: weight (V, D), indices (...) Int -> (..., D)."""
    op = "embedding"
    _tensor(op, "weight", weight)
    _tensor(op, "indices", indices, Kind.INT)
    _rank(op, "weight", weight, 2, "num_embeddings, d_model")
    _same_device(op, weight, indices)
    n = weight.shape[0]
    checks.in_range(indices, n, lambda i: ShapeError(
        f"{op}: index {i} is out of range for {n} embeddings"))
    if indices.dtype is not weight.device.int_dtype:
        indices = indices.cast(weight.device.int_dtype)
    return weight._new(weight.device.embedding(weight.into_primitive(),
                                               indices.into_primitive()))
