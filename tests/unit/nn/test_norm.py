"""Normalization layers against numpy formulas; BatchNorm's train/valid modes and running stats."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, ShapeError
from pyrite.nn import (
    BatchNormConfig,
    GroupNormConfig,
    InstanceNormConfig,
    LayerNormConfig,
    RmsNormConfig,
)

AD = "autodiff<numpy>"


def affine(m, rng):  # type: ignore[no-untyped-def]
    """Random gamma/beta so the affine part is exercised too."""
    return m.map(lambda path, p: p.with_val(pyrite.tensor(rng.normal(size=p.shape), device=p.device,
                                                          dtype=p.dtype))
                 if p.require_grad else p)


def test_batchnorm_train_uses_batch_stats_and_updates_running(rng) -> None:
    bn = affine(BatchNormConfig(3, momentum=0.2).init(AD), rng)
    x = rng.normal(size=(4, 3, 2, 5)) * 3 + 1
    out = bn(pyrite.tensor(x, device=AD)).numpy()
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    g, b = bn.gamma.val.numpy(), bn.beta.val.numpy()
    want = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(out, want * g[None, :, None, None] + b[None, :, None, None],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.running_mean.val.numpy(), 0.8 * 0 + 0.2 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.val.numpy(), 0.8 * 1 + 0.2 * var, rtol=1e-5)
    assert not bn.running_mean.val.is_require_grad()


def test_batchnorm_valid_uses_running_stats(rng) -> None:
    bn = BatchNormConfig(2).init(AD)
    for _ in range(3):
        bn(pyrite.tensor(rng.normal(size=(8, 2)) + 5.0, device=AD))
    rm, rv = bn.running_mean.val.numpy(), bn.running_var.val.numpy()
    valid = bn.valid()
    x = rng.normal(size=(3, 2))
    out = valid(pyrite.tensor(x)).numpy()
    np.testing.assert_allclose(out, (x - rm) / np.sqrt(rv + 1e-5), rtol=1e-5)
    np.testing.assert_allclose(valid.running_mean.val.numpy(), rm)  # valid() does not update
    record = bn.into_record()
    assert set(record) >= {"gamma", "beta", "running_mean", "running_var"}
    assert repr(bn) == ("BatchNorm {num_features: 2, momentum: 0.1, epsilon: 1e-05, "
                        "params: 8}")


def test_batchnorm_gradients(module_gradcheck, f64, rng) -> None:
    module_gradcheck(affine(f64(BatchNormConfig(2).init()), rng), rng.normal(size=(3, 2, 2)))


def test_layernorm_and_rmsnorm(rng, module_gradcheck, f64) -> None:
    x = rng.normal(size=(2, 3, 4))
    ln = affine(LayerNormConfig(4).init(), rng)
    g, b = ln.gamma.val.numpy(), ln.beta.val.numpy()
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(ln(pyrite.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    rms = affine(RmsNormConfig(4, epsilon=1e-6).init(), rng)
    g = rms.gamma.val.numpy()
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(rms(pyrite.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    module_gradcheck(affine(f64(LayerNormConfig(3).init()), rng), rng.normal(size=(2, 3)))
    module_gradcheck(affine(f64(RmsNormConfig(3).init()), rng), rng.normal(size=(2, 3)))


def test_groupnorm_and_instancenorm(rng, module_gradcheck, f64) -> None:
    x = rng.normal(size=(2, 4, 3))
    gn = affine(GroupNormConfig(2, 4).init(), rng)
    grouped = x.reshape(2, 2, -1)
    norm = ((grouped - grouped.mean(-1, keepdims=True))
            / np.sqrt(grouped.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    want = norm * gn.gamma.val.numpy()[None, :, None] + gn.beta.val.numpy()[None, :, None]
    np.testing.assert_allclose(gn(pyrite.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    inorm = InstanceNormConfig(4, affine=False).init()
    assert inorm.num_params() == 0
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(inorm(pyrite.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    module_gradcheck(affine(f64(GroupNormConfig(2, 4).init()), rng), rng.normal(size=(1, 4, 2)))
    module_gradcheck(affine(f64(InstanceNormConfig(2).init()), rng), rng.normal(size=(2, 2, 3)))


def test_norm_errors() -> None:
    with pytest.raises(ShapeError, match=r"BatchNorm: expects input \(N, 3, ...\)"):
        BatchNormConfig(3).init()(pyrite.zeros((2, 4)))
    with pytest.raises(ShapeError, match="LayerNorm: expects a last dim of 4"):
        LayerNormConfig(4).init()(pyrite.zeros((2, 3)))
    with pytest.raises(ConfigError, match="num_groups 3 must divide num_channels 4"):
        GroupNormConfig(3, 4)
