"""Special functions as whole-array numpy code (numpy has no erf, and `math.erf` per element
costs a Python call per value): the numpy backend's `erf`, `gelu` and `gelu_grad` ops.

Pure numpy, so it runs under Pyodide too. Two evaluations, chosen by dtype:

- float32 and float16 compute in float32 with the odd rational approximation Eigen and XLA use,
  erf(x) = x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (erf is +-1 to float32 precision
  beyond). Measured against float64 `math.erf` over [-30, 30]: absolute error below 5e-7
  (`tests/unit/backend/test_special.py` checks it). About 15 array passes, no Python loop.
- float64 computes W. J. Cody's rational Chebyshev approximations (Math. Comp. 23, 1969) on
  three intervals of |x|: erf directly below 0.46875, erfc = exp(-x^2) * R(|x|) up to 4, and the
  asymptotic form beyond; erf = 1 - erfc there. Relative error within a few units in the last
  place of float64 (the test allows 1e-15 relative, 1e-300 absolute).

A float argument of any other dtype goes through float64.
"""

from __future__ import annotations

import math
from typing import Any

# ---- float32: erf(x) = x * P(x^2) / Q(x^2), |x| <= 4 (the coefficients of Eigen's and XLA's
# float erf, highest power first) ----------------------------------------------------------------
_F32_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
          -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
          -1.60960333262415e-02)
_F32_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
          -7.37332916720468e-03, -1.42647390514189e-02)

# ---- float64: Cody's coefficients, lowest power first as he lists them ---------------------------
_SMALL_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
            3.20937758913846947e03, 1.85777706184603153e-1)
_SMALL_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
            2.84423683343917062e03)
_MID_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
          2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
          2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_MID_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
          1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
          3.43936767414372164e03, 1.23033935480374942e03)
_LARGE_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
            1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_LARGE_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
            6.05183413124413191e-2, 2.33520497626869185e-3)
_SMALL_END = 0.46875
_MID_END = 4.0
# erfc(x) < 1e-300 past here: erf is exactly +-1 in float64
_LARGE_END = 26.6
_RSQRT_PI = 1.0 / math.sqrt(math.pi)


def erf(np: Any, x: Any) -> Any:
    """erf of a float array, elementwise, in x's dtype (see the module docstring for accuracy).

    >>> import numpy as np
    >>> [round(float(v), 6) for v in erf(np, np.array([-1.0, 0.0, 0.5], dtype=np.float32))]
    [-0.842701, 0.0, 0.5205]
    """
    return _by_dtype(np, x, _erf_block, _erf_f64)


def gelu(np: Any, x: Any) -> Any:
    """x * Phi(x) = x * (1 + erf(x / sqrt 2)) / 2, elementwise, in x's dtype.

    >>> import numpy as np
    >>> [round(float(v), 5) for v in gelu(np, np.array([-1.0, 0.0, 2.0]))]
    [-0.15866, 0.0, 1.9545]
    """
    return _by_dtype(np, x, _gelu_block, lambda np, v: v * _phi_f64(np, v))


def gelu_grad(np: Any, x: Any) -> Any:
    """d gelu / dx = Phi(x) + x * exp(-x^2 / 2) / sqrt(2 pi), elementwise, in x's dtype.

    >>> import numpy as np
    >>> [round(float(v), 5) for v in gelu_grad(np, np.array([-1.0, 0.0, 2.0]))]
    [-0.08332, 0.5, 1.08523]
    """
    return _by_dtype(np, x, _gelu_grad_block, _gelu_grad_f64)


_SQRT_HALF = math.sqrt(0.5)
_RSQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# float32 work goes block by block: every step of a block stays in the CPU's cache (three times
# faster than whole-array passes on 512K values), in scratch buffers allocated once per call
_BLOCK = 1 << 16


def _by_dtype(np: Any, x: Any, block: Any, f64: Any) -> Any:
    """Run `block(np, src, dst, scratch)` over float32 blocks of x, or `f64(np, x)` in float64
    for a float64 x (and for float types wider than 4 bytes)."""
    if x.dtype == np.float64:
        return f64(np, x)
    if x.dtype.itemsize > 4:
        return f64(np, x.astype(np.float64)).astype(x.dtype)
    src = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    out = np.empty(src.shape, dtype=np.float32)
    scratch = [np.empty(min(_BLOCK, src.size), dtype=np.float32) for _ in range(3)]
    for start in range(0, src.size, _BLOCK):
        stop = min(start + _BLOCK, src.size)
        block(np, src[start:stop], out[start:stop], [s[:stop - start] for s in scratch])
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def _erf_block(np: Any, x: Any, out: Any, scratch: list[Any]) -> None:
    """out = erf(x) for a float32 block (x may alias out)."""
    t, z, q = scratch
    np.clip(x, -4.0, 4.0, out=t)
    np.multiply(t, t, out=z)
    np.multiply(z, np.float32(_F32_P[0]), out=out)
    out += np.float32(_F32_P[1])
    for c in _F32_P[2:]:
        out *= z
        out += np.float32(c)
    out *= t
    np.multiply(z, np.float32(_F32_Q[0]), out=q)
    q += np.float32(_F32_Q[1])
    for c in _F32_Q[2:]:
        q *= z
        q += np.float32(c)
    out /= q


def _gelu_block(np: Any, x: Any, out: Any, scratch: list[Any]) -> None:
    np.multiply(x, np.float32(_SQRT_HALF), out=out)
    _erf_block(np, out, out, scratch)
    out += np.float32(1.0)
    out *= np.float32(0.5)  # before x: 2 * x overflows for x near float32's largest value
    out *= x


def _gelu_grad_block(np: Any, x: Any, out: Any, scratch: list[Any]) -> None:
    np.multiply(x, np.float32(_SQRT_HALF), out=out)
    _erf_block(np, out, out, scratch)
    out += np.float32(1.0)
    out *= np.float32(0.5)  # Phi(x)
    # x * exp(-x^2 / 2) is below float32's resolution of Phi past |x| = 13; clipping there
    # keeps x^2 finite (the scratch buffers are free again once erf is done)
    clipped, density = scratch[0], scratch[1]
    np.clip(x, -13.0, 13.0, out=clipped)
    np.multiply(clipped, clipped, out=density)
    density *= np.float32(-0.5)
    np.exp(density, out=density)
    density *= clipped
    density *= np.float32(_RSQRT_2PI)
    out += density


def _gelu_grad_f64(np: Any, x: Any) -> Any:
    clipped = np.clip(x, -40.0, 40.0)  # exp(-800) is 0 in float64: x^2 stays finite
    return _phi_f64(np, x) + clipped * np.exp(-0.5 * clipped * clipped) * _RSQRT_2PI


def _phi_f64(np: Any, x: Any) -> Any:
    """The standard normal CDF in float64."""
    return 0.5 * (1.0 + _erf_f64(np, x * _SQRT_HALF))


def _ratio(t: Any, p: tuple[float, ...], q: tuple[float, ...]) -> Any:
    """Cody's rational function in `t` with n = len(q) - 1 Horner steps, in place:
    (p[n] + t (p[n-1] + ... t (p[0] + p[n+1] t))) / (q[n] + t (q[n-1] + ... t (q[0] + t)))."""
    n = len(q) - 1
    num = t * p[n + 1]
    den = t.copy()
    for i in range(n):
        num += p[i]
        num *= t
        den += q[i]
        den *= t
    return (num + p[n]) / (den + q[n])


def _erf_f64(np: Any, x: Any) -> Any:
    out = np.empty(x.shape, dtype=np.float64)
    y = np.abs(x)
    small = y <= _SMALL_END
    if small.any():
        xs = x[small]
        z = xs * xs
        # Cody's form x * (a3 + z (a2 + z (a1 + z (a0 + a4 z)))) / (b3 + z (b2 + ... (b0 + z)))
        out[small] = xs * _ratio(z, _SMALL_A, _SMALL_B)
    mid = (y > _SMALL_END) & (y <= _MID_END)
    if mid.any():
        ym = y[mid]
        erfc = np.exp(-ym * ym) * _ratio(ym, _MID_C, _MID_D)
        out[mid] = np.copysign(1.0 - erfc, x[mid])
    large = (y > _MID_END) & (y < _LARGE_END)
    if large.any():
        yl = y[large]
        w = 1.0 / (yl * yl)
        r = w * _ratio(w, _LARGE_P, _LARGE_Q)
        erfc = np.exp(-yl * yl) * (_RSQRT_PI - r) / yl
        out[large] = np.copysign(1.0 - erfc, x[large])
    rest = ~(small | mid | large)  # |x| >= 26.6, inf and nan
    if rest.any():
        out[rest] = np.where(np.isnan(x[rest]), np.nan, np.sign(x[rest]))
    return out
