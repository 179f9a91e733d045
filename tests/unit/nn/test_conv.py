"""Convolutions: forward against the direct definition, backward against finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, KindError, ShapeError
from pyrite.nn import Conv1dConfig, Conv2dConfig, ConvTranspose1dConfig, ConvTranspose2dConfig
from pyrite.nn import functional as F

CASES_2D = [  # x shape, w shape, stride, padding pairs, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 4, 7, 6), (6, 2, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),
    ((1, 3, 9, 9), (3, 1, 3, 3), (2, 2), ((1, 1), (1, 1)), (2, 2), 3),
    ((3, 2, 5, 5), (1, 2, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
]


def t(a: object) -> pyrite.Tensor:
    return pyrite.tensor(np.asarray(a, dtype=np.float64))


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES_2D)
def test_conv2d_matches_the_definition(ref, rng, xs, ws, stride, pads, dil, groups) -> None:
    x, w, b = rng.normal(size=xs), rng.normal(size=ws), rng.normal(size=ws[0])
    out = F.conv2d(t(x), t(w), t(b), stride=stride, padding=pads, dilation=dil, groups=groups)
    np.testing.assert_allclose(out.numpy(), ref.conv2d(x, w, b, stride, pads, dil, groups),
                               atol=1e-12)


def test_conv2d_same_padding_keeps_the_size_even_kernels_pad_after(ref, rng) -> None:
    x, w = rng.normal(size=(1, 1, 6, 5)), rng.normal(size=(2, 1, 4, 3))
    out = F.conv2d(t(x), t(w), padding="same")
    assert out.shape == (1, 2, 6, 5)
    np.testing.assert_allclose(out.numpy(), ref.conv2d(x, w, pads=((1, 2), (1, 1))),
                               atol=1e-12)
    assert F.conv2d(t(x), t(w), padding="valid").shape == (1, 2, 3, 3)
    assert F.conv2d(t(x), t(w), padding=(1, 2)).shape == (1, 2, 5, 7)


def test_conv2d_gradients(gradcheck, rng) -> None:
    gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=((1, 0), (1, 1)),
                                       dilation=(1, 2), groups=2),
              rng.normal(size=(2, 4, 5, 5)), rng.normal(size=(2, 2, 2, 2)), rng.normal(size=2))


def test_conv1d_is_conv2d_on_a_row(ref, rng, gradcheck) -> None:
    x, w, b = rng.normal(size=(2, 4, 9)), rng.normal(size=(6, 2, 3)), rng.normal(size=6)
    out = F.conv1d(t(x), t(w), t(b), stride=2, padding=(1, 2), dilation=2, groups=2)
    want = ref.conv2d(x[:, :, None], w[:, :, None], b, (1, 2), ((0, 0), (1, 2)), (1, 2), 2)
    np.testing.assert_allclose(out.numpy(), want[:, :, 0], atol=1e-12)
    assert F.conv1d(t(x), t(w), groups=2, padding="same").shape == (2, 6, 9)
    gradcheck(lambda x, w: F.conv1d(x, w, stride=2, padding=1), rng.normal(size=(1, 2, 6)),
              rng.normal(size=(2, 2, 3)))


TRANSPOSE_CASES = [  # x shape, w shape, stride, padding, output padding, dilation, groups
    ((2, 3, 4, 3), (3, 2, 3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    ((1, 4, 3, 4), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), (1, 1), 2),
    ((2, 2, 3, 3), (2, 2, 2, 3), (2, 1), (0, 1), (0, 0), (2, 1), 1),
]


@pytest.mark.parametrize("xs, ws, stride, pad, opad, dil, groups", TRANSPOSE_CASES)
def test_conv_transpose2d_matches_the_definition(ref, rng, xs, ws, stride, pad, opad, dil,
                                                 groups) -> None:
    x, w = rng.normal(size=xs), rng.normal(size=ws)
    b = rng.normal(size=ws[1] * groups)
    out = F.conv_transpose2d(t(x), t(w), t(b), stride=stride, padding=pad,
                             output_padding=opad, dilation=dil, groups=groups)
    want = ref.conv_transpose2d(x, w, b, stride, pad, opad, dil, groups)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, atol=1e-12)


def test_conv_transpose_gradients(gradcheck, rng) -> None:
    gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                 output_padding=1),
              rng.normal(size=(1, 2, 3, 2)), rng.normal(size=(2, 2, 3, 3)), rng.normal(size=2))
    gradcheck(lambda x, w: F.conv_transpose1d(x, w, stride=3, groups=2),
              rng.normal(size=(1, 2, 3)), rng.normal(size=(2, 1, 2)))


def test_conv_transpose_undoes_conv_shapes(rng) -> None:
    x = t(rng.normal(size=(1, 2, 8, 8)))
    down = F.conv2d(x, t(rng.normal(size=(4, 2, 3, 3))), stride=2, padding=1)
    up = F.conv_transpose2d(down, t(rng.normal(size=(4, 2, 3, 3))), stride=2, padding=1,
                            output_padding=1)
    assert down.shape == (1, 4, 4, 4) and up.shape == (1, 2, 8, 8)


def test_errors_name_the_op_and_the_fix() -> None:
    x = pyrite.zeros((1, 3, 5, 5))
    with pytest.raises(ShapeError, match=r"conv2d: input has 3 channels, the weight \(4, 2, "):
        F.conv2d(x, pyrite.zeros((4, 2, 3, 3)))
    with pytest.raises(ShapeError, match="conv2d: input must have rank 4 \\(NCHW\\)"):
        F.conv2d(pyrite.zeros((3, 5, 5)), pyrite.zeros((4, 3, 3, 3)))
    with pytest.raises(ShapeError, match="padding='same' needs stride 1"):
        F.conv2d(x, pyrite.zeros((4, 3, 3, 3)), padding="same", stride=2)
    with pytest.raises(ShapeError, match="larger than the padded input"):
        F.conv2d(x, pyrite.zeros((4, 3, 7, 7)))
    with pytest.raises(KindError, match="conv2d: input must be a Float tensor"):
        F.conv2d(pyrite.zeros((1, 3, 5, 5), dtype="i64"), pyrite.zeros((4, 3, 3, 3)))
    with pytest.raises(ShapeError, match="conv2d: bias must have shape \\(4,\\)"):
        F.conv2d(x, pyrite.zeros((4, 3, 3, 3)), pyrite.zeros((3,)))
    with pytest.raises(ShapeError, match="conv_transpose2d: output_padding"):
        F.conv_transpose2d(x, pyrite.zeros((3, 1, 3, 3)), output_padding=1)


def test_conv2d_layer_init_display_and_forward(rng, ref) -> None:
    layer = Conv2dConfig(2, 4, 3, stride=2, padding=1).init()
    assert layer.weight.shape == (4, 2, 3, 3) and layer.bias.shape == (4,)
    bound = 1 / math.sqrt(2 * 9)  # KaimingUniform(1/sqrt(3)) on fan_in
    assert np.abs(layer.weight.val.numpy()).max() <= bound
    assert np.abs(layer.bias.val.numpy()).max() <= bound
    assert repr(layer) == ("Conv2d {stride: [2, 2], kernel_size: [3, 3], dilation: [1, 1], "
                           "groups: 1, padding: Explicit(1), params: 76}")
    x = rng.normal(size=(1, 2, 6, 6)).astype(np.float32)
    out = layer(pyrite.tensor(x))
    want = ref.conv2d(x, layer.weight.val.numpy(), layer.bias.val.numpy(), (2, 2),
                      ((1, 1), (1, 1)))
    np.testing.assert_allclose(out.numpy(), want, atol=1e-5)


def test_conv_layers_gradients(module_gradcheck, f64, rng) -> None:
    module_gradcheck(f64(Conv2dConfig(2, 2, (2, 3), groups=2, padding="same").init()),
                     rng.normal(size=(1, 2, 3, 4)))
    module_gradcheck(f64(ConvTranspose1dConfig(2, 2, 3, stride=2).init()),
                     rng.normal(size=(1, 2, 3)))


def test_other_conv_layers_build_and_run() -> None:
    c1 = Conv1dConfig(2, 3, 3, padding=(1, 0), bias=False).init()
    assert c1.bias is None and c1(pyrite.zeros((1, 2, 5))).shape == (1, 3, 4)
    ct = ConvTranspose2dConfig(4, 2, 3, stride=2, padding=1, padding_out=1, groups=2).init()
    assert ct.weight.shape == (4, 1, 3, 3)
    assert ct(pyrite.zeros((1, 4, 5, 5))).shape == (1, 2, 10, 10)
    assert "padding_out: [1, 1]" in repr(ct)


def test_conv_configs_validate() -> None:
    with pytest.raises(ConfigError, match="groups=2 must divide channels_in"):
        Conv2dConfig(3, 4, 3, groups=2)
    with pytest.raises(ConfigError, match="needs stride 1"):
        Conv2dConfig(3, 4, 3, stride=2, padding="same")
    with pytest.raises(TypeError):
        Conv2dConfig(1, 8, 3, 2)  # type: ignore[misc]
