"""Gradients of user ops: the composite's derivative, and the check of a user's backward.

Without a backward of its own, an op's gradient is its composite's: the composite runs again
under a fresh `Autodiff` of the inner backend (the kernel served the forward pass; this costs
one more forward of the composite in backward, as a checkpoint would), and the vector-Jacobian
product comes from backpropagating `sum(out * g)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..backend.autodiff import Autodiff, Tracked
from ..backend.base import Backend, Prim
from ..dtype import Kind
from ..errors import GradError, ShapeError

if TYPE_CHECKING:
    from ..tensor import Tensor


def composite_vjp(composite: Callable[..., Tensor], inner: Backend, values: list[Any], g: Prim,
                  needed: Sequence[bool], attrs: Mapping[str, Any]) -> list[Prim | None]:
    """d(sum(composite(values) * g)) / d(values), for the values `needed` (None for the rest and
    for host scalars among the values)."""
    from ..tensor import Tensor
    ad = Autodiff(inner)
    args: list[Any] = []
    for value, need in zip(values, needed, strict=True):
        if isinstance(value, (int, float)):
            args.append(value)
            continue
        prim = ad.set_require_grad(Tracked(value), need)
        args.append(Tensor._wrap(prim, ad, Kind.FLOAT))
    out = composite(*args, **attrs)
    weighted = out * Tensor._wrap(Tracked(g), ad, Kind.FLOAT)
    grads = weighted.sum().backward()
    found: list[Prim | None] = []
    for arg, need in zip(args, needed, strict=True):
        # None also when the output does not depend on it: autodiff skips a None gradient
        grad = arg.grad(grads) if need and isinstance(arg, Tensor) else None
        found.append(None if grad is None else grad._prim)
    return found


def checked_grads(what: str, names: Sequence[str], shapes: Sequence[tuple[int, ...]],
                  got: object, needed: Sequence[bool]) -> list[Prim | None]:
    """A user backward's result as primitives, refused with the shapes when it has the wrong
    number of gradients or a gradient of another shape than its input."""
    from ..tensor import Tensor
    if not isinstance(got, (tuple, list)) or len(got) != len(names):
        count = len(got) if isinstance(got, (tuple, list)) else type(got).__name__
        raise GradError(f"{what}: returned {count} gradients for the {len(names)} inputs "
                        f"({', '.join(names)}); return one per input (None for one that needs "
                        f"none)")
    out: list[Prim | None] = []
    for name, shape, grad, need in zip(names, shapes, got, needed, strict=True):
        if grad is None:
            out.append(None)
            continue
        if grad.__class__ is not Tensor:
            raise GradError(f"{what}: the gradient of {name} is a {type(grad).__name__}, not a "
                            f"Tensor")
        if tuple(grad.shape) != tuple(shape):
            got_shapes = [None if x is None else tuple(x.shape) for x in got]
            raise ShapeError(f"{what}: the gradient of {name} has shape {tuple(grad.shape)}, "
                             f"{name} has shape {tuple(shape)} (gradients {got_shapes} for "
                             f"inputs {[tuple(s) for s in shapes]}); each gradient must have "
                             f"its input's shape")
        out.append(grad._prim if need else None)
    return out
