"""DeformConv2d and `deform_conv2d`: values against a direct numpy definition (and
torchvision's `deform_conv2d` when it is installed), zero offsets against Conv2d, gradients,
config, printing, records across backends and the shape errors.

Every backend runs the op in tests/conformance/test_deform_conv.py."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, ShapeError
from pyrite.nn import Conv2dConfig, DeformConv2d, DeformConv2dConfig, KaimingNormal
from pyrite.nn import functional as F


# ---- the definition, one sample at a time ------------------------------------------------------
def bilinear(img: np.ndarray, y: float, x: float) -> float:
    """torchvision's sampling: the four neighbours, each outside the image reading zero."""
    h, w = img.shape
    y0, x0 = math.floor(y), math.floor(x)
    total = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                total += wy * wx * img[yy, xx]
    return total


def deform_conv2d_ref(x: np.ndarray, offset: np.ndarray, w: np.ndarray,
                      b: np.ndarray | None = None, mask: np.ndarray | None = None,
                      stride: tuple[int, int] = (1, 1),
                      pads: tuple[tuple[int, int], ...] = ((0, 0), (0, 0)),
                      dil: tuple[int, int] = (1, 1), wg: int = 1, og: int = 1) -> np.ndarray:
    """out[n, o, oy, ox] = sum over the weight group's channels c and taps (i, j) of
    w[o, c, i, j] * mask * x[n, c] sampled at the tap's grid point plus (dy, dx)."""
    n, c_in, _, _ = x.shape
    c_out, cwg, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    cg, og_out = c_in // og, c_out // wg
    out = np.zeros((n, c_out, oh, ow))
    for b_, c, i, j, oy, ox in np.ndindex(n, c_in, kh, kw, oh, ow):
        tap = (c // cg) * kh * kw + i * kw + j
        y = oy * stride[0] - pads[0][0] + i * dil[0] + offset[b_, 2 * tap, oy, ox]
        xx = ox * stride[1] - pads[1][0] + j * dil[1] + offset[b_, 2 * tap + 1, oy, ox]
        v = bilinear(x[b_, c], y, xx) * (1.0 if mask is None else mask[b_, tap, oy, ox])
        group = c // cwg
        for o in range(group * og_out, (group + 1) * og_out):
            out[b_, o, oy, ox] += w[o, c - group * cwg, i, j] * v
    return out if b is None else out + b[None, :, None, None]


def _t(a: np.ndarray, device: Any = None, dtype: str = "f64") -> pyrite.Tensor:
    return pyrite.tensor(np.asarray(a), device=device, dtype=dtype)


# x shape, weight shape, stride, padding pairs, dilation, weight groups, offset groups
CASES = [
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, 1),
    ((2, 4, 5, 6), (6, 2, 2, 3), (2, 1), ((1, 0), (0, 1)), (1, 2), 2, 2),
    ((1, 4, 4, 4), (2, 4, 3, 3), (1, 2), ((1, 1), (1, 1)), (1, 1), 1, 4),
]


def _arrays(rng: np.random.Generator, xs: tuple[int, ...], ws: tuple[int, ...],
            stride: tuple[int, int], pads: Any, dil: tuple[int, int],
            og: int) -> tuple[np.ndarray, ...]:
    size = [(s + lo + hi - d * (k - 1) - 1) // st + 1 for s, (lo, hi), k, st, d in
            zip(xs[2:], pads, ws[2:], stride, dil, strict=True)]
    taps = og * ws[2] * ws[3]
    # offsets up to +-3 pixels reach past every edge, so the zero border is exercised
    offset = rng.uniform(-3, 3, size=(xs[0], 2 * taps, *size))
    mask = rng.uniform(0, 1, size=(xs[0], taps, *size))
    return rng.normal(size=xs), offset, rng.normal(size=ws), rng.normal(size=ws[0]), mask


@pytest.mark.parametrize("xs, ws, stride, pads, dil, wg, og", CASES)
def test_matches_the_definition(rng, xs, ws, stride, pads, dil, wg, og) -> None:
    x, offset, w, b, mask = _arrays(rng, xs, ws, stride, pads, dil, og)
    opts: dict[str, Any] = dict(stride=stride, padding=pads, dilation=dil, weight_groups=wg,
                                offset_groups=og)
    got = F.deform_conv2d(_t(x), _t(offset), _t(w), _t(b), mask=_t(mask), **opts)
    np.testing.assert_allclose(got.numpy(), deform_conv2d_ref(x, offset, w, b, mask, stride,
                                                              pads, dil, wg, og), atol=1e-12)
    unmasked = F.deform_conv2d(_t(x), _t(offset), _t(w), None, **opts)
    np.testing.assert_allclose(unmasked.numpy(), deform_conv2d_ref(
        x, offset, w, None, None, stride, pads, dil, wg, og), atol=1e-12)


@pytest.mark.parametrize("xs, ws, stride, pads, dil, wg, og", CASES[:2])
def test_matches_torchvision(rng, xs, ws, stride, pads, dil, wg, og) -> None:
    torch = pytest.importorskip("torch")
    ops = pytest.importorskip("torchvision.ops")
    if wg != 1 or pads[0][0] != pads[0][1] or pads[1][0] != pads[1][1]:
        pytest.skip("torchvision takes one symmetric padding per dim and infers the groups")
    x, offset, w, b, mask = _arrays(rng, xs, ws, stride, pads, dil, og)
    want = ops.deform_conv2d(*(torch.from_numpy(a) for a in (x, offset, w, b)), stride=stride,
                             padding=(pads[0][0], pads[1][0]), dilation=dil,
                             mask=torch.from_numpy(mask)).numpy()
    got = F.deform_conv2d(_t(x), _t(offset), _t(w), _t(b), mask=_t(mask), stride=stride,
                          padding=pads, dilation=dil, offset_groups=og)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-10)


def test_zero_offsets_and_a_mask_of_ones_are_conv2d(rng) -> None:
    conv = Conv2dConfig(4, 6, (3, 2), stride=(2, 1), padding=((1, 0), (1, 1)), dilation=(1, 2),
                        groups=2).init()
    deform = DeformConv2dConfig(4, 6, (3, 2), stride=(2, 1), padding=((1, 0), (1, 1)),
                                dilation=(1, 2), weight_groups=2, offset_groups=2).init()
    deform = deform.load_record(conv.into_record())
    x = pyrite.tensor(rng.normal(size=(2, 4, 7, 6)).astype(np.float32))
    want = conv(x)
    n, _, oh, ow = want.shape
    offset = pyrite.zeros((n, 2 * 2 * 6, oh, ow))
    np.testing.assert_allclose(deform(x, offset).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    ones = pyrite.ones((n, 2 * 6, oh, ow))
    np.testing.assert_allclose(deform(x, offset, ones).numpy(), want.numpy(), rtol=1e-5,
                               atol=1e-5)


def test_integer_offsets_shift_the_input(rng) -> None:
    """An offset of (+1, -1) everywhere samples the pixel one row down and one column left."""
    x = rng.normal(size=(1, 1, 5, 5))
    w = np.ones((1, 1, 1, 1))
    offset = np.zeros((1, 2, 5, 5))
    offset[:, 0], offset[:, 1] = 1.0, -1.0
    got = F.deform_conv2d(_t(x), _t(offset), _t(w)).numpy()[0, 0]
    want = np.zeros((5, 5))
    want[:4, 1:] = x[0, 0, 1:, :4]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_gradients_of_every_input(gradcheck, rng) -> None:
    # offsets kept off integer positions, where the bilinear weights have kinks
    x, offset, w, b, mask = _arrays(rng, (1, 2, 4, 4), (2, 1, 2, 2), (1, 1), ((1, 0), (0, 1)),
                                    (1, 1), 2)
    offset = np.round(offset) + rng.uniform(0.2, 0.8, size=offset.shape)
    gradcheck(lambda *t: F.deform_conv2d(t[0], t[1], t[2], t[3], mask=t[4],
                                         padding=((1, 0), (0, 1)), weight_groups=2,
                                         offset_groups=2), x, offset, w, b, mask)


def test_layer_gradients_reach_the_params(rng) -> None:
    layer = DeformConv2dConfig(2, 3, 2).init("autodiff<numpy>")
    x = pyrite.tensor(rng.normal(size=(1, 2, 4, 4)).astype(np.float32), device="autodiff<numpy>")
    offset = pyrite.tensor(rng.uniform(-1, 1, size=(1, 8, 3, 3)).astype(np.float32),
                           device="autodiff<numpy>").require_grad()
    grads = layer(x, offset).sum().backward()
    assert layer.weight.grad(grads).shape == (3, 2, 2, 2)
    assert layer.bias is not None and layer.bias.grad(grads).shape == (3,)
    assert offset.grad(grads).shape == offset.shape


# ---- config, printing, records -----------------------------------------------------------------
def test_config_defaults_json_and_init() -> None:
    config = DeformConv2dConfig(5, 1, 5)
    assert (config.stride, config.dilation, config.weight_groups, config.offset_groups,
            config.padding, config.bias) == (1, 1, 1, 1, "valid", True)
    custom = DeformConv2dConfig(4, 6, (3, 2), stride=(2, 1), dilation=2, weight_groups=2,
                                offset_groups=4, padding=((1, 0), (0, 1)), bias=False,
                                initializer=KaimingNormal(gain=1.5))
    assert DeformConv2dConfig.from_json(custom.to_json()) == custom
    layer = custom.init()
    assert isinstance(layer, DeformConv2d) and layer.bias is None
    assert layer.weight.shape == (6, 2, 3, 2)
    bound = 1 / math.sqrt(5 * 25)  # KaimingUniform(1/sqrt(3)) on fan_in, as Burn's test checks
    assert np.abs(config.init().weight.val.numpy()).max() <= bound


def test_printing_matches_burn() -> None:
    layer = DeformConv2dConfig(5, 1, 5).init()
    assert repr(layer) == ("DeformConv2d {stride: [1, 1], kernel_size: [5, 5], dilation: [1, 1], "
                           "weight_groups: 1, offset_groups: 1, padding: Valid, params: 126}")
    padded = DeformConv2dConfig(4, 4, 3, padding=1, offset_groups=2).init()
    assert "offset_groups: 2, padding: Explicit(1), params: 148}" in repr(padded)


def test_record_round_trip_numpy_to_webgpu(device_named, rng, tmp_path: Path) -> None:
    webgpu = device_named("webgpu")
    config = DeformConv2dConfig(2, 3, 3, padding=1, offset_groups=2)
    layer = config.init("numpy")
    path = layer.save_file(tmp_path / "deform")
    moved = config.init(webgpu).load_file(path)
    assert moved.devices() == [webgpu]
    x = rng.normal(size=(1, 2, 4, 5)).astype(np.float32)
    offset = rng.uniform(-2, 2, size=(1, 36, 4, 5)).astype(np.float32)
    mask = rng.uniform(0, 1, size=(1, 18, 4, 5)).astype(np.float32)
    want = layer(*(pyrite.tensor(a) for a in (x, offset, mask)))
    got = moved(*(pyrite.tensor(a, device=webgpu) for a in (x, offset, mask)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


# ---- errors ------------------------------------------------------------------------------------
def test_config_validates() -> None:
    with pytest.raises(ConfigError, match="weight_groups=4 must divide channels_in"):
        DeformConv2dConfig(1, 4, 1, weight_groups=4)
    with pytest.raises(ConfigError, match="offset_groups=3 must divide channels_in"):
        DeformConv2dConfig(4, 4, 3, offset_groups=3)
    with pytest.raises(ConfigError, match="needs stride 1"):
        DeformConv2dConfig(4, 4, 3, stride=2, padding="same")
    with pytest.raises(TypeError):
        DeformConv2dConfig(1, 8, 3, 2)  # type: ignore[misc]


def test_wrong_offset_and_mask_shapes_name_the_expected_shape() -> None:
    layer = DeformConv2dConfig(4, 2, 3, offset_groups=2).init()
    x = pyrite.zeros((1, 4, 6, 6))
    with pytest.raises(ShapeError, match=r"offset must have shape \(1, 36, 4, 4\) "
                                         r"\(N, 2\*offset_groups\*kh\*kw, H_out, W_out\).*"
                                         r"got \(1, 18, 4, 4\)"):
        layer(x, pyrite.zeros((1, 18, 4, 4)))
    with pytest.raises(ShapeError, match=r"offset must have shape \(1, 36, 4, 4\).*got "
                                         r"\(1, 36, 6, 6\)"):
        layer(x, pyrite.zeros((1, 36, 6, 6)))
    with pytest.raises(ShapeError, match=r"mask must have shape \(1, 18, 4, 4\) "
                                         r"\(N, offset_groups\*kh\*kw, H_out, W_out\), got "
                                         r"\(1, 9, 4, 4\)"):
        layer(x, pyrite.zeros((1, 36, 4, 4)), pyrite.zeros((1, 9, 4, 4)))
    with pytest.raises(ShapeError, match=r"offset must have rank 4"):
        layer(x, pyrite.zeros((36, 4, 4)))
    with pytest.raises(ShapeError, match="input has 3 channels"):
        layer(pyrite.zeros((1, 3, 6, 6)), pyrite.zeros((1, 36, 4, 4)))
    with pytest.raises(ShapeError, match="offset_groups=3 must divide the input channels"):
        F.deform_conv2d(x, pyrite.zeros((1, 54, 4, 4)), pyrite.zeros((2, 4, 3, 3)),
                        offset_groups=3)
