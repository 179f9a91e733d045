"""layer_norm and layer_norm_grad (a backend's overrides, numpy's among them) against the
composites of `norm_ops.py`, and the Autodiff rule against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.norm_ops import NormOps
from pyrite.module import Param
from pyrite.nn.norm import LayerNorm

from .gradcheck import check_grad
from .helpers import LAYOUTS, make

SHAPES = [(3, 5), (2, 3, 7), (1, 1), (4, 2, 3, 16)]


def _np(backend: pyrite.Backend, prim: object) -> np.ndarray:
    return np.asarray(backend.to_data(prim).to_numpy(), dtype=np.float64)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_layer_norm_and_its_gradient_agree_with_the_composites(backend, shape, layout):
    rng = np.random.default_rng(4)
    x = make(backend, rng.normal(2.0, 3.0, shape), pyrite.DType.F32, layout).into_primitive()
    d = shape[-1]
    gamma = pyrite.tensor(rng.normal(size=d).astype(np.float32), device=backend).into_primitive()
    beta = pyrite.tensor(rng.normal(size=d).astype(np.float32), device=backend).into_primitive()
    g = pyrite.tensor(rng.normal(size=shape).astype(np.float32), device=backend).into_primitive()
    np.testing.assert_allclose(_np(backend, backend.layer_norm(x, gamma, beta, 1e-5)),
                               _np(backend, NormOps.layer_norm(backend, x, gamma, beta, 1e-5)),
                               rtol=1e-4, atol=1e-4)
    got = backend.layer_norm_grad(x, gamma, g, 1e-5)
    want = NormOps.layer_norm_grad(backend, x, gamma, g, 1e-5)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(_np(backend, a), _np(backend, b), rtol=1e-4, atol=1e-4)


def test_layer_norm_forward_matches_numpy(backend):
    x = np.array([[1.0, 2.0, 4.0], [-3.0, 0.0, 3.0]])
    gamma, beta = np.array([1.0, 2.0, 0.5]), np.array([0.0, 1.0, -1.0])
    norm = LayerNorm(Param(pyrite.tensor(gamma, device=backend)),
                     Param(pyrite.tensor(beta, device=backend)))
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(norm(pyrite.tensor(x, device=backend)).numpy(),
                               want * gamma + beta, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5)], ids=str)
def test_layer_norm_gradients_by_finite_differences(ad_backend, shape):
    rng = np.random.default_rng(5)

    def fn(x, gamma, beta):  # type: ignore[no-untyped-def]
        # the module op LayerNorm calls (a Param would start a graph of its own)
        return x._new(x.device.layer_norm(x.into_primitive(), gamma.into_primitive(),
                                          beta.into_primitive(), 1e-3))
    check_grad(fn, [rng.normal(size=shape), rng.normal(size=shape[-1]),
                    rng.normal(size=shape[-1])], ad_backend)
