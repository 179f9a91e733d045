"""conv3d and conv_transpose3d (composites over conv2d) on every backend: values against the
direct definitions in numpy, gradients by finite differences (against autodiff<numpy> on
the other backends)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pyrite
from pyrite.nn import functional as F

from .gradcheck import check_grad


def conv3d_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: tuple[int, ...],
               pads: tuple[tuple[int, int], ...], dil: tuple[int, ...],
               groups: int) -> np.ndarray:
    """out[n, o, d, h, w] = sum over the group's channels and the taps, one output at a time."""
    x = np.pad(x, ((0, 0), (0, 0), *pads))
    co, cg, *kernel = w.shape
    og = co // groups
    size = [(s - d * (k - 1) - 1) // st + 1
            for s, k, st, d in zip(x.shape[2:], kernel, stride, dil, strict=True)]
    out = np.zeros((x.shape[0], co, *size))
    for o, pos in itertools.product(range(co), itertools.product(*map(range, size))):
        g = o // og
        for tap in itertools.product(*map(range, kernel)):
            i, j, k = (p * st + t * d for p, st, t, d in zip(pos, stride, tap, dil, strict=True))
            out[(slice(None), o, *pos)] += x[:, g * cg:(g + 1) * cg, i, j, k] @ w[(o, slice(None),
                                                                                  *tap)]
    return out if b is None else out + b[None, :, None, None, None]


def conv_transpose3d_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                         stride: tuple[int, ...], pad: tuple[int, ...], out_pad: tuple[int, ...],
                         dil: tuple[int, ...], groups: int) -> np.ndarray:
    """Scatter definition: each input voxel adds value * weight at its strided position."""
    n, ci, *size = x.shape
    _, cog, *kernel = w.shape
    cig = ci // groups
    full = np.zeros((n, cog * groups, *((s - 1) * st + d * (k - 1) + 1 + op for s, st, d, k, op
                                        in zip(size, stride, dil, kernel, out_pad, strict=True))))
    for c, pos, tap in itertools.product(range(ci), itertools.product(*map(range, size)),
                                         itertools.product(*map(range, kernel))):
        g = c // cig
        at = tuple(p * st + t * d for p, st, t, d in zip(pos, stride, tap, dil, strict=True))
        full[(slice(None), slice(g * cog, (g + 1) * cog), *at)] += (
            x[(slice(None), c, *pos)][:, None] * w[(c, slice(None), *tap)][None])
    out = full[(slice(None), slice(None), *(slice(p, f - p) for p, f in
                                           zip(pad, full.shape[2:], strict=True)))]
    return out if b is None else out + b[None, :, None, None, None]


CONV3D = [  # x, w, stride, padding pairs, dilation, groups
    ((2, 3, 4, 5, 4), (2, 3, 2, 3, 2), (1, 1, 1), ((0, 0),) * 3, (1, 1, 1), 1),
    ((1, 4, 5, 6, 5), (6, 2, 2, 3, 2), (2, 1, 3), ((1, 0), (0, 1), (1, 1)), (1, 2, 1), 2),
    ((2, 3, 6, 5, 5), (3, 1, 3, 2, 2), (2, 2, 1), ((1, 1), (2, 0), (0, 0)), (2, 1, 2), 3),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), (1, 1, 1), ((0, 0),) * 3, (1, 1, 1), 1),
]


def _t(a: np.ndarray, backend: pyrite.Backend) -> pyrite.Tensor:
    return pyrite.tensor(a.astype(np.float32), device=backend)


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CONV3D)
def test_conv3d_matches_the_definition(backend, xs, ws, stride, pads, dil, groups) -> None:
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=xs), rng.normal(size=ws), rng.normal(size=ws[0])
    out = F.conv3d(_t(x, backend), _t(w, backend), _t(b, backend), stride=stride,
                   padding=pads, dilation=dil, groups=groups)
    want = conv3d_ref(x, w, b, stride, pads, dil, groups)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


TRANSPOSE3D = [  # x, w, stride, padding, output padding, dilation, groups
    ((2, 3, 3, 2, 3), (3, 2, 2, 3, 2), (1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1), 1),
    ((1, 4, 2, 3, 2), (4, 3, 3, 2, 2), (2, 1, 3), (1, 0, 2), (1, 0, 2), (1, 2, 1), 2),
    ((1, 2, 3, 2, 2), (2, 2, 2, 2, 1), (2, 2, 2), (0, 1, 1), (0, 1, 1), (2, 1, 1), 1),
]


@pytest.mark.parametrize("xs, ws, stride, pad, opad, dil, groups", TRANSPOSE3D)
def test_conv_transpose3d_matches_the_definition(backend, xs, ws, stride, pad, opad, dil,
                                                 groups) -> None:
    rng = np.random.default_rng(1)
    x, w, b = rng.normal(size=xs), rng.normal(size=ws), rng.normal(size=ws[1] * groups)
    out = F.conv_transpose3d(_t(x, backend), _t(w, backend), _t(b, backend), stride=stride,
                             padding=pad, output_padding=opad, dilation=dil, groups=groups)
    want = conv_transpose3d_ref(x, w, b, stride, pad, opad, dil, groups)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


def test_conv3d_gradients(ad_backend) -> None:
    rng = np.random.default_rng(2)
    check_grad(lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=((1, 0), (0, 1),
                                                                            (1, 1)),
                                        dilation=(1, 1, 2), groups=2),
               [rng.normal(size=(1, 4, 3, 3, 4)), rng.normal(size=(2, 2, 2, 2, 2)),
                rng.normal(size=2)], ad_backend)


def test_conv_transpose3d_gradients(ad_backend) -> None:
    rng = np.random.default_rng(3)
    check_grad(lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 2), padding=(1, 0, 0),
                                                  output_padding=(1, 0, 1), groups=2),
               [rng.normal(size=(1, 2, 2, 2, 2)), rng.normal(size=(2, 1, 3, 2, 2)),
                rng.normal(size=2)], ad_backend)
