"""Helpers for the nn tests: numpy reference computations and finite-difference gradient checks.

Gradients are checked in float64 on autodiff<numpy>: the autodiff gradient of
sum(f(x) * r) for a random r against central differences of the same function. Helpers reach
the tests as fixtures (`ref`, `gradcheck`, `module_gradcheck`), since tests import no conftest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.module import Module

AD = "autodiff<numpy>"


# ---- references ---------------------------------------------------------------------------------
def conv2d_ref(x: Any, w: Any, b: Any = None, stride: tuple[int, int] = (1, 1),
               pads: Any = ((0, 0), (0, 0)), dil: tuple[int, int] = (1, 1),
               groups: int = 1) -> Any:
    """Direct definition: out[n, o, i, j] = sum over taps and the group's channels."""
    x = np.pad(x, ((0, 0), (0, 0), *pads))
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, co, oh, ow))
    og = co // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dil[0], j * dil[1]
                patch = x[:, g * cg:(g + 1) * cg, r0:r0 + stride[0] * (oh - 1) + 1:stride[0],
                          c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += np.asarray(b)[None, :, None, None]
    return out


def conv_transpose2d_ref(x: Any, w: Any, b: Any = None, stride: tuple[int, int] = (1, 1),
                         pad: tuple[int, int] = (0, 0), out_pad: tuple[int, int] = (0, 0),
                         dil: tuple[int, int] = (1, 1), groups: int = 1) -> Any:
    """Scatter definition: each input pixel adds weight * value at its strided position."""
    n, ci, h, wd = x.shape
    _, cog, kh, kw = w.shape
    cig = ci // groups
    full = np.zeros((n, cog * groups, (h - 1) * stride[0] + dil[0] * (kh - 1) + 1 + out_pad[0],
                     (wd - 1) * stride[1] + dil[1] * (kw - 1) + 1 + out_pad[1]))
    for g in range(groups):
        xs = x[:, g * cig:(g + 1) * cig]
        for i in range(h):
            for j in range(wd):
                for ki in range(kh):
                    for kj in range(kw):
                        r, c = i * stride[0] + ki * dil[0], j * stride[1] + kj * dil[1]
                        full[:, g * cog:(g + 1) * cog, r, c] += np.einsum(
                            "nc,co->no", xs[:, :, i, j], w[g * cig:(g + 1) * cig, :, ki, kj])
    oh = (h - 1) * stride[0] - 2 * pad[0] + dil[0] * (kh - 1) + out_pad[0] + 1
    ow = (wd - 1) * stride[1] - 2 * pad[1] + dil[1] * (kw - 1) + out_pad[1] + 1
    out = full[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]
    if b is not None:
        out = out + np.asarray(b)[None, :, None, None]
    return out


def pool2d_ref(x: Any, kernel: tuple[int, int], stride: tuple[int, int], pads: Any,
               kind: str, dil: tuple[int, int] = (1, 1), include_pad: bool = True) -> Any:
    """Max or mean over windows, with indices for max; loops over output positions."""
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), *pads), constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), pads)
    n, c, h, w = xp.shape
    oh = (h - dil[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w - dil[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            rows = [i * stride[0] + a * dil[0] for a in range(kernel[0])]
            cols = [j * stride[1] + b * dil[1] for b in range(kernel[1])]
            win = xp[:, :, rows][:, :, :, cols].reshape(n, c, -1)
            if kind == "max":
                k = win.argmax(-1)
                out[:, :, i, j] = win.max(-1)
                r = np.asarray(rows)[k // kernel[1]] - pads[0][0]
                cc = np.asarray(cols)[k % kernel[1]] - pads[1][0]
                idx[:, :, i, j] = r * x.shape[3] + cc
            else:
                count = win.shape[-1] if include_pad else ones[rows][:, cols].sum()
                out[:, :, i, j] = win.sum(-1) / count
    return (out, idx) if kind == "max" else out


def adaptive_avg_ref(x: Any, out: tuple[int, int]) -> Any:
    n, c, h, w = x.shape
    res = np.zeros((n, c, *out))
    for i in range(out[0]):
        r0, r1 = (i * h) // out[0], math.ceil((i + 1) * h / out[0])
        for j in range(out[1]):
            c0, c1 = (j * w) // out[1], math.ceil((j + 1) * w / out[1])
            res[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    return res


def interp_axis_ref(x: Any, out: int, axis: int, mode: str, align: bool) -> Any:
    """Resample one axis by its definition, one output sample at a time."""
    size = x.shape[axis]
    moved = np.moveaxis(x, axis, -1)
    res = np.zeros(moved.shape[:-1] + (out,))
    for i in range(out):
        if mode == "nearest":
            res[..., i] = moved[..., min(size - 1, int(math.floor(i * size / out)))]
            continue
        if align:
            src = i * (size - 1) / (out - 1) if out > 1 else 0.0
        else:
            src = max(0.0, (i + 0.5) * size / out - 0.5)
        lo = min(int(math.floor(src)), size - 1)
        hi = min(lo + 1, size - 1)
        t = src - lo
        res[..., i] = moved[..., lo] * (1 - t) + moved[..., hi] * t
    return np.moveaxis(res, -1, axis)


# ---- gradient checks ----------------------------------------------------------------------------
def _t(a: Any, *, grad: bool = False) -> pyrite.Tensor:
    t = pyrite.tensor(np.asarray(a, dtype=np.float64), device=AD)
    return t.require_grad() if grad else t


def check_grad(fn: Callable[..., pyrite.Tensor], *arrays: Any, eps: float = 1e-6,
               atol: float = 1e-6, rtol: float = 1e-5) -> None:
    """Autodiff gradients of sum(fn(*xs) * r) against central differences, every input."""
    arrays = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
    rng = np.random.default_rng(1)
    tracked = [_t(a, grad=True) for a in arrays]
    out = fn(*tracked)
    r = rng.normal(size=out.shape)
    grads = (out * _t(r)).sum().backward()

    def value(xs: list[Any]) -> float:
        return float((fn(*[_t(x) for x in xs]).numpy() * r).sum())

    for i, a in enumerate(arrays):
        got = tracked[i].grad(grads)
        analytic = np.zeros_like(a) if got is None else got.numpy()
        numeric = np.zeros_like(a)
        for k in np.ndindex(a.shape):
            plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
            plus[i][k] += eps
            minus[i][k] -= eps
            numeric[k] = (value(plus) - value(minus)) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {i}")


def check_module_grad(module: Module, x: Any, *, eps: float = 1e-6, atol: float = 1e-6,
                      rtol: float = 1e-5, input_grad: bool = True) -> None:
    """Like check_grad for a module (on autodiff<numpy>, f64 params): the input and every
    trained param."""
    x = np.asarray(x, dtype=np.float64)
    rng = np.random.default_rng(2)
    xt = _t(x, grad=input_grad) if x.dtype.kind == "f" else x
    out = module(xt)
    r = rng.normal(size=out.shape)
    grads = (out * _t(r)).sum().backward()

    def value(m: Module, xv: Any) -> float:
        return float((m(_t(xv)).numpy() * r).sum())

    if input_grad:
        numeric = np.zeros_like(x)
        for k in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[k] += eps
            minus[k] -= eps
            numeric[k] = (value(module, plus) - value(module, minus)) / (2 * eps)
        np.testing.assert_allclose(xt.grad(grads).numpy(), numeric, atol=atol, rtol=rtol,
                                   err_msg="input gradient")
    for path, p in module.named_params():
        if not p.require_grad:
            continue
        base = p.val.numpy()
        numeric = np.zeros_like(base)
        for k in np.ndindex(base.shape):
            vals = []
            for sign in (1, -1):
                moved = base.copy()
                moved[k] += sign * eps
                m = module.map(lambda q, pp, moved=moved, path=path: pp.with_val(_t(moved))
                               if q == path else pp)
                vals.append(value(m, x))
            numeric[k] = (vals[0] - vals[1]) / (2 * eps)
        got = p.grad(grads)
        np.testing.assert_allclose(got.numpy(), numeric, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of {path}")


def to_f64(module: Module) -> Module:
    """The module on autodiff<numpy> with f64 params (gradient checks need the precision)."""
    return module.to_device(AD).map(lambda _, p: p.with_val(p.val.cast("f64")))


@pytest.fixture
def ref() -> SimpleNamespace:
    return SimpleNamespace(conv2d=conv2d_ref, conv_transpose2d=conv_transpose2d_ref,
                           pool2d=pool2d_ref, adaptive_avg=adaptive_avg_ref,
                           interp_axis=interp_axis_ref)


@pytest.fixture
def gradcheck() -> Callable[..., None]:
    return check_grad


@pytest.fixture
def module_gradcheck() -> Callable[..., None]:
    return check_module_grad


@pytest.fixture
def f64() -> Callable[[Module], Module]:
    return to_f64


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
