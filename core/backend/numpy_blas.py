"""The numpy backend's BLAS products, with BLAS's floating-point "invalid" flag silenced.

BLAS's floating-point flags are not a reliable signal: OpenBLAS 0.3.31's SkylakeX kernels
(numpy's wheel, on AMD EPYC) raised "invalid" on products of finite values, a (6, 5) @ (5, 1)
matmul in one full test run of three and a (3, 5) @ (5,) row mean of the layer-norm gradient in
another, never in isolation (numpy#13173, numpy#24067, OpenBLAS#1924 describe earlier cases).
A NaN that a product really makes is in its output; the flag alone is not reported. numpy's
error state is per thread, so `product` sets it around each call, wherever it runs.
"""

from __future__ import annotations

from typing import Any


def quiet(np: Any) -> Any:
    """The context in which a BLAS call's "invalid" flag is not reported."""
    return np.errstate(invalid="ignore")


def product(np: Any, a: Any, b: Any, out: Any = None) -> Any:
    """np.matmul(a, b[, out]) without BLAS's spurious "invalid" warning."""
    with np.errstate(invalid="ignore"):
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


__all__ = ["product", "quiet"]
