"""The 15 activations of Burn's table against their numpy formulas, for f32/f64/f16, three
memory layouts, and inputs large enough to overflow a naive formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyrite import activation as A
from pyrite import tensor

from .helpers import F32, F64, FLOATS, LAYOUTS, assert_close, make, random_array, reference

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x, beta=1.0):
    return np.logaddexp(0.0, beta * x) / beta


def _softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _log_softmax(x, dim):
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def _quiet_softmax(x, dim):
    # exp(x) / (1 + sum(exp(x))), shifted by the max so it cannot overflow
    m = x.max(axis=dim, keepdims=True)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=dim, keepdims=True))


# name -> (pyrite call, numpy formula on float64)
ELEMENTWISE = {
    "relu": (A.relu, lambda x: np.maximum(x, 0.0)),
    "leaky_relu": (lambda x: A.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "gelu": (A.gelu, lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))),
    "sigmoid": (A.sigmoid, _sigmoid),
    "hard_sigmoid": (lambda x: A.hard_sigmoid(x, 0.2, 0.5), lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "log_sigmoid": (A.log_sigmoid, lambda x: -np.logaddexp(0.0, -x)),
    "silu": (A.silu, lambda x: x * _sigmoid(x)),
    "softplus": (A.softplus, _softplus),
    "softplus_beta2": (lambda x: A.softplus(x, 2.0), lambda x: _softplus(x, 2.0)),
    "mish": (A.mish, lambda x: x * np.tanh(_softplus(x))),
    "tanh": (A.tanh, np.tanh),
}
# name -> (pyrite call with dim, numpy formula with dim)
ALONG_DIM = {
    "softmax": (A.softmax, _softmax),
    "log_softmax": (A.log_softmax, _log_softmax),
    "softmin": (A.softmin, lambda x, d: _softmax(-x, d)),
    "quiet_softmax": (A.quiet_softmax, _quiet_softmax),
}


def test_relu_example(backend):
    x = tensor([-1.0, 0.0, 2.0], device=backend)
    assert A.relu(x).to_list() == [0.0, 0.0, 2.0]
    assert_close(A.leaky_relu(x, 0.5), [-0.5, 0.0, 2.0])


def test_softmax_example(backend):
    x = tensor([[1.0, 2.0, 3.0]], device=backend)
    e = np.exp([1.0, 2.0, 3.0])
    assert_close(A.softmax(x, 1), [e / e.sum()])
    assert_close(A.softmax(x, 1).sum_dim(1), [[1.0]])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_activation(backend, name, dtype, layout):
    call, formula = ELEMENTWISE[name]
    a = random_array((3, 4, 5), dtype, seed=len(name), low=-5.0, high=5.0)
    a.flat[:3] = [0.0, 1.0, -1.0]  # the kinks of relu-like functions
    assert_close(call(make(backend, a, dtype, layout)), formula(reference(a)), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(ALONG_DIM))
def test_softmax_family(backend, name, dtype, dim, layout):
    call, formula = ALONG_DIM[name]
    a = random_array((3, 4, 5), dtype, seed=len(name), low=-4.0, high=4.0)
    out = call(make(backend, a, dtype, layout), dim)
    assert_close(out, formula(reference(a), dim), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family_between_elementwise_ops(backend, name, dtype, dim, layout):
    """Inside an expression (producers with a broadcast operand before, a consumer after): on
    fusion<webgpu> one row kernel computes the producers as it reads and the consumer as it
    writes."""
    call, formula = ALONG_DIM[name]
    a = random_array((3, 4, 5), dtype, seed=7, low=-2.0, high=2.0)
    b = random_array((1, 4, 1), dtype, seed=8, low=-1.0, high=1.0)
    x, bias = make(backend, a, dtype, layout), make(backend, b, dtype)
    out = call(x * 2.0 - bias, dim) * 0.5 + 1.0
    assert_close(out, formula(reference(a) * 2.0 - reference(b), dim) * 0.5 + 1.0, dtype=dtype)


def test_softmax_of_a_long_row_inside_an_expression(backend):
    a = random_array((2, 1000), F32, seed=9, low=-3.0, high=3.0)
    x = make(backend, a, F32)
    assert_close(A.softmax(x.exp() - 1.0, 1) * 10.0, _softmax(np.exp(reference(a)) - 1.0, 1)
                 * 10.0, dtype=F32)
    assert_close(A.log_softmax(x * 3.0, 1), _log_softmax(reference(a) * 3.0, 1), dtype=F32)


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_large_inputs_do_not_overflow(backend, dtype):
    a = np.array([[-200.0, -50.0, 0.0, 50.0, 200.0]])
    x = make(backend, a, dtype)
    for name in ("softplus", "log_sigmoid", "sigmoid", "silu", "mish", "gelu", "tanh"):
        call, formula = ELEMENTWISE[name]
        assert_close(call(x), formula(a), dtype=dtype)
    for call, formula in ALONG_DIM.values():
        assert_close(call(x * 10.0, 1), formula(a * 10.0, 1), dtype=dtype)


def test_quiet_softmax_of_very_negative_row_is_near_zero(backend):
    # with an extra zero logit, a row of very negative logits gives weights near 0, not 1/n
    x = tensor([[-30.0, -30.0], [1.0, 1.0]], device=backend)
    out = A.quiet_softmax(x, 1)
    assert_close(out, _quiet_softmax(np.array([[-30.0, -30.0], [1.0, 1.0]]), 1))
    assert out.to_list()[0][0] < 1e-12


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_prelu_per_channel(backend, dtype):
    a = random_array((2, 3, 4), dtype, seed=1)
    alpha = np.array([0.1, 0.5, 2.0])
    x = make(backend, a, dtype, "permuted")
    out = A.prelu(x, make(backend, alpha, dtype))
    r = reference(a)
    want = np.where(r < 0, reference(alpha.astype(dtype.np_name))[None, :, None] * r, r)
    assert_close(out, want, dtype=dtype)


def test_prelu_single_alpha(backend):
    a = np.array([[-2.0, 3.0], [4.0, -1.0]])
    out = A.prelu(tensor(a, device=backend, dtype=F32), tensor([0.25], device=backend))
    assert_close(out, np.where(a < 0, 0.25 * a, a))
    out = A.prelu(tensor([-4.0, 1.0], device=backend), tensor([0.5], device=backend))
    assert_close(out, [-2.0, 1.0])


def test_single_element(backend):
    x = tensor([0.5], device=backend)
    for call, formula in ELEMENTWISE.values():
        assert_close(call(x), formula(np.array([0.5])))
    assert_close(A.softmax(x, 0), [1.0])
    assert_close(A.log_softmax(x, 0), [0.0])
    assert_close(A.quiet_softmax(x, 0), _quiet_softmax(np.array([0.5]), 0))
