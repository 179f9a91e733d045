"""The numpy backend's vectorised erf against float64 `math.erf`, across the whole range."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite.backend import special

# dense near 0, the interval ends (0.46875, 4) and where erf reaches +-1, plus special values
_X = np.concatenate([np.linspace(-8.0, 8.0, 40001), np.geomspace(1e-30, 30.0, 2001),
                     -np.geomspace(1e-30, 30.0, 2001),
                     [0.0, -0.0, 0.46875, -0.46875, 4.0, -4.0, 26.6, 1e300, -1e300]])


def _exact(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) for v in x])


def test_erf_float64_within_a_few_ulp():
    got = special.erf(np, _X)
    want = _exact(_X)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_erf_float32_absolute_error_below_5e7(dtype):
    x = np.clip(_X, -60000.0, 60000.0).astype(dtype)
    got = special.erf(np, x)
    assert got.dtype == dtype
    want = _exact(x.astype(np.float64))
    # float16 output rounding alone is up to half an ulp of the result
    atol = 5e-7 if dtype == np.float32 else float(np.finfo(np.float16).eps)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=atol)
    # relative accuracy near 0 (an absolute bound says nothing there), above float16's
    # subnormals
    tiny = (np.abs(x) < 1e-3) & (np.abs(x) > 1e-4 if dtype == np.float16 else True)
    np.testing.assert_allclose(got[tiny].astype(np.float64), want[tiny], rtol=1e-6 if
                               dtype == np.float32 else 1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_odd_saturating_and_nan(dtype):
    x = np.array([np.inf, -np.inf, np.nan, 3.0, -3.0], dtype=dtype)
    got = special.erf(np, x)
    assert got[0] == 1.0 and got[1] == -1.0 and np.isnan(got[2])
    assert got[3] == -got[4]


def test_erf_through_the_tensor_api():
    x = pyrite.tensor([[-1.5, 0.25], [0.0, 2.0]], device="numpy")
    np.testing.assert_allclose(x.erf().to_data().to_numpy(),
                               _exact(np.array([-1.5, 0.25, 0.0, 2.0])).reshape(2, 2),
                               rtol=0, atol=5e-7)


def test_erf_of_an_empty_array():
    assert special.erf(np, np.zeros((0, 3), dtype=np.float32)).shape == (0, 3)


def _gelu_exact(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    phi = 0.5 * (1.0 + _exact(x / math.sqrt(2.0)))
    c = np.clip(x, -50.0, 50.0)  # the density is 0 beyond, and x * x would overflow
    return x * phi, phi + c * np.exp(-0.5 * c * c) / math.sqrt(2.0 * math.pi)


def test_gelu_and_its_derivative_float32_over_several_blocks():
    # more values than one block, given as a non-contiguous view, with huge values at the ends
    base = np.concatenate([np.linspace(-12.0, 12.0, 150001), [-3e38, 3e38, 0.0]])
    x = np.repeat(base.astype(np.float32), 2)[::2]
    assert not x.flags.c_contiguous and x.size > special._BLOCK
    value, slope = _gelu_exact(x.astype(np.float64))
    got = special.gelu(np, x)
    assert got.dtype == np.float32
    # 1 + erf cancels for negative x: Phi's absolute error (erf's, 5e-7 / 2) times |x|
    np.testing.assert_allclose(got, value, rtol=1e-6, atol=2e-6)
    np.testing.assert_allclose(special.gelu_grad(np, x), slope, rtol=0, atol=1e-6)


def test_gelu_and_its_derivative_float64():
    x = np.concatenate([np.linspace(-40.0, 40.0, 8001), [-1e300, 1e300]])
    value, slope = _gelu_exact(x)
    np.testing.assert_allclose(special.gelu(np, x), value, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(special.gelu_grad(np, x), slope, rtol=1e-14, atol=1e-15)
