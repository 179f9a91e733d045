"""Gradient checking: autodiff gradients against central finite differences in float64.

`check_grad(fn, arrays, device)` builds tracked f64 tensors from numpy arrays, takes the
gradient of sum(fn(*tensors) * w) for a fixed random weight w (so every output element
matters differently), and compares it with finite differences computed on the numpy backend.
On a non-numpy autodiff device the reference is autodiff<numpy>'s gradient instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import pyrite

Fn = Callable[..., pyrite.Tensor]
EPS = 1e-6


def _loss_value(fn: Fn, arrays: Sequence[np.ndarray], weight: np.ndarray | None) -> float:
    ts = [pyrite.tensor(a, device="numpy", dtype="f64") for a in arrays]
    out = fn(*ts).numpy().astype(np.float64)
    return float((out * weight).sum()) if weight is not None else float(out.sum())


def _weight(fn: Fn, arrays: Sequence[np.ndarray]) -> np.ndarray:
    ts = [pyrite.tensor(a, device="numpy", dtype="f64") for a in arrays]
    shape = fn(*ts).shape
    return np.random.default_rng(1234).uniform(0.5, 1.5, size=shape)


def autodiff_grads(fn: Fn, arrays: Sequence[np.ndarray], device: pyrite.Backend,
                   dtype: str = "f64", track: Sequence[bool] | None = None
                   ) -> list[np.ndarray | None]:
    weight = _weight(fn, arrays)
    ts = [pyrite.tensor(a, device=device, dtype=dtype) for a in arrays]
    track = track or [True] * len(ts)
    ts = [t.require_grad() if on else t for t, on in zip(ts, track, strict=True)]
    out = fn(*ts)
    w = pyrite.tensor(weight, device=device, dtype=out.dtype)
    grads = (out * w).sum().backward()
    found = [t.grad(grads) for t in ts]
    return [None if g is None else g.numpy().astype(np.float64) for g in found]


def finite_differences(fn: Fn, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    weight = _weight(fn, arrays)
    result = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a, dtype=np.float64)
        for idx in np.ndindex(a.shape):
            up = [x.copy() for x in arrays]
            down = [x.copy() for x in arrays]
            up[i][idx] += EPS
            down[i][idx] -= EPS
            g[idx] = (_loss_value(fn, up, weight) - _loss_value(fn, down, weight)) / (2 * EPS)
        result.append(g)
    return result


def check_grad(fn: Fn, arrays: Sequence[np.ndarray], device: pyrite.Backend,
               rtol: float = 1e-5, atol: float = 1e-6) -> None:
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    if device.name == "autodiff<numpy>":
        got = autodiff_grads(fn, arrays, device)
        want: list[np.ndarray | None] = list(finite_differences(fn, arrays))
    else:
        # other backends compute in their float dtype: compare with autodiff<numpy> in f32
        got = autodiff_grads(fn, arrays, device, dtype=device.float_dtype.short)
        want = autodiff_grads(fn, arrays, pyrite.device("autodiff<numpy>"))
        rtol, atol = max(rtol, 2e-3), max(atol, 2e-3)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g is not None, f"input {i}: no gradient"
        assert g.shape == w.shape, f"input {i}: gradient shape {g.shape}, expected {w.shape}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"input {i}")
