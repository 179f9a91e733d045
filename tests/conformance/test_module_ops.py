"""Module ops: each backend's version (fast overrides included) against the composites of
`pyrite.backend.module_ops`, forward and backward; and Autodiff's conv2d rule against the
gradient of the composite."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.module_ops import ModuleOps
from pyrite.nn import functional as F

from .gradcheck import check_grad


def _prim(backend: pyrite.Backend, a: np.ndarray) -> object:
    return pyrite.tensor(a.astype(np.float32), device=backend).into_primitive()


def _np(backend: pyrite.Backend, prim: object) -> np.ndarray:
    return np.asarray(backend.to_data(prim).to_numpy(), dtype=np.float64)


CONV = [  # x, w, stride, padding pairs, dilation, groups
    ((2, 4, 7, 6), (6, 2, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),
    ((2, 1, 9, 9), (4, 1, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((1, 3, 6, 6), (3, 3, 2, 2), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),
    # shapes where webgpu's heuristic (conv.prefers_gemm) takes the implicit GEMM: forward
    # from 32 channels (16 on 1x1), the input gradient from 32 input channels (16 on 1x1),
    # the weight gradient from 1024 weights; below that the direct weight gradient splits
    # its reduction into slices
    ((2, 3, 11, 10), (32, 3, 3, 3), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),  # 3-channel input
    ((2, 8, 9, 7), (32, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # ragged, padded
    ((1, 6, 9, 9), (64, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),  # groups, dilation
    ((2, 16, 5, 6), (32, 16, 1, 1), (2, 1), ((0, 1), (1, 0)), (1, 1), 1),  # 1x1: dx by GEMM
    ((1, 32, 6, 5), (128, 32, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # dw by GEMM
    ((2, 16, 7, 9), (8, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # dx direct, dw GEMM
    ((1, 40, 9, 8), (12, 40, 3, 3), (2, 2), ((1, 0), (0, 1)), (1, 1), 1),  # dx GEMM, stride 2
    ((1, 32, 5, 5), (120, 32, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # dx GEMM, K split
]


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CONV)
def test_conv2d_and_its_gradients_agree_with_the_composites(backend, xs, ws, stride, pads, dil,
                                                            groups) -> None:
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=xs), rng.normal(size=ws), rng.normal(size=ws[0])
    args = (stride, pads, dil, groups)
    px, pw, pb = _prim(backend, x), _prim(backend, w), _prim(backend, b)
    out = backend.conv2d(px, pw, pb, *args)
    want = ModuleOps.conv2d(backend, px, pw, pb, *args)
    np.testing.assert_allclose(_np(backend, out), _np(backend, want), rtol=1e-4, atol=1e-4)
    g = _prim(backend, rng.normal(size=backend.shape(out)))
    np.testing.assert_allclose(
        _np(backend, backend.conv2d_input_grad(g, pw, xs, *args)),
        _np(backend, ModuleOps.conv2d_input_grad(backend, g, pw, xs, *args)),
        rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        _np(backend, backend.conv2d_weight_grad(px, g, ws, *args)),
        _np(backend, ModuleOps.conv2d_weight_grad(backend, px, g, ws, *args)),
        rtol=1e-4, atol=1e-3)


def test_autodiff_conv2d_rule_matches_the_composites_gradient(ad_backend) -> None:
    rng = np.random.default_rng(1)
    x, w, b = rng.normal(size=(2, 4, 6, 5)), rng.normal(size=(4, 2, 3, 2)), rng.normal(size=4)
    args = ((2, 1), ((1, 0), (1, 1)), (1, 2), 2)

    def grads(conv):  # type: ignore[no-untyped-def]
        ts = [pyrite.tensor(a.astype(np.float32), device=ad_backend).require_grad()
              for a in (x, w, b)]
        out = ts[0]._new(conv(ad_backend, *(t.into_primitive() for t in ts), *args))
        r = pyrite.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape).astype(np.float32),
                          device=ad_backend)
        gs = (out * r).sum().backward()
        return [t.grad(gs).numpy() for t in ts]

    rule = grads(type(ad_backend).conv2d)
    composite = grads(ModuleOps.conv2d)
    for got, want in zip(rule, composite, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size, out", [((24, 24), (8, 8)), ((7, 5), (3, 2))])
def test_adaptive_avg_pool2d_and_its_gradient_agree_with_the_composites(backend, size,
                                                                        out) -> None:
    rng = np.random.default_rng(2)
    x = _prim(backend, rng.normal(size=(2, 3, *size)))
    np.testing.assert_allclose(_np(backend, backend.adaptive_avg_pool2d(x, out)),
                               _np(backend, ModuleOps.adaptive_avg_pool2d(backend, x, out)),
                               rtol=1e-5, atol=1e-5)
    g = _prim(backend, rng.normal(size=(2, 3, *out)))
    shape = (2, 3, *size)
    np.testing.assert_allclose(_np(backend, backend.adaptive_avg_pool2d_grad(g, shape)),
                               _np(backend, ModuleOps.adaptive_avg_pool2d_grad(backend, g, shape)),
                               rtol=1e-5, atol=1e-5)


def test_autodiff_adaptive_pool_rule_matches_the_composites_gradient(ad_backend) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 2, 6, 5)).astype(np.float32)

    def grad(pool):  # type: ignore[no-untyped-def]
        t = pyrite.tensor(x, device=ad_backend).require_grad()
        out = t._new(pool(ad_backend, t.into_primitive(), (3, 2)))
        r = pyrite.tensor(np.arange(out.numel(), dtype=np.float32).reshape(out.shape),
                          device=ad_backend)
        return t.grad((out * r).sum().backward()).numpy()

    np.testing.assert_allclose(grad(type(ad_backend).adaptive_avg_pool2d),
                               grad(ModuleOps.adaptive_avg_pool2d), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel, stride, pads, dil", [
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((3, 3), (2, 1), ((1, 2), (1, 0)), (1, 2)),
])
def test_window_pools_agree_with_the_composites(backend, kernel, stride, pads, dil) -> None:
    x = _prim(backend, np.random.default_rng(4).normal(size=(2, 3, 7, 8)))
    np.testing.assert_allclose(
        _np(backend, backend.max_pool2d(x, kernel, stride, pads, dil)),
        _np(backend, ModuleOps.max_pool2d(backend, x, kernel, stride, pads, dil)))
    for include in (True, False):
        np.testing.assert_allclose(
            _np(backend, backend.avg_pool2d(x, kernel, stride, pads, include)),
            _np(backend, ModuleOps.avg_pool2d(backend, x, kernel, stride, pads, include)),
            rtol=1e-5, atol=1e-6)


POOL_GRADS = {  # the Autodiff pool rules (inner backend's gradient ops), by finite differences
    "max": lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
    "max_dilated": lambda x: F.max_pool2d(x, 2, stride=1, dilation=2),
    "avg": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
    "avg_exclude_pad": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1,
                                              count_include_pad=False),
    "avg_1d": lambda x: F.avg_pool1d(x.reshape([2, 2, 35]), 4, stride=3),
    "max_1d": lambda x: F.max_pool1d(x.reshape([2, 2, 35]), 3, stride=2),
}


@pytest.mark.parametrize("name", sorted(POOL_GRADS))
def test_pool_gradients(ad_backend, name) -> None:
    # distinct values: no ties inside a max window
    x = np.random.default_rng(5).permutation(70).reshape(2, 1, 5, 7) * 0.1
    check_grad(POOL_GRADS[name], [x.reshape(1, 2, 5, 7).repeat(2, 0)], ad_backend)


def test_conv2d_input_grad_reaches_rows_the_stride_skips(backend) -> None:
    # stride 2 over 9 rows with one row of padding: the last input row feeds no window
    rng = np.random.default_rng(3)
    xs, ws, args = (2, 4, 9, 9), (4, 1, 3, 3), ((2, 3), ((1, 0), (1, 1)), (1, 1), 4)
    pw = _prim(backend, rng.normal(size=ws))
    out = backend.conv2d(_prim(backend, rng.normal(size=xs)), pw, None, *args)
    g = _prim(backend, rng.normal(size=backend.shape(out)))
    got = _np(backend, ModuleOps.conv2d_input_grad(backend, g, pw, xs, *args))
    assert got.shape == xs
    np.testing.assert_allclose(got, _np(backend, backend.conv2d_input_grad(g, pw, xs, *args)),
                               rtol=1e-4, atol=1e-4)
