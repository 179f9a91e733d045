"""Gradients of elementwise ops, activations and broadcasting, by finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite import activation as A

from .gradcheck import check_grad

rng = np.random.default_rng(7)


def away_from_zero(*shape: int) -> np.ndarray:
    x = rng.uniform(0.3, 2.0, size=shape)
    return x * rng.choice([-1.0, 1.0], size=shape)


def positive(*shape: int) -> np.ndarray:
    return rng.uniform(0.3, 2.0, size=shape)


def normal(*shape: int) -> np.ndarray:
    return rng.normal(size=shape)


UNARY = {
    "exp": (lambda x: x.exp(), normal),
    "log": (lambda x: x.log(), positive),
    "log1p": (lambda x: x.log1p(), positive),
    "sqrt": (lambda x: x.sqrt(), positive),
    "sin": (lambda x: x.sin(), normal),
    "cos": (lambda x: x.cos(), normal),
    "tanh": (lambda x: x.tanh(), normal),
    "erf": (lambda x: x.erf(), normal),
    "sigmoid": (lambda x: x.sigmoid(), normal),
    "recip": (lambda x: x.recip(), away_from_zero),
    "abs": (lambda x: x.abs(), away_from_zero),
    "neg": (lambda x: -x, normal),
    "powf_scalar": (lambda x: x.powf_scalar(3.0), normal),
    "powf_scalar_frac": (lambda x: x.powf_scalar(0.5), positive),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), away_from_zero),
    "scalar_chain": (lambda x: (2.0 - x) * 3.0 / (x * x + 1.0) + 1.5, normal),
    "rsub_rdiv": (lambda x: 1.0 / x - (2.0 - x), away_from_zero),
    "rem_scalar": (lambda x: x % 0.7, positive),
    "relu": (A.relu, away_from_zero),
    "leaky_relu": (lambda x: A.leaky_relu(x, 0.1), away_from_zero),
    "gelu": (A.gelu, normal),
    "silu": (A.silu, normal),
    "mish": (A.mish, normal),
    "softplus": (lambda x: A.softplus(x, 2.0), normal),
    "log_sigmoid": (A.log_sigmoid, normal),
    "hard_sigmoid": (A.hard_sigmoid, away_from_zero),
    "tanh_act": (A.tanh, normal),
    "softmax": (lambda x: A.softmax(x, 1), normal),
    "log_softmax": (lambda x: A.log_softmax(x, 0), normal),
    "softmin": (lambda x: A.softmin(x, 1), normal),
    "quiet_softmax": (lambda x: A.quiet_softmax(x, 1), normal),
    "reuse": (lambda x: x * x + x.exp() * x, normal),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_grad(name: str, ad_backend: pyrite.Backend) -> None:
    fn, make = UNARY[name]
    check_grad(fn, [make(3, 4)], ad_backend)


def test_zero_gradient_ops(ad_backend: pyrite.Backend) -> None:
    x = pyrite.tensor([[0.3, -1.7], [2.5, 0.1]], device=ad_backend).require_grad()
    loss = (x.floor() + x.ceil() + x.round() + x.sign()).sum() + (x * 0.0).sum()
    grads = loss.backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), np.zeros((2, 2)))


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max_pair": lambda a, b: a.max_pair(b),
    "min_pair": lambda a, b: a.min_pair(b),
    "powf": lambda a, b: a.abs().powf(b),
    "rem": lambda a, b: a.abs() % b.abs(),
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
          ((1,), (2, 3))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_grad_broadcast(name: str, shapes: tuple, ad_backend: pyrite.Backend) -> None:
    a, b = away_from_zero(*shapes[0]), away_from_zero(*shapes[1])
    if name == "rem":  # keep away from the jumps of a % b
        a, b = np.full(shapes[0], 1.3), rng.uniform(0.5, 0.6, size=shapes[1])
    check_grad(BINARY[name], [a, b], ad_backend)


def test_binary_grad_non_contiguous(ad_backend: pyrite.Backend) -> None:
    check_grad(lambda a, b: a.transpose() * b[:, ::2], [normal(4, 3), normal(3, 8)], ad_backend)


def test_mask_where_and_fill(ad_backend: pyrite.Backend) -> None:
    def fn(a: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
        return a.mask_where(a > 0.0, b).mask_fill(b < -0.5, 2.0)
    check_grad(fn, [away_from_zero(3, 4), normal(4)], ad_backend)


def test_cast_keeps_gradient(ad_backend: pyrite.Backend) -> None:
    x = pyrite.tensor([[0.5, -1.0, 2.0]], device=ad_backend).require_grad()
    wide = pyrite.DType.F64 if ad_backend.supports(pyrite.DType.F64) else x.dtype
    y = (x.cast(wide) * 3.0).cast(x.dtype)
    grad = x.grad(y.sum().backward())
    assert grad.dtype is x.dtype
    np.testing.assert_allclose(grad.numpy(), [[3.0, 3.0, 3.0]])
    assert x.int().float().is_require_grad() is False  # through Int: no gradient path


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_family_gradient_between_elementwise_ops(ad_backend, dim, log) -> None:
    """Producers, the softmax and a consumer (one kernel on fusion<webgpu>), differentiated."""
    rng = np.random.default_rng(11)

    def fn(x: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
        z = x * 1.5 + b
        return ((z.log_softmax(dim) if log else z.softmax(dim)) * 2.0).tanh()

    check_grad(fn, [rng.normal(size=(3, 4)), rng.normal(size=(1, 4))], ad_backend)
