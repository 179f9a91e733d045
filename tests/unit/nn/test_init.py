"""Initializers: bounds and spreads from their formulas, Burn's defaults, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError
from pyrite.nn import (
    Constant,
    KaimingNormal,
    KaimingUniform,
    Normal,
    Ones,
    Uniform,
    XavierNormal,
    XavierUniform,
    Zeros,
)
from pyrite.nn.init import DEFAULT_GAIN


def draw(init, **kw):  # type: ignore[no-untyped-def]
    return init.init((200, 100), device="numpy", dtype="f64", **kw).numpy()


def test_constants() -> None:
    assert Constant(2.5).init((2,)).to_list() == [2.5, 2.5]
    assert Ones().init((2,)).to_list() == [1.0, 1.0]
    assert Zeros().init((1, 2)).to_list() == [[0.0, 0.0]]


def test_uniform_and_normal() -> None:
    u = draw(Uniform(min=-2.0, max=3.0))
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = draw(Normal(mean=1.0, std=2.0))
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05


def test_kaiming_default_is_pytorchs_linear_init() -> None:
    k = draw(KaimingUniform(), fan_in=100, fan_out=7)
    bound = 1 / math.sqrt(100)
    assert k.max() <= bound and k.min() >= -bound and k.max() > 0.95 * bound
    assert KaimingUniform().gain == DEFAULT_GAIN
    out_only = draw(KaimingUniform(gain=1.0, fan_out_only=True), fan_in=100, fan_out=3)
    assert out_only.max() > 0.95 and out_only.max() <= 1.0
    kn = draw(KaimingNormal(gain=math.sqrt(2)), fan_in=50)
    assert abs(kn.std() - math.sqrt(2 / 50)) < 0.01


def test_xavier() -> None:
    xu = draw(XavierUniform(), fan_in=30, fan_out=70)
    bound = math.sqrt(6 / 100)
    assert xu.max() <= bound and xu.max() > 0.95 * bound
    xn = draw(XavierNormal(gain=2.0), fan_in=30, fan_out=70)
    assert abs(xn.std() - 2.0 * math.sqrt(2 / 100)) < 0.01


def test_fans_are_required_and_params_wrap() -> None:
    with pytest.raises(ConfigError, match="KaimingUniform: needs fan_in"):
        KaimingUniform().init((2, 2))
    with pytest.raises(ConfigError, match="XavierNormal: needs fan_out"):
        XavierNormal().init((2, 2), fan_in=2)
    p = Zeros().init_param((3,), device="autodiff<numpy>")
    assert p.val.is_require_grad()


def test_seeded_draws_repeat() -> None:
    pyrite.seed(7)
    a = Normal().init((4,)).to_list()
    pyrite.seed(7)
    assert Normal().init((4,)).to_list() == a
    assert np.all(np.isfinite(a))
