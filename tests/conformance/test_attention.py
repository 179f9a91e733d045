"""The attention module op (softmax(q k^T * scale + mask) v, a composite by default, flash
attention's kernels on webgpu) on every backend: values against numpy, gradients by finite
differences (against autodiff<numpy> on the other backends), with and without an additive mask
(padding, causal, a bias), softmax and quiet softmax, and the causal flag (no mask tensor).
The larger cases cross the kernels' tiles (the row kernels: 128 queries or keys a workgroup by
default, up to 32 a staged tile; the register-blocked kernels that heads wider than 64 take:
64 or 128 rows a workgroup, 16 or 32 columns a tile) with ragged lengths and head dims that are
not multiples of 4."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.nn import functional as F

from .gradcheck import autodiff_grads, check_grad


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
    ((2, 3, 70, 33), 37, 5, None, None, False),  # ragged tiles and head dims
    ((1, 2, 67, 6), 67, 9, "causal", None, False),
    ((3, 2, 9, 16), 100, 16, "padding", 0.3, False),
    ((2, 2, 65, 3), 40, 7, (2, 2, 65, 40), None, True),  # a full bias
    ((1, 1, 5, 70), 129, 66, (1, 1, 1, 129), None, False),  # wide heads: smaller tiles
]


def _causal(sq: int, sk: int) -> np.ndarray:
    """-1e4 above the diagonal (queries aligned with the last keys), broadcast over batch and
    heads."""
    i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
    return np.where(j > i + (sk - sq), -1e4, 0.0).reshape(1, 1, sq, sk)


def _padding(b: int, sk: int, rng: np.random.Generator) -> np.ndarray:
    """-inf past each batch's length (at least one key kept), broadcast over heads and queries."""
    lengths = rng.integers(1, sk + 1, size=b)
    return np.where(np.arange(sk)[None, :] < lengths[:, None], 0.0, -np.inf).reshape(b, 1, 1, sk)


def _mask(shape: tuple[int, ...] | str | None, rng: np.random.Generator,
          full: tuple[int, int, int, int] = (1, 1, 1, 1)) -> np.ndarray | None:
    """A mask of `shape`, or the causal or padding mask of the scores' shape `full`."""
    if shape is None:
        return None
    if shape == "causal":
        return _causal(full[2], full[3])
    if shape == "padding":
        return _padding(full[0], full[3], rng)
    assert not isinstance(shape, str)
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
    mask = _mask(ms, rng, (b, h, qs[2], seq_k))
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


CAUSAL_CASES = [  # q shape, seq_k, d_v, extra mask ("padding" or None), quiet
    ((2, 3, 70, 33), 70, 5, None, False),  # self-attention, ragged tiles and head dims
    ((1, 2, 67, 8), 130, 9, None, False),  # new positions after cached ones
    ((2, 1, 1, 16), 129, 16, "padding", True),  # one new position: every key, padding too
    ((3, 2, 40, 6), 40, 4, "padding", False),
    ((1, 1, 150, 4), 150, 3, None, False),  # queries and keys across workgroups of 128
    ((1, 2, 70, 100), 70, 104, None, False),  # wide heads: the register-blocked kernels
]


def _check_grads_across_tiles(ad_backend, qs, seq_k, d_v, ms, quiet, *, seed: int,
                              causal: bool) -> None:
    """Gradients of q, k and v against autodiff<numpy>'s of the composite (itself checked by
    finite differences), on inputs larger than one tile of the fused kernels."""
    rng = np.random.default_rng(seed)
    b, h, sq, d = qs
    mask = _mask(ms, rng, (b, h, sq, seq_k))
    arrays = [rng.normal(size=qs), rng.normal(size=(b, h, seq_k, d)),
              rng.normal(size=(b, h, seq_k, d_v))]

    def fn(q: pyrite.Tensor, k: pyrite.Tensor, v: pyrite.Tensor) -> pyrite.Tensor:
        m = None if mask is None else pyrite.tensor(mask, device=q.device, dtype=q.dtype)
        return F.attention(q, k, v, m, quiet=quiet, causal=causal)

    got = autodiff_grads(fn, arrays, ad_backend, dtype=ad_backend.float_dtype.short)
    want = autodiff_grads(fn, arrays, pyrite.device("autodiff<numpy>"))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g is not None and w is not None
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=f"input {i}")


@pytest.mark.parametrize("qs, seq_k, d_v, ms, quiet", CAUSAL_CASES)
def test_causal_flag_gradients_across_tiles(ad_backend, qs, seq_k, d_v, ms, quiet) -> None:
    """With the causal flag (the kernels skip the tiles past the frontier)."""
    _check_grads_across_tiles(ad_backend, qs, seq_k, d_v, ms, quiet, seed=9, causal=True)


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


GRAD_CASES = [  # q shape, seq_k, d_v, mask, quiet: tiles crossed, ragged, each kind of mask
    ((2, 2, 70, 5), 37, 3, None, False),
    ((1, 2, 66, 4), 66, 6, "causal", False),
    ((2, 1, 9, 8), 75, 8, "padding", True),
    ((1, 2, 33, 3), 20, 2, (1, 2, 33, 20), False),
    ((2, 1, 67, 80), 45, 76, "padding", False),  # wide heads: tiled dk, dv; row forward, dq
    ((1, 1, 20, 100), 70, 100, (1, 1, 20, 70), True),
]


@pytest.mark.parametrize("qs, seq_k, d_v, ms, quiet", GRAD_CASES)
def test_attention_gradients_across_tiles(ad_backend, qs, seq_k, d_v, ms, quiet) -> None:
    _check_grads_across_tiles(ad_backend, qs, seq_k, d_v, ms, quiet, seed=3, causal=False)


def test_attention_gradient_of_some_inputs(ad_backend) -> None:
    """Only the inputs that need a gradient get one (a frozen key and value)."""
    rng = np.random.default_rng(4)
    arrays = [rng.normal(size=(1, 2, 7, 4)), rng.normal(size=(1, 2, 9, 4)),
              rng.normal(size=(1, 2, 9, 4))]
    got = autodiff_grads(lambda q, k, v: F.attention(q, k, v), arrays, ad_backend,
                         dtype=ad_backend.float_dtype.short, track=[True, False, False])
    want = autodiff_grads(lambda q, k, v: F.attention(q, k, v), arrays,
                          pyrite.device("autodiff<numpy>"), track=[True, False, False])
    assert got[1] is None and got[2] is None
    np.testing.assert_allclose(got[0], want[0], rtol=1e-3, atol=1e-4)


def test_webgpu_runs_the_fused_kernels(backend) -> None:
    """webgpu (fused or not, natively or in the page) answers `attention_saving` with its
    kernels' output and log-sum-exp; a backend without them answers None (the composite)."""
    rng = np.random.default_rng(5)
    q, k, v = (_t(rng.normal(size=(1, 2, 5, 4)), backend).into_primitive() for _ in range(3))
    found = backend.attention_saving(q, k, v, None, 0.5, False, False)
    if "webgpu" not in backend.name:
        assert found is None
        return
    assert found is not None
    out, lse = found
    assert backend.shape(out) == (1, 2, 5, 4) and backend.shape(lse) == (1, 2, 5)
