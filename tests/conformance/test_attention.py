"""The attention module op (softmax(q k^T * scale + mask) v, a composite by default) on every
backend: values against numpy, gradients by finite differences (against autodiff<numpy> on the
other backends), with and without an additive mask, softmax and quiet softmax."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.nn import functional as F

from .gradcheck import check_grad


def attention_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None,
                  scale: float, quiet: bool) -> np.ndarray:
    s = q @ k.swapaxes(-1, -2) * scale
    if mask is not None:
        s = s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    if quiet:  # exp(s) / (1 + sum exp(s)), shifted by the row max
        denom = np.exp(-s.max(-1, keepdims=True)) + e.sum(-1, keepdims=True)
    else:
        denom = e.sum(-1, keepdims=True)
    return (e / denom) @ v


CASES = [  # q shape, seq_k, d_v, mask shape (None: no mask), scale (None: 1/sqrt(d_k)), quiet
    ((2, 3, 4, 8), 5, 8, None, None, False),
    ((1, 2, 3, 4), 6, 2, (1, 1, 3, 6), 0.7, False),
    ((2, 1, 5, 4), 5, 3, (2, 1, 1, 5), None, True),
    ((1, 2, 1, 8), 7, 8, (1, 2, 1, 7), None, True),
]


def _mask(shape: tuple[int, ...] | None, rng: np.random.Generator) -> np.ndarray | None:
    if shape is None:
        return None
    hide = rng.random(shape) < 0.3
    hide[..., 0] = False  # every query keeps a key
    return np.where(hide, -1e4, rng.normal(scale=0.5, size=shape))  # masks and biases


def _t(a: np.ndarray, backend: pyrite.Backend) -> pyrite.Tensor:
    return pyrite.tensor(a.astype(np.float32), device=backend)


@pytest.mark.parametrize("qs, seq_k, d_v, ms, scale, quiet", CASES)
def test_attention_matches_numpy(backend, qs, seq_k, d_v, ms, scale, quiet) -> None:
    rng = np.random.default_rng(0)
    b, h, _, d = qs
    q, k, v = rng.normal(size=qs), rng.normal(size=(b, h, seq_k, d)), rng.normal(
        size=(b, h, seq_k, d_v))
    mask = _mask(ms, rng)
    s = 1 / np.sqrt(d) if scale is None else scale
    out = F.attention(_t(q, backend), _t(k, backend), _t(v, backend),
                      None if mask is None else _t(mask, backend), scale=scale, quiet=quiet)
    assert out.shape == (b, h, qs[2], d_v)
    np.testing.assert_allclose(out.numpy(), attention_ref(q, k, v, mask, s, quiet), rtol=1e-4,
                               atol=1e-5)
    w = F.attention_weights(_t(q, backend), _t(k, backend),
                            None if mask is None else _t(mask, backend), scale=scale, quiet=quiet)
    np.testing.assert_allclose(w.numpy() @ v, attention_ref(q, k, v, mask, s, quiet),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("quiet", [False, True])
def test_attention_gradients(ad_backend, quiet) -> None:
    rng = np.random.default_rng(1)
    mask = _mask((1, 1, 3, 4), rng)
    assert mask is not None
    check_grad(lambda q, k, v: F.attention(q, k, v, pyrite.tensor(mask, device=q.device,
                                                                  dtype=q.dtype), quiet=quiet),
               [rng.normal(size=(1, 2, 3, 4)), rng.normal(size=(1, 2, 4, 4)),
                rng.normal(size=(1, 2, 4, 3))], ad_backend)


def test_attention_gradient_through_the_mask(ad_backend) -> None:
    """An additive bias is an input like any other (ALiBi, relative positions)."""
    rng = np.random.default_rng(2)
    check_grad(lambda q, k, v, m: F.attention(q, k, v, m, scale=0.5),
               [rng.normal(size=(1, 1, 2, 3)), rng.normal(size=(1, 1, 3, 3)),
                rng.normal(size=(1, 1, 3, 2)), rng.normal(size=(1, 1, 2, 3))], ad_backend)
