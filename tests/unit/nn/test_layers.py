"""Linear, Dropout and the activation layers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, ShapeError
from pyrite.nn import (
    DropoutConfig,
    Gelu,
    HardSigmoidConfig,
    LeakyReluConfig,
    LinearConfig,
    PreluConfig,
    Relu,
    Sigmoid,
    SwiGluConfig,
    Tanh,
    XavierNormal,
)

AD = "autodiff<numpy>"


def test_linear_forward_init_and_display(rng) -> None:
    layer = LinearConfig(6, 3).init()
    assert layer.weight.shape == (6, 3) and layer.bias.shape == (3,)
    assert np.abs(layer.weight.val.numpy()).max() <= 1 / math.sqrt(6)
    x = rng.normal(size=(2, 5, 6)).astype(np.float32)
    want = x @ layer.weight.val.numpy() + layer.bias.val.numpy()
    np.testing.assert_allclose(layer(pyrite.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    assert repr(layer) == "Linear {d_input: 6, d_output: 3, bias: true, params: 21}"
    no_bias = LinearConfig(6, 3, bias=False, initializer=XavierNormal()).init()
    assert no_bias.bias is None and no_bias.num_params() == 18
    with pytest.raises(ShapeError, match="linear: input has 5 features"):
        layer(pyrite.zeros((2, 5)))


def test_linear_gradients(module_gradcheck, f64, rng) -> None:
    module_gradcheck(f64(LinearConfig(3, 2).init()), rng.normal(size=(4, 3)))


def test_dropout_only_on_autodiff(rng) -> None:
    drop = DropoutConfig(0.5).init()
    x = pyrite.ones((1000,))
    assert drop(x) is x  # inference: untouched
    pyrite.seed(3, device="numpy")
    xa = pyrite.ones((1000,), device=AD).require_grad()
    out = drop(xa)
    values = out.numpy()
    assert set(np.unique(values)) <= {0.0, 2.0}
    assert 400 < (values == 0).sum() < 600
    grads = out.sum().backward()
    np.testing.assert_array_equal(xa.grad(grads).numpy(), values)  # grad is the scaled mask
    assert DropoutConfig(0.0).init()(xa) is xa
    with pytest.raises(ConfigError, match=r"prob must be in \[0, 1\)"):
        DropoutConfig(1.0)
    assert repr(drop) == "Dropout {prob: 0.5}"


def _ref(name: str, x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return {
        "relu": np.maximum(x, 0),
        "gelu": x * 0.5 * (1 + erf(x / math.sqrt(2))),
        "sigmoid": 1 / (1 + np.exp(-x)),
        "tanh": np.tanh(x),
        "leaky": np.where(x > 0, x, 0.1 * x),
        "hard": np.clip(0.2 * x + 0.5, 0, 1),
    }[name]


@pytest.mark.parametrize("name, layer", [
    ("relu", Relu()), ("gelu", Gelu()), ("sigmoid", Sigmoid()), ("tanh", Tanh()),
    ("leaky", LeakyReluConfig(negative_slope=0.1).init()), ("hard", HardSigmoidConfig().init()),
])
def test_activations(rng, gradcheck, name, layer) -> None:
    x = rng.normal(size=(3, 4)) * 2
    np.testing.assert_allclose(layer(pyrite.tensor(x)).numpy(), _ref(name, x), rtol=1e-6,
                               atol=1e-7)
    gradcheck(layer, x + 0.01)  # keep away from the kinks at exactly 0


def test_prelu_and_swiglu(rng, module_gradcheck, f64) -> None:
    prelu = PreluConfig(num_parameters=2).init()
    x = rng.normal(size=(2, 2, 3))
    want = np.where(x > 0, x, 0.25 * x)
    np.testing.assert_allclose(prelu(pyrite.tensor(x)).numpy(), want, rtol=1e-6)
    module_gradcheck(f64(prelu), x)
    swiglu = SwiGluConfig(3, 2).init()
    assert swiglu.linear_inner.bias is None
    a, b = swiglu.linear_inner.weight.val.numpy(), swiglu.linear_outer.weight.val.numpy()
    x = rng.normal(size=(4, 3)).astype(np.float32)
    h = x @ a
    want = h / (1 + np.exp(-h)) * (x @ b)
    np.testing.assert_allclose(swiglu(pyrite.tensor(x)).numpy(), want, rtol=1e-4, atol=1e-6)
    module_gradcheck(f64(swiglu), rng.normal(size=(2, 3)))
    assert "linear_inner: Linear {d_input: 3, d_output: 2, bias: false, params: 6}" in \
        repr(swiglu)
