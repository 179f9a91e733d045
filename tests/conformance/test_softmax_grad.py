"""softmax, log_softmax and softmax_grad (a backend's overrides, numpy's among them) against
numpy and against the composites of `base.py`, along every dim and over views."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.base import Backend

from .gradcheck import check_grad
from .helpers import F32, F64, LAYOUTS, make


def _np(backend: pyrite.Backend, prim: object) -> np.ndarray:
    return np.asarray(backend.to_data(prim).to_numpy(), dtype=np.float64)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_family_against_numpy_and_the_composites(backend, dim, layout):
    rng = np.random.default_rng(6)
    values = rng.normal(0.0, 4.0, (3, 5, 7))
    x = make(backend, values, F32, layout).into_primitive()
    shifted = values - values.max(axis=dim, keepdims=True)
    want = np.exp(shifted) / np.exp(shifted).sum(axis=dim, keepdims=True)
    np.testing.assert_allclose(_np(backend, backend.softmax(x, dim)), want, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(_np(backend, backend.log_softmax(x, dim)), np.log(want),
                               rtol=1e-5, atol=1e-5)
    out = backend.softmax(x, dim)
    g = make(backend, rng.normal(size=(3, 5, 7)), F32, layout).into_primitive()
    np.testing.assert_allclose(_np(backend, backend.softmax_grad(out, g, dim)),
                               _np(backend, Backend.softmax_grad(backend, out, g, dim)),
                               rtol=1e-5, atol=1e-6)


def test_softmax_of_float64_keeps_its_dtype(backend):
    x = pyrite.tensor(np.array([[1.0, 2.0, 3.0]]), device=backend, dtype=F64) \
        if backend.supports(F64) else pytest.skip("no f64")
    assert x.softmax(1).dtype is F64


@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_gradient_by_finite_differences(ad_backend, dim):
    rng = np.random.default_rng(7)
    check_grad(lambda x: x.softmax(dim) * x, [rng.normal(size=(3, 4))], ad_backend)
