"""Registry entries of the reductions along one dim (the reduced dim is kept with size 1).

Each entry names its numpy function `f(np, x, dim)` (keeping the dim; ufunc.reduce rather
than np.sum & co., which add a microsecond of Python dispatch per call), the WGSL combine
expression over `{acc}` and `{x}` with the identity it starts from, and the derivative rule
`grad(x, out, g, dim)` written with front-end tensors on the inner backend (None for the
index-valued argmax/argmin).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class Reduction:
    name: str
    numpy: Callable[..., Any]
    wgsl_combine: str
    wgsl_identity: str
    grad: Callable[..., Any] | None
    returns_index: bool = False

    def __repr__(self) -> str:
        return f"Reduction({self.name})"


def _prod_grad(x, out, g, dim):  # type: ignore[no-untyped-def]
    # d prod / dx_i = prod of the others; out / x_i fails at zeros, so count them.
    is_zero = x.equal_elem(0.0)
    nonzero = x.mask_fill(is_zero, 1.0)
    prod_nonzero = nonzero.prod_dim(dim)
    zeros = is_zero.int().sum_dim(dim)
    no_zero = zeros.equal_elem(0)
    one_zero = zeros.equal_elem(1)
    others = (out / nonzero).mask_where(no_zero.bool_not(), x.zeros_like())
    only_zero = prod_nonzero.expand(x.shape).mask_where(
        (one_zero.expand(x.shape).bool_and(is_zero)).bool_not(), x.zeros_like())
    return g * (others + only_zero)


def _extreme_grad(arg: str) -> Callable[..., Any]:
    def grad(x, out, g, dim):  # type: ignore[no-untyped-def]
        index = getattr(x, arg)(dim)
        return x.zeros_like().scatter(dim, index, g)
    return grad


SUM = Reduction("sum", lambda np, x, dim: np.add.reduce(x, axis=dim, keepdims=True),
                "{acc} + {x}", "0", lambda x, out, g, dim: g.expand(x.shape))
PROD = Reduction("prod", lambda np, x, dim: np.multiply.reduce(x, axis=dim, keepdims=True),
                 "{acc} * {x}", "1", _prod_grad)
MAX = Reduction("max", lambda np, x, dim: np.maximum.reduce(x, axis=dim, keepdims=True),
                "max({acc}, {x})", "lowest", _extreme_grad("argmax"))
MIN = Reduction("min", lambda np, x, dim: np.minimum.reduce(x, axis=dim, keepdims=True),
                "min({acc}, {x})", "highest", _extreme_grad("argmin"))
ARGMAX = Reduction("argmax", lambda np, x, dim: x.argmax(axis=dim, keepdims=True),
                   "", "lowest", None, returns_index=True)
ARGMIN = Reduction("argmin", lambda np, x, dim: x.argmin(axis=dim, keepdims=True),
                   "", "highest", None, returns_index=True)

REDUCTIONS = {r.name: r for r in (SUM, PROD, MAX, MIN, ARGMAX, ARGMIN)}
