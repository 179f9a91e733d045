"""webgpu's pooling kernels (`webgpu/pool.py`) against the composites of `module_ops` on the
numpy backend, forward and gradients, and through Autodiff against autodiff<numpy>."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.nn import functional as F

WINDOWS = [  # kernel, stride, padding pairs, dilation
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((3, 3), (1, 2), ((1, 1), (1, 0)), (1, 1)),
    ((3, 2), (2, 1), ((1, 0), (0, 1)), (2, 2)),
]


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a)))


def _tied(shape: tuple[int, ...]) -> np.ndarray:
    """Small integers: many ties, so the first-max rule is exercised."""
    return np.random.default_rng(0).integers(-3, 4, shape).astype(np.float32)


def _composite_grad(op, x: np.ndarray, g: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """d sum(op(x) * g) / dx, the composite differentiated by autodiff<numpy>."""
    ad = pyrite.device("autodiff<numpy>")
    t = pyrite.tensor(x, device=ad).require_grad()
    out = t._new(op(ad, t.into_primitive()))
    return t.grad((out * pyrite.tensor(g, device=ad)).sum().backward()).numpy()


@pytest.mark.parametrize("kernel, stride, pads, dil", WINDOWS)
def test_max_pool_and_its_gradient_agree_with_the_composite(gpu, ref, down, kernel, stride,
                                                            pads, dil) -> None:
    x = _tied((2, 3, 7, 6))
    args = (kernel, stride, pads, dil)
    out, index = ModuleOps.max_pool2d_with_indices(ref, x, *args)
    got_out, got_index = gpu.max_pool2d_with_indices(_up(gpu, x), *args)
    np.testing.assert_array_equal(down(got_out), out)
    np.testing.assert_array_equal(down(got_index), index)
    np.testing.assert_array_equal(down(gpu.max_pool2d(_up(gpu, x), *args)), out)
    g = np.random.default_rng(1).normal(size=out.shape).astype(np.float32)
    got = gpu.max_pool2d_with_indices_grad(_up(gpu, g), got_index, x.shape, *args)
    want = _composite_grad(lambda b, p: b.max_pool2d(p, *args), x, g)
    np.testing.assert_allclose(down(got), want, rtol=1e-5, atol=1e-6)


def test_max_pool_takes_nan_as_the_max(gpu, down) -> None:
    x = np.array([[[[1.0, np.nan], [5.0, 2.0]]]], dtype=np.float32)
    out, index = gpu.max_pool2d_with_indices(_up(gpu, x), (2, 2), (2, 2), ((0, 0), (0, 0)),
                                             (1, 1))
    assert np.isnan(down(out)).all() and down(index).tolist() == [[[[1]]]]


@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("kernel, stride, pads, _", WINDOWS)
def test_avg_pool_and_its_gradient_agree_with_the_composite(gpu, ref, down, kernel, stride,
                                                            pads, _, include_pad) -> None:
    x = np.random.default_rng(2).normal(size=(2, 3, 7, 6)).astype(np.float32)
    args = (kernel, stride, pads, include_pad)
    want = ModuleOps.avg_pool2d(ref, x, *args)
    np.testing.assert_allclose(down(gpu.avg_pool2d(_up(gpu, x), *args)), want, rtol=1e-5,
                               atol=1e-6)
    g = np.random.default_rng(3).normal(size=want.shape).astype(np.float32)
    got = gpu.avg_pool2d_grad(_up(gpu, g), x.shape, *args)
    np.testing.assert_allclose(down(got), _composite_grad(lambda b, p: b.avg_pool2d(p, *args),
                                                          x, g), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size, out", [((24, 24), (8, 8)), ((7, 5), (3, 2)), ((3, 4), (5, 6))])
def test_adaptive_avg_pool_and_its_gradient_agree_with_the_composite(gpu, ref, down, size,
                                                                     out) -> None:
    x = np.random.default_rng(4).normal(size=(2, 3, *size)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.adaptive_avg_pool2d(_up(gpu, x), out)),
                               ModuleOps.adaptive_avg_pool2d(ref, x, out), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(5).normal(size=(2, 3, *out)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.adaptive_avg_pool2d_grad(_up(gpu, g), x.shape)),
                               ModuleOps.adaptive_avg_pool2d_grad(ref, g, x.shape),
                               rtol=1e-5, atol=1e-6)


def test_pooling_gradients_through_autodiff_match_autodiff_numpy(gpu) -> None:
    x = _tied((2, 2, 8, 7))
    found = []
    for device in (Autodiff(gpu), pyrite.device("autodiff<numpy>")):
        t = pyrite.tensor(x, device=device).require_grad()
        a = F.max_pool2d(t, 3, stride=2, padding=1)
        b = F.avg_pool2d(t, 2, stride=(1, 2), padding=(1, 0), count_include_pad=False)
        c = F.adaptive_avg_pool2d(t, (3, 5))
        loss = (a * 1.5).sum() + (b * b).sum() + (c * 0.25).sum()
        found.append([a.numpy(), b.numpy(), c.numpy(), t.grad(loss.backward()).numpy()])
    for got, want in zip(*found, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_every_pooling_kernel_reads_a_view_from_where_it_starts(gpu, ref, down) -> None:
    # x[1:] is a contiguous view partway into its buffer: each kernel must read it from its
    # offset (before session 5 they read the buffer's start, so max_pool2d(x[1:]) pooled x[0])
    x = np.random.default_rng(6).normal(size=(3, 2, 6, 5)).astype(np.float32)

    def tail(a: np.ndarray):  # type: ignore[no-untyped-def]
        return gpu.slice(_up(gpu, a), [(1, a.shape[0], 1)] + [(0, n, 1) for n in a.shape[1:]])

    xs = x[1:]
    window = ((3, 3), (2, 2), ((1, 1), (1, 0)), (1, 1))
    out, index = ModuleOps.max_pool2d_with_indices(ref, xs, *window)
    got_out, got_index = gpu.max_pool2d_with_indices(tail(x), *window)
    np.testing.assert_array_equal(down(got_out), out)
    np.testing.assert_array_equal(down(got_index), index)
    g = np.random.default_rng(7).normal(size=(3, *out.shape[1:])).astype(np.float32)
    i = np.concatenate([index[:1], index]).astype(np.int32)
    np.testing.assert_allclose(
        down(gpu.max_pool2d_with_indices_grad(tail(g), tail(i), xs.shape, *window)),
        ModuleOps.max_pool2d_with_indices_grad(ref, g[1:], index, xs.shape, *window),
        rtol=1e-5, atol=1e-6)
    avg = ((2, 2), (1, 2), ((1, 0), (0, 1)), True)
    want = ModuleOps.avg_pool2d(ref, xs, *avg)
    np.testing.assert_allclose(down(gpu.avg_pool2d(tail(x), *avg)), want, rtol=1e-5, atol=1e-6)
    ga = np.random.default_rng(8).normal(size=(3, *want.shape[1:])).astype(np.float32)
    np.testing.assert_allclose(down(gpu.avg_pool2d_grad(tail(ga), xs.shape, *avg)),
                               ModuleOps.avg_pool2d_grad(ref, ga[1:], xs.shape, *avg),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(down(gpu.adaptive_avg_pool2d(tail(x), (2, 3))),
                               ModuleOps.adaptive_avg_pool2d(ref, xs, (2, 3)), rtol=1e-5,
                               atol=1e-6)
    gd = np.random.default_rng(9).normal(size=(3, 2, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.adaptive_avg_pool2d_grad(tail(gd), xs.shape)),
                               ModuleOps.adaptive_avg_pool2d_grad(ref, gd[1:], xs.shape),
                               rtol=1e-5, atol=1e-6)
