"""The numpy backend's BLAS products do not report BLAS's "invalid" flag (numpy_blas.py): a
product that raises it on finite values, as OpenBLAS's SkylakeX kernels did in a CI run, must
not become a warning (the test suite makes warnings errors), on every path that calls BLAS."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyrite.backend.numpy import NumpyBackend
from pyrite.backend.numpy_blas import product


class _FlaggingNumpy:
    """numpy, but every matmul raises the floating-point "invalid" flag as it computes."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def matmul(a: Any, b: Any, out: Any = None) -> Any:
        np.subtract(np.float32(np.inf), np.float32(np.inf))  # sets "invalid"
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


def test_the_fake_raises_the_flag_outside_product() -> None:
    with pytest.warns(RuntimeWarning, match="invalid value"):
        _FlaggingNumpy.matmul(np.ones((2, 2)), np.ones((2, 2)))


def test_product_keeps_values_and_drops_the_flag() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    assert np.array_equal(product(_FlaggingNumpy(), a, b), a @ b)
    out = np.empty(2)
    product(_FlaggingNumpy(), a, b, out=out)
    assert np.array_equal(out, a @ b)


@pytest.fixture
def flagging() -> NumpyBackend:
    backend = NumpyBackend()
    backend.np = _FlaggingNumpy()
    return backend


def test_every_blas_path_of_the_backend_stays_quiet(flagging: NumpyBackend) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    gamma = rng.standard_normal(5).astype(np.float32)
    grad = rng.standard_normal((3, 5)).astype(np.float32)
    flagging.layer_norm(x, gamma, gamma, 1e-5)
    dx, dgamma, dbeta = flagging.layer_norm_grad(x, gamma, grad, 1e-5)
    assert np.isfinite(dx).all() and np.allclose(dbeta, grad.sum(axis=0), atol=1e-5)
    assert np.allclose(flagging.softmax(x, 1).sum(axis=1), 1.0, atol=1e-6)
    assert np.allclose(flagging.matmul(x, x.T), x @ x.T, atol=1e-5)
    img = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    conv = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    y = flagging.conv2d(img, w, None, *conv)
    flagging.conv2d_weight_grad(img, y, w.shape, *conv)
    flagging.conv2d_input_grad(y, w, img.shape, *conv)
