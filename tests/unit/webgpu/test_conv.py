"""webgpu's conv2d kernels (`webgpu/conv.py`) against the numpy backend, forward and both
gradients, and through Autodiff against autodiff<numpy>. The reference is the composite of
`module_ops` run on numpy, except for the input gradient, where it is numpy's override: the
composite crops its result short when the stride leaves the input's last rows or columns
unreached (case 5)."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.nn import functional as F

CASES = [  # x shape, w shape, stride, padding pairs, dilation, groups
    ((2, 3, 7, 6), (5, 3, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # 5 = a 4-block + 1
    ((2, 4, 7, 6), (6, 2, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),
    ((1, 4, 8, 8), (8, 4, 3, 3), (1, 1), ((1, 1), (2, 0)), (2, 1), 1),  # stride 1, padded
    ((1, 3, 5, 5), (4, 3, 1, 1), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # padding past reach
    ((2, 4, 9, 9), (4, 1, 3, 3), (2, 3), ((1, 0), (1, 1)), (1, 1), 4),  # depthwise
    ((1, 2, 6, 7), (3, 2, 2, 3), (3, 2), ((0, 0), (0, 0)), (2, 1), 1),
]


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_conv2d_kernels_agree_with_the_composites(gpu, ref, down, xs, ws, stride, pads, dil,
                                                  groups) -> None:
    rng = np.random.default_rng(0)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    args = (stride, pads, dil, groups)
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    got = down(gpu.conv2d(_up(gpu, x), _up(gpu, w), _up(gpu, b), *args))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    g = rng.normal(size=want.shape).astype(np.float32)
    np.testing.assert_allclose(
        down(gpu.conv2d_input_grad(_up(gpu, g), _up(gpu, w), xs, *args)),
        ref.conv2d_input_grad(g, w, xs, *args), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        down(gpu.conv2d_weight_grad(_up(gpu, x), _up(gpu, g), ws, *args)),
        ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args), rtol=1e-4, atol=1e-4)


def test_conv2d_reads_views_and_goes_without_bias(gpu, ref, down) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 6, 5, 3)).astype(np.float32)  # N, W, H, C: permuted to NCHW
    w = rng.normal(size=(4, 3, 2, 2)).astype(np.float32)
    args = ((1, 1), ((1, 0), (0, 1)), (1, 1), 1)
    view = gpu.permute(_up(gpu, x), (0, 3, 2, 1))
    want = ModuleOps.conv2d(ref, x.transpose(0, 3, 2, 1), w, None, *args)
    np.testing.assert_allclose(down(gpu.conv2d(view, _up(gpu, w), None, *args)), want,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ws, stride", [((4, 2, 3, 3), (1, 1)), ((4, 2, 3, 3), (2, 2)),
                                        ((40, 2, 1, 1), (1, 1))])
def test_every_operand_may_start_past_its_buffers_start(gpu, ref, down, ws, stride) -> None:
    # batch (and channel) slices are contiguous views at an offset: each op, on the direct
    # kernels and the GEMM alike, reads them from there (a bug fixed in session 5: x's offset
    # was dropped, so a conv of x[1:] read x[0])
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 2, 6, 6)).astype(np.float32)
    w = rng.normal(size=(2 * ws[0], *ws[1:])).astype(np.float32)
    b = rng.normal(size=(2 * ws[0],)).astype(np.float32)
    args = (stride, ((1, 1), (1, 1)), (1, 1), 1)

    def tail(a: np.ndarray, start: int):  # type: ignore[no-untyped-def]
        """a[start:] as a webgpu view at an offset into a's buffer."""
        return gpu.slice(_up(gpu, a), [(start, a.shape[0], 1)] + [(0, n, 1) for n in a.shape[1:]])

    gx, gw, gb = tail(x, 1), tail(w, ws[0]), tail(b, ws[0])
    xs, wv, bv = x[1:], w[ws[0]:], b[ws[0]:]
    want = ModuleOps.conv2d(ref, xs, wv, bv, *args)
    for _ in range(3):  # the ordinary path, the recording one, a replayed plan
        np.testing.assert_allclose(down(gpu.conv2d(gx, gw, gb, *args)), want, rtol=1e-4,
                                   atol=1e-4)
    g = rng.normal(size=(3, *want.shape[1:])).astype(np.float32)
    gg = tail(g, 1)
    np.testing.assert_allclose(down(gpu.conv2d_input_grad(gg, gw, xs.shape, *args)),
                               ref.conv2d_input_grad(g[1:], wv, xs.shape, *args), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(down(gpu.conv2d_weight_grad(gx, gg, wv.shape, *args)),
                               ModuleOps.conv2d_weight_grad(ref, xs, g[1:], wv.shape, *args),
                               rtol=1e-4, atol=1e-3)


def test_gradients_through_autodiff_match_autodiff_numpy(gpu) -> None:
    rng = np.random.default_rng(2)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in ((2, 4, 7, 7), (6, 2, 3, 3), (6,)))
    r = rng.normal(size=(2, 6, 3, 2)).astype(np.float32)
    found = []
    for device in (Autodiff(gpu), pyrite.device("autodiff<numpy>")):
        ts = [pyrite.tensor(a, device=device).require_grad() for a in (x, w, b)]
        out = F.conv2d(*ts, stride=(2, 2), padding=((1, 0), (0, 1)), dilation=(1, 2), groups=2)
        grads = (out * pyrite.tensor(r, device=device)).sum().backward()
        found.append([out.numpy()] + [t.grad(grads).numpy() for t in ts])
    for got, want in zip(*found, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
