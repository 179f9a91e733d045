"""Losses against numpy formulas (and PyTorch when it is installed), with gradients."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, KindError, ShapeError
from pyrite.nn import (
    BinaryCrossEntropyLossConfig,
    CrossEntropyLossConfig,
    HuberLossConfig,
    MseLoss,
    MseLossConfig,
)


def log_softmax(x: np.ndarray) -> np.ndarray:
    z = x - x.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def ce_ref(x, t, weights=None, smoothing=0.0, pads=()):  # type: ignore[no-untyped-def]
    """PyTorch's definition: weighted mean over non-ignored samples, smoothing spread by w."""
    n, c = x.shape
    lp = log_softmax(x)
    w = np.ones(c) if weights is None else np.asarray(weights)
    keep = np.array([ti not in pads for ti in t], dtype=float)
    nll = -lp[np.arange(n), t] * w[t]
    spread = -(lp * w).sum(1)
    loss = (1 - smoothing) * nll + smoothing / c * spread
    return (loss * keep).sum() / (w[t] * keep).sum()


@pytest.mark.parametrize("kw", [{}, {"weights": (1.0, 2.0, 0.5, 3.0)}, {"smoothing": 0.1},
                                {"pad_tokens": (0,)},
                                {"weights": (1.0, 2.0, 0.5, 3.0), "smoothing": 0.2,
                                 "pad_tokens": (1, 3)}])
def test_cross_entropy(rng, gradcheck, kw) -> None:
    x = rng.normal(size=(6, 4))
    t = np.array([0, 1, 2, 3, 1, 0])
    loss = CrossEntropyLossConfig(**kw).init()
    got = loss(pyrite.tensor(x), pyrite.tensor(t))
    assert got.shape == (1,)
    want = ce_ref(x, t, kw.get("weights"), kw.get("smoothing", 0.0), kw.get("pad_tokens", ()))
    np.testing.assert_allclose(got.item(), want, rtol=1e-6)
    targets = pyrite.tensor(t, device="autodiff<numpy>")
    gradcheck(lambda logits: loss(logits, targets), x)


def test_cross_entropy_against_torch(rng) -> None:
    torch = pytest.importorskip("torch")
    x = rng.normal(size=(5, 3))
    t = np.array([0, 2, 1, 2, 0])
    w = (0.5, 1.0, 2.0)
    want = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t),
                                             weight=torch.tensor(w, dtype=torch.float64),
                                             label_smoothing=0.1,
                                             ignore_index=1)
    got = CrossEntropyLossConfig(weights=w, smoothing=0.1, pad_tokens=(1,)).init()(
        pyrite.tensor(x), pyrite.tensor(t))
    np.testing.assert_allclose(got.item(), float(want), rtol=1e-6)


def test_cross_entropy_from_probabilities(rng) -> None:
    x = rng.normal(size=(3, 4))
    probs = np.exp(log_softmax(x))
    t = np.array([3, 0, 1])
    got = CrossEntropyLossConfig(logits=False).init()(pyrite.tensor(probs), pyrite.tensor(t))
    np.testing.assert_allclose(got.item(), ce_ref(x, t), rtol=1e-5)


def test_cross_entropy_errors() -> None:
    loss = CrossEntropyLossConfig().init()
    with pytest.raises(KindError, match="targets must be an Int tensor"):
        loss(pyrite.zeros((2, 3)), pyrite.zeros((2,)))
    with pytest.raises(ShapeError, match=r"targets must have shape \(2,\)"):
        loss(pyrite.zeros((2, 3)), pyrite.tensor([[0, 1]]))
    with pytest.raises(pyrite.DimError, match="out of range"):
        loss(pyrite.zeros((2, 3)), pyrite.tensor([0, 3]))
    with pytest.raises(ConfigError, match="smoothing must be in"):
        CrossEntropyLossConfig(smoothing=1.5)


def test_mse_and_huber(rng, gradcheck) -> None:
    p, y = rng.normal(size=(4, 3)) * 2, rng.normal(size=(4, 3))
    mse = MseLossConfig().init()
    np.testing.assert_allclose(mse(pyrite.tensor(p), pyrite.tensor(y)).item(),
                               ((p - y) ** 2).mean(), rtol=1e-7)
    np.testing.assert_allclose(mse(pyrite.tensor(p), pyrite.tensor(y), "sum").item(),
                               ((p - y) ** 2).sum(), rtol=1e-7)
    assert MseLoss()(pyrite.tensor(p), pyrite.tensor(y), reduction="none").shape == (4, 3)
    huber = HuberLossConfig(1.0).init()
    r = np.abs(p - y)
    want = np.where(r <= 1.0, 0.5 * r * r, r - 0.5)
    np.testing.assert_allclose(huber(pyrite.tensor(p), pyrite.tensor(y)).item(), want.mean(),
                               rtol=1e-7)
    yt = pyrite.tensor(y, device="autodiff<numpy>")
    gradcheck(lambda a: huber(a, yt), p)
    gradcheck(lambda a: mse(a, yt), p)
    with pytest.raises(ConfigError, match="reduction must be one of"):
        mse(pyrite.tensor(p), pyrite.tensor(y), "max")
    with pytest.raises(ShapeError, match="MseLoss: predictions"):
        mse(pyrite.zeros((2,)), pyrite.zeros((3,)))


def test_binary_cross_entropy(rng, gradcheck) -> None:
    logits = rng.normal(size=(5, 3))
    y = rng.integers(0, 2, size=(5, 3))
    p = 1 / (1 + np.exp(-logits))
    w = np.array([1.0, 2.0, 0.5])
    ys = y * 0.9 + 0.05
    want = (-(ys * np.log(p) + (1 - ys) * np.log(1 - p)) * w).mean()
    loss = BinaryCrossEntropyLossConfig(logits=True, weights=tuple(w), smoothing=0.1).init()
    np.testing.assert_allclose(loss(pyrite.tensor(logits), pyrite.tensor(y)).item(), want,
                               rtol=1e-6)
    plain = BinaryCrossEntropyLossConfig().init()
    want = (-(y * np.log(p) + (1 - y) * np.log(1 - p))).mean()
    np.testing.assert_allclose(plain(pyrite.tensor(p), pyrite.tensor(y)).item(), want,
                               rtol=1e-6)
    yt = pyrite.tensor(y, device="autodiff<numpy>")
    gradcheck(lambda a: loss(a, yt), logits)
    gradcheck(lambda a: plain(a, yt), p)
