"""Matrix products: MatMul, Gemm and Einsum (integer operands multiplied as floats)."""

from __future__ import annotations

import math

from ....dtype import Kind
from ....tensor import Tensor
from ..registry import op
from ._util import floated, restore


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """a @ b (numpy's matmul rules); integer operands are multiplied as floats."""
    if a.kind is Kind.FLOAT and b.kind is Kind.FLOAT:
        return a.matmul(b)
    return restore(floated(a).matmul(floated(b)), a)


@op("MatMul")
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with numpy's rules: batch dims broadcast, 1-d operands."""
    return _mm(a, b)


@op("Gemm")
def gemm(a: Tensor, b: Tensor, c: Tensor | None = None, *, alpha: float = 1.0,
         beta: float = 1.0, transA: int = 0, transB: int = 0) -> Tensor:  # noqa: N803
    """alpha * A' @ B' + beta * C, C broadcast to the result."""
    y = _mm(a.transpose() if transA else a, b.transpose() if transB else b)
    if alpha != 1.0:
        y = y * alpha
    if c is None:
        return y
    c = c.cast(y.dtype)
    return y + (c * beta if beta != 1.0 else c)


_ELLIPSIS = [chr(0x3b1 + i) for i in range(24)]  # stand-ins for the dims "..." covers


def _terms(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' and the output's subscripts, "..." spelled out as one letter per dim."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"Einsum equation {equation!r} names {len(terms)} operands, "
                         f"got {len(ranks)}")
    widths = [r - len(t.replace("...", "")) for t, r in zip(terms, ranks, strict=True)]
    most = max([w for t, w in zip(terms, widths, strict=True) if "..." in t] or [0])
    ell = _ELLIPSIS[:most]
    terms = [t.replace("...", "".join(ell[most - w:])) for t, w in zip(terms, widths,
                                                                        strict=True)]
    if arrow:
        return terms, rhs.replace("...", "".join(ell))
    letters = "".join(terms)
    once = sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell)
    return terms, "".join(ell) + "".join(once)


def _diagonal(x: Tensor, term: str) -> tuple[Tensor, str]:
    """x with every repeated subscript reduced to its diagonal (the letter moves last)."""
    while True:
        twice = next((c for c in term if term.count(c) > 1), None)
        if twice is None:
            return x, term
        p = term.index(twice)
        q = term.index(twice, p + 1)
        n = x.shape[p]
        x = x.movedim([p, q], [-2, -1])
        x = x.reshape(x.shape[:-2] + (n * n,)).select(-1, [i * (n + 1) for i in range(n)])
        term = "".join(c for i, c in enumerate(term) if i not in (p, q)) + twice


def _sum_out(x: Tensor, term: str, keep: set[str]) -> tuple[Tensor, str]:
    """Sum over the subscripts not in `keep`."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    for i in drop:
        x = x.sum_dim(i)
    if drop:
        x = x.squeeze_dims(drop)
    return x, "".join(c for c in term if c in keep)


def _contract(a: Tensor, la: str, b: Tensor, lb: str, keep: set[str]) -> tuple[Tensor, str]:
    """The product of two operands summed over their shared subscripts not in `keep`."""
    a, la = _sum_out(a, la, keep | set(lb))
    b, lb = _sum_out(b, lb, keep | set(la))
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    mine = [c for c in la if c not in lb]
    theirs = [c for c in lb if c not in la]
    for c in summed:  # a size-1 dim broadcast against the other's: sum the other first
        i, j = la.index(c), lb.index(c)
        if a.shape[i] != b.shape[j]:
            a, b = (a, b.sum_dim(j)) if a.shape[i] == 1 else (a.sum_dim(i), b)
    a = a.permute([la.index(c) for c in batch + mine + summed])
    b = b.permute([lb.index(c) for c in batch + summed + theirs])
    nb, nm, ns = len(batch), len(mine), len(summed)
    a2 = a.reshape(a.shape[:nb] + (math.prod(a.shape[nb:nb + nm]), math.prod(a.shape[nb + nm:])))
    b2 = b.reshape(b.shape[:nb] + (math.prod(b.shape[nb:nb + ns]), math.prod(b.shape[nb + ns:])))
    c2 = _mm(a2, b2)
    out = c2.reshape(c2.shape[:nb] + a.shape[nb:nb + nm] + b.shape[nb + ns:])
    return out, "".join(batch + mine + theirs)


@op("Einsum")
def einsum(*xs: Tensor, equation: str) -> Tensor:
    """Einstein summation: diagonals, sums, transposes and products of the operands."""
    terms, out = _terms(equation, [x.ndim for x in xs])
    parts = [_diagonal(x, t) for x, t in zip(xs, terms, strict=True)]
    y, ly = parts[0]
    rest = [t for _, t in parts[1:]]
    y, ly = _sum_out(y, ly, set(out).union(*rest))
    for k, (x, lx) in enumerate(parts[1:], 1):
        keep = set(out).union(*(t for _, t in parts[k + 1:]))
        y, ly = _contract(y, ly, x, lx, keep)
    return y.permute([ly.index(c) for c in out]) if ly != out else y


__all__ = ["einsum", "gemm", "matmul"]
