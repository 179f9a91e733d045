"""deform_conv2d (a composite of primitives: bilinear sampling by `select`, then one matmul)
on every backend: values against the direct definition in numpy, gradients of the input,
offset, mask, weight and bias by finite differences (against autodiff<numpy> on the other
backends)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite.nn import functional as F

from .gradcheck import check_grad


def deform_conv2d_ref(x: np.ndarray, offset: np.ndarray, w: np.ndarray, b: np.ndarray,
                      mask: np.ndarray | None, stride: tuple[int, int],
                      pads: tuple[tuple[int, int], ...], dil: tuple[int, int], wg: int,
                      og: int) -> np.ndarray:
    """One output sample at a time: each tap reads x bilinearly at its grid point moved by the
    tap's (dy, dx); neighbours outside the input read zero (torchvision's rule)."""
    n, c_in, h, wd = x.shape
    c_out, cwg, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    cg, og_out = c_in // og, c_out // wg
    out = np.zeros((n, c_out, oh, ow))
    for b_, c, i, j, oy, ox in np.ndindex(n, c_in, kh, kw, oh, ow):
        tap = (c // cg) * kh * kw + i * kw + j
        y = oy * stride[0] - pads[0][0] + i * dil[0] + offset[b_, 2 * tap, oy, ox]
        xx = ox * stride[1] - pads[1][0] + j * dil[1] + offset[b_, 2 * tap + 1, oy, ox]
        y0, x0 = math.floor(y), math.floor(xx)
        v = 0.0
        for r, wr in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
            for q, wq in ((x0, 1 - (xx - x0)), (x0 + 1, xx - x0)):
                if 0 <= r < h and 0 <= q < wd:
                    v += wr * wq * x[b_, c, r, q]
        v *= 1.0 if mask is None else mask[b_, tap, oy, ox]
        group = c // cwg
        for o in range(group * og_out, (group + 1) * og_out):
            out[b_, o, oy, ox] += w[o, c - group * cwg, i, j] * v
    return out + b[None, :, None, None]


CASES = [  # x, w, stride, padding pairs, dilation, weight groups, offset groups, masked
    ((1, 2, 4, 5), (3, 2, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, 1, False),
    ((2, 4, 5, 4), (4, 2, 2, 2), (2, 1), ((1, 0), (0, 1)), (1, 2), 2, 2, True),
    ((1, 3, 3, 3), (2, 3, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, 3, True),
]


def _inputs(seed: int, xs: tuple[int, ...], ws: tuple[int, ...], stride: tuple[int, int],
            pads: tuple[tuple[int, int], ...], dil: tuple[int, int],
            og: int) -> list[np.ndarray]:
    """x, offset, weight, bias, mask; offsets within +-2.5 pixels, off integer positions (the
    bilinear weights have kinks there, which finite differences would straddle)."""
    rng = np.random.default_rng(seed)
    size = [(s + lo + hi - d * (k - 1) - 1) // st + 1 for s, (lo, hi), k, st, d in
            zip(xs[2:], pads, ws[2:], stride, dil, strict=True)]
    taps = og * ws[2] * ws[3]
    offset = rng.integers(-3, 3, size=(xs[0], 2 * taps, *size)) + rng.uniform(
        0.2, 0.8, size=(xs[0], 2 * taps, *size))
    return [rng.normal(size=xs), offset, rng.normal(size=ws), rng.normal(size=ws[0]),
            rng.uniform(0.5, 1.5, size=(xs[0], taps, *size))]


def _t(a: np.ndarray, backend: pyrite.Backend) -> pyrite.Tensor:
    return pyrite.tensor(a.astype(np.float32), device=backend)


@pytest.mark.parametrize("xs, ws, stride, pads, dil, wg, og, masked", CASES)
def test_deform_conv2d_matches_the_definition(backend, xs, ws, stride, pads, dil, wg, og,
                                              masked) -> None:
    x, offset, w, b, mask = _inputs(0, xs, ws, stride, pads, dil, og)
    out = F.deform_conv2d(_t(x, backend), _t(offset, backend), _t(w, backend), _t(b, backend),
                          mask=_t(mask, backend) if masked else None, stride=stride,
                          padding=pads, dilation=dil, weight_groups=wg, offset_groups=og)
    want = deform_conv2d_ref(x, offset, w, b, mask if masked else None, stride, pads, dil, wg,
                             og)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


def test_deform_conv2d_with_zero_offsets_is_conv2d(backend) -> None:
    x, _, w, b, _ = _inputs(1, (1, 4, 5, 5), (2, 2, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2)
    zeros = np.zeros((1, 2 * 2 * 9, 5, 5))
    got = F.deform_conv2d(_t(x, backend), _t(zeros, backend), _t(w, backend), _t(b, backend),
                          padding=1, weight_groups=2, offset_groups=2)
    want = F.conv2d(_t(x, backend), _t(w, backend), _t(b, backend), padding=1, groups=2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", [0, 1], ids=["plain", "groups-mask-stride"])
def test_deform_conv2d_gradients(ad_backend, case) -> None:
    xs, ws, stride, pads, dil, wg, og, masked = CASES[case]
    arrays = _inputs(2, xs, ws, stride, pads, dil, og)
    if not masked:
        arrays = arrays[:4]

    def fn(x: pyrite.Tensor, offset: pyrite.Tensor, w: pyrite.Tensor, b: pyrite.Tensor,
           mask: pyrite.Tensor | None = None) -> pyrite.Tensor:
        return F.deform_conv2d(x, offset, w, b, mask=mask, stride=stride, padding=pads,
                               dilation=dil, weight_groups=wg, offset_groups=og)

    check_grad(fn, arrays, ad_backend)
