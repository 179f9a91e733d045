"""Interpolation (nearest, linear/bilinear) and embedding lookups."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, ShapeError
from pyrite.nn import EmbeddingConfig, Interpolate1dConfig, Interpolate2dConfig
from pyrite.nn import functional as F


def t(a: object) -> pyrite.Tensor:
    return pyrite.tensor(np.asarray(a, dtype=np.float64))


@pytest.mark.parametrize("mode, align", [("nearest", True), ("bilinear", True),
                                         ("bilinear", False)])
@pytest.mark.parametrize("out", [(7, 3), (2, 5), (1, 1)])
def test_interpolate2d(ref, rng, mode, align, out) -> None:
    x = rng.normal(size=(2, 3, 4, 5))
    got = F.interpolate2d(t(x), out, mode=mode, align_corners=align)
    short = "nearest" if mode == "nearest" else "linear"
    want = ref.interp_axis(ref.interp_axis(x, out[0], 2, short, align), out[1], 3, short, align)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_interpolate1d_and_scale_factor(ref, rng) -> None:
    x = rng.normal(size=(1, 2, 5))
    got = F.interpolate1d(t(x), scale_factor=2.0, mode="linear")
    np.testing.assert_allclose(got.numpy(), ref.interp_axis(x, 10, 2, "linear", True),
                               atol=1e-12)
    assert F.interpolate2d(t(rng.normal(size=(1, 1, 4, 6))), scale_factor=(0.5, 1.5)).shape == \
        (1, 1, 2, 9)


def test_interpolate_gradients(gradcheck, rng) -> None:
    x = rng.normal(size=(1, 2, 3, 4))
    gradcheck(lambda x: F.interpolate2d(x, (5, 3), mode="bilinear"), x)
    gradcheck(lambda x: F.interpolate2d(x, (6, 7), mode="nearest"), x)
    gradcheck(lambda x: F.interpolate1d(x, 7, mode="linear", align_corners=False),
              rng.normal(size=(1, 2, 4)))


def test_interpolate_layers_and_errors() -> None:
    layer = Interpolate2dConfig(output_size=(4, 4), mode="linear").init()
    assert layer.mode == "bilinear" and layer(pyrite.zeros((1, 1, 2, 2))).shape == (1, 1, 4, 4)
    assert Interpolate1dConfig(scale_factor=3.0).init()(pyrite.zeros((1, 1, 2))).shape == \
        (1, 1, 6)
    with pytest.raises(ConfigError, match="exactly one of output_size and scale_factor"):
        Interpolate2dConfig()
    with pytest.raises(ConfigError, match="mode must be one of"):
        Interpolate1dConfig(output_size=3, mode="cubic")
    with pytest.raises(ShapeError, match="interpolate2d: mode must be"):
        F.interpolate2d(pyrite.zeros((1, 1, 2, 2)), 3, mode="linear")


def test_embedding_forward_backward(rng) -> None:
    weight = rng.normal(size=(5, 3))
    idx = pyrite.tensor([[0, 4], [4, 1]])
    np.testing.assert_allclose(F.embedding(t(weight), idx).numpy(), weight[[[0, 4], [4, 1]]])
    w = pyrite.tensor(weight, device="autodiff<numpy>").require_grad()
    grads = F.embedding(w, pyrite.tensor([[0, 4], [4, 1]], device="autodiff<numpy>")).sum() \
        .backward()
    np.testing.assert_allclose(w.grad(grads).numpy()[:, 0], [1, 1, 0, 0, 2])


def test_embedding_layer_and_errors() -> None:
    layer = EmbeddingConfig(10, 4).init()
    assert layer(pyrite.tensor([1, 2, 3])).shape == (3, 4)
    assert repr(layer) == "Embedding {n_embedding: 10, d_model: 4, params: 40}"
    with pytest.raises(ShapeError, match="embedding: index 10 is out of range for 10"):
        layer(pyrite.tensor([10]))
    with pytest.raises(pyrite.KindError, match="indices must be an Int tensor"):
        layer(pyrite.tensor([1.0]))
