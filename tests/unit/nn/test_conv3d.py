"""Conv3d and ConvTranspose3d layers: init, printing, forward, gradients, validation.

The functional ops are checked against their definitions on every backend in
tests/conformance/test_conv3d.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, ShapeError
from pyrite.nn import Conv3dConfig, ConvTranspose3dConfig
from pyrite.nn import functional as F


def test_conv3d_layer_init_display_and_forward(rng) -> None:
    layer = Conv3dConfig(2, 4, 3, stride=2, padding=1).init()
    assert layer.weight.shape == (4, 2, 3, 3, 3) and layer.bias.shape == (4,)
    bound = 1 / math.sqrt(2 * 27)  # KaimingUniform(1/sqrt(3)) on fan_in
    assert np.abs(layer.weight.val.numpy()).max() <= bound
    assert repr(layer) == ("Conv3d {stride: [2, 2, 2], kernel_size: [3, 3, 3], dilation: "
                           "[1, 1, 1], groups: 1, padding: Explicit(1), params: 220}")
    x = pyrite.tensor(rng.normal(size=(1, 2, 5, 6, 4)).astype(np.float32))
    want = F.conv3d(x, layer.weight.val, layer.bias.val, stride=2, padding=1)
    np.testing.assert_allclose(layer(x).numpy(), want.numpy())
    assert want.shape == (1, 4, 3, 3, 2)
    same = Conv3dConfig(2, 3, (1, 2, 3), padding="same", bias=False).init()
    assert same.bias is None and same(x).shape == (1, 3, 5, 6, 4)


def test_conv_transpose3d_layer_init_display_and_shapes() -> None:
    layer = ConvTranspose3dConfig(4, 2, 3, stride=2, padding=1, padding_out=1, groups=2).init()
    assert layer.weight.shape == (4, 1, 3, 3, 3)
    assert repr(layer) == ("ConvTranspose3d {stride: [2, 2, 2], kernel_size: [3, 3, 3], "
                           "dilation: [1, 1, 1], groups: 2, padding: Explicit(1, 1, 1), "
                           "padding_out: [1, 1, 1], params: 110}")
    assert layer(pyrite.zeros((1, 4, 3, 4, 5))).shape == (1, 2, 6, 8, 10)


def test_conv3d_layers_gradients(module_gradcheck, f64, rng) -> None:
    module_gradcheck(f64(Conv3dConfig(2, 2, (2, 1, 2), groups=2, padding="same").init()),
                     rng.normal(size=(1, 2, 2, 3, 3)))
    module_gradcheck(f64(ConvTranspose3dConfig(2, 1, 2, stride=(2, 1, 1)).init()),
                     rng.normal(size=(1, 2, 2, 2, 1)))


def test_conv3d_configs_and_ops_validate() -> None:
    with pytest.raises(ConfigError, match="groups=2 must divide channels_in"):
        Conv3dConfig(3, 4, 3, groups=2)
    with pytest.raises(ConfigError, match="needs stride 1"):
        Conv3dConfig(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ConfigError, match="kernel_size must be an int or 3 ints"):
        ConvTranspose3dConfig(3, 4, (3, 3))
    with pytest.raises(TypeError):
        Conv3dConfig(1, 8, 3, 2)  # type: ignore[misc]
    with pytest.raises(ShapeError, match=r"conv3d: input must have rank 5 \(NCDHW\)"):
        F.conv3d(pyrite.zeros((1, 3, 5, 5)), pyrite.zeros((4, 3, 3, 3, 3)))
    with pytest.raises(ShapeError, match="conv_transpose3d: output_padding"):
        F.conv_transpose3d(pyrite.zeros((1, 3, 2, 2, 2)), pyrite.zeros((3, 1, 3, 3, 3)),
                           output_padding=1)
