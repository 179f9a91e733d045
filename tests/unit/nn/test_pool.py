"""Pooling: max (with indices), average, adaptive average; forward and backward."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, ShapeError
from pyrite.nn import (
    AdaptiveAvgPool1dConfig,
    AdaptiveAvgPool2dConfig,
    AvgPool1dConfig,
    AvgPool2dConfig,
    MaxPool1dConfig,
    MaxPool2dConfig,
)
from pyrite.nn import functional as F


def t(a: object) -> pyrite.Tensor:
    return pyrite.tensor(np.asarray(a, dtype=np.float64))


@pytest.mark.parametrize("kernel, stride, pads, dil", [
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((3, 2), (1, 2), ((1, 1), (0, 1)), (1, 1)),
    ((2, 3), (2, 1), ((0, 0), (1, 1)), (2, 1)),
])
def test_max_pool2d_values_and_indices(ref, rng, kernel, stride, pads, dil) -> None:
    x = rng.normal(size=(2, 3, 7, 6))
    out, idx = F.max_pool2d_with_indices(t(x), kernel, stride=stride, padding=pads,
                                         dilation=dil)
    want, want_idx = ref.pool2d(x, kernel, stride, pads, "max", dil)
    np.testing.assert_allclose(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    assert idx.kind is pyrite.Int
    np.testing.assert_allclose(F.max_pool2d(t(x), kernel, stride=stride, padding=pads,
                                            dilation=dil).numpy(), want)


@pytest.mark.parametrize("include_pad", [True, False])
def test_avg_pool2d(ref, rng, include_pad) -> None:
    x = rng.normal(size=(2, 2, 5, 6))
    out = F.avg_pool2d(t(x), (3, 2), stride=(2, 2), padding=(1, 1),
                       count_include_pad=include_pad)
    want = ref.pool2d(x, (3, 2), (2, 2), ((1, 1), (1, 1)), "avg", include_pad=include_pad)
    np.testing.assert_allclose(out.numpy(), want, atol=1e-12)


@pytest.mark.parametrize("size, out", [((6, 6), (3, 2)), ((7, 5), (3, 4)), ((4, 4), (6, 5))])
def test_adaptive_avg_pool2d(ref, rng, size, out) -> None:
    x = rng.normal(size=(2, 3, *size))
    np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x), out).numpy(),
                               ref.adaptive_avg(x, out), atol=1e-12)


def test_pool_1d_forms(ref, rng) -> None:
    x = rng.normal(size=(2, 3, 9))
    out, idx = F.max_pool1d_with_indices(t(x), 3, stride=2, padding=1)
    want, want_idx = ref.pool2d(x[:, :, None], (1, 3), (1, 2), ((0, 0), (1, 1)), "max")
    np.testing.assert_allclose(out.numpy(), want[:, :, 0])
    np.testing.assert_array_equal(idx.numpy(), want_idx[:, :, 0])
    np.testing.assert_allclose(F.avg_pool1d(t(x), 2).numpy(),
                               ref.pool2d(x[:, :, None], (1, 2), (1, 2), ((0, 0), (0, 0)),
                                          "avg")[:, :, 0], atol=1e-12)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t(x), 4).numpy(),
                               ref.adaptive_avg(x[:, :, None], (1, 4))[:, :, 0], atol=1e-12)


def test_pool_gradients(gradcheck, rng) -> None:
    # distinct values: the max is unique, so the gradient is defined everywhere
    x = rng.permutation(50).reshape(1, 2, 5, 5) / 10.0
    gradcheck(lambda x: F.max_pool2d(x, 2, stride=1, padding=1), x, eps=1e-4)
    gradcheck(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), x)
    gradcheck(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), x)
    gradcheck(lambda x: F.adaptive_avg_pool2d(x, (5, 1)), x)
    gradcheck(lambda x: F.max_pool1d(x, 2), x[0, :, 0:1, :].reshape(1, 2, 5), eps=1e-4)


def test_pool_layers(rng) -> None:
    x = pyrite.tensor(rng.normal(size=(1, 2, 8, 8)).astype(np.float32))
    assert MaxPool2dConfig(2).init()(x).shape == (1, 2, 4, 4)  # stride defaults to the kernel
    assert MaxPool2dConfig(3, stride=1, padding=1).init()(x).shape == (1, 2, 8, 8)
    assert AvgPool2dConfig(2).init()(x).shape == (1, 2, 4, 4)
    pool = AdaptiveAvgPool2dConfig((3, 3)).init()
    assert pool(x).shape == (1, 2, 3, 3)
    assert repr(pool) == "AdaptiveAvgPool2d {output_size: [3, 3]}"
    assert repr(MaxPool2dConfig(2).init()) == (
        "MaxPool2d {kernel_size: [2, 2], stride: [2, 2], padding: Valid, dilation: [1, 1], "
        "ceil_mode: false}")
    line = pyrite.tensor(rng.normal(size=(1, 2, 8)).astype(np.float32))
    assert MaxPool1dConfig(2).init()(line).shape == (1, 2, 4)
    out, idx = MaxPool1dConfig(2).init().forward_with_indices(line)
    assert idx.shape == (1, 2, 4)
    assert AvgPool1dConfig(4).init()(line).shape == (1, 2, 2)
    assert AdaptiveAvgPool1dConfig(3).init()(line).shape == (1, 2, 3)


def test_ceil_mode_adds_a_partial_last_window(ref, rng) -> None:
    x = rng.normal(size=(1, 2, 7, 6))
    out, idx = F.max_pool2d_with_indices(t(x), 2, stride=2, ceil_mode=True)
    assert out.shape == (1, 2, 4, 3)
    want, want_idx = ref.pool2d(x, (2, 2), (2, 2), ((0, 1), (0, 0)), "max")
    np.testing.assert_allclose(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    # the partial window's mean counts only what lies in the input (and its padding)
    avg = F.avg_pool2d(t(x), 2, stride=2, ceil_mode=True).numpy()
    np.testing.assert_allclose(avg[0, :, 3, :], (x[0, :, 6, 0::2] + x[0, :, 6, 1::2]) / 2)
    # no window may start in the right padding: 5 -> 3 windows of 2 with stride 2, not 4
    assert F.max_pool1d(t(rng.normal(size=(1, 1, 5))), 2, padding=1, ceil_mode=True).shape == \
        (1, 1, 3)


@pytest.mark.parametrize("kw", [
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": (2, 3), "stride": (3, 2), "ceil_mode": True},
])
def test_pools_match_torch(rng, kw) -> None:
    torch = pytest.importorskip("torch")
    x = rng.normal(size=(2, 3, 8, 7))
    tx = torch.tensor(x)
    avg = F.avg_pool2d(t(x), **kw).numpy()
    np.testing.assert_allclose(avg, torch.nn.functional.avg_pool2d(tx, **kw).numpy(),
                               atol=1e-12)
    mkw = {k: v for k, v in kw.items() if k != "count_include_pad"}
    out, idx = F.max_pool2d_with_indices(t(x), **mkw)
    want, want_idx = torch.nn.functional.max_pool2d(tx, return_indices=True, **mkw)
    np.testing.assert_allclose(out.numpy(), want.numpy())
    np.testing.assert_array_equal(idx.numpy(), want_idx.numpy())


def test_pool_errors() -> None:
    x = pyrite.zeros((1, 1, 4, 4))
    with pytest.raises(ShapeError, match="max_pool2d: padding 2 is more than half the kernel"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ShapeError, match="avg_pool2d: input must have rank 4"):
        F.avg_pool2d(pyrite.zeros((4, 4)), 2)
    with pytest.raises(ConfigError, match="kernel_size must be >= 1"):
        MaxPool2dConfig(0)
