"""Shared helpers of the conformance suite: dtype lists, inputs in several memory layouts, and
`assert_close` with a tolerance per dtype. The gradient cases import them too.

Every case compares a pyrite result with a numpy reference computed in float64 from the *same*
input values (rounded to the input's dtype first), so the only difference left is the
backend's own rounding, which the per-dtype tolerance allows for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite import DType, Tensor
from pyrite.dtype import dtype as to_dtype

F64, F32, F16 = DType.F64, DType.F32, DType.F16
I64, I32, I16, I8, U8 = DType.I64, DType.I32, DType.I16, DType.I8, DType.U8
BOOL = DType.BOOL

FLOATS = [F32, F64, F16]
INTS = [I64, I32, I16, I8, U8]
SIGNED = [I64, I32, I16, I8]
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + [BOOL]

#: (rtol, atol) of a float result, per dtype: a few ulps of the dtype plus what a GPU's
#: transcendental functions may add (f32 exp/tanh are a few ulps off on some drivers).
TOLERANCE: dict[DType, tuple[float, float]] = {
    F64: (1e-10, 1e-12),
    F32: (2e-5, 2e-6),
    F16: (1e-2, 2e-3),
}

#: The memory layouts an input is given in: one contiguous buffer, a permuted view and a strided
#: slice of a larger tensor. Backends that keep views (numpy, webgpu) must read all three alike.
LAYOUTS = ["contiguous", "permuted", "sliced"]


def need(backend: pyrite.Backend, *dtypes: DType) -> None:
    """Skip the case when the backend cannot hold one of `dtypes`."""
    for dt in dtypes:
        if not backend.supports(dt):
            pytest.skip(f"{backend.name} does not support {dt}")


def rng(seed: int = 0) -> np.random.Generator:
    """A fixed-seed generator: every run sees the same inputs."""
    return np.random.default_rng(seed)


def random_array(shape: tuple[int, ...], dtype: DType, *, seed: int = 0, low: float = -3.0,
                 high: float = 3.0) -> np.ndarray:
    """Random values of `dtype` in [low, high) (ints: low..high-1, clipped to the dtype's range;
    bools: half true)."""
    g = rng(seed)
    if dtype is BOOL:
        return g.random(shape) < 0.5
    if dtype.kind is pyrite.Int:
        lo, hi = dtype.bounds
        a, b = max(int(low), int(lo)), min(int(high), int(hi) + 1)
        return g.integers(a, b, shape).astype(dtype.np_name)
    return g.uniform(low, high, shape).astype(dtype.np_name)


def make(backend: pyrite.Backend, values: Any, dtype: DType | None = None,
         layout: str = "contiguous") -> Tensor:
    """A tensor holding `values` on `backend`, stored in the given layout.

    "permuted" stores the transposed values and permutes them back (strides reversed);
    "sliced" stores a twice-as-large tensor and takes every other entry along the last dim
    plus an offset along the first. Either way the tensor's values equal `values`.
    """
    arr = np.asarray(values)
    dt = dtype or to_dtype(arr.dtype)
    need(backend, dt)
    arr = arr.astype(dt.np_name)
    if layout == "contiguous" or arr.ndim == 0:
        return pyrite.tensor(arr, device=backend, dtype=dt)
    if layout == "permuted":
        axes = tuple(reversed(range(arr.ndim)))
        stored = pyrite.tensor(np.ascontiguousarray(arr.transpose(axes)), device=backend, dtype=dt)
        out = stored.permute(axes)
    elif layout == "sliced":
        big_shape = (arr.shape[0] + 1,) + arr.shape[1:-1] + (2 * arr.shape[-1],) \
            if arr.ndim > 1 else (2 * arr.shape[0] + 1,)
        big = np.zeros(big_shape, dtype=arr.dtype)
        if arr.ndim > 1:
            big[1:, ..., ::2] = arr
            ranges: list[Any] = [(1, big_shape[0])] + [None] * (arr.ndim - 2) + [slice(0, None, 2)]
        else:
            big[1::2] = arr
            ranges = [slice(1, None, 2)]
        out = pyrite.tensor(big, device=backend, dtype=dt).slice(ranges)
    else:
        raise ValueError(f"unknown layout {layout!r}")
    assert out.shape == arr.shape, (out.shape, arr.shape)
    return out


def reference(values: Any) -> np.ndarray:
    """Input values as float64 for a numpy reference (after rounding to the input dtype)."""
    return np.asarray(values, dtype=np.float64)


def to_numpy(t: Tensor) -> np.ndarray:
    return t.to_data().to_numpy()


def assert_close(actual: Tensor, expected: Any, *, dtype: DType | None = None,
                 rtol: float | None = None, atol: float | None = None,
                 shape: tuple[int, ...] | None = None) -> None:
    """`actual` equals `expected` in shape, dtype and values.

    Float results get the tolerance of their dtype (NaN matches NaN, infinities must match);
    Int and Bool results must be exact. `dtype` is the expected dtype (default: the dtype the
    result has, so only the values are compared); `shape` defaults to the expected array's.
    """
    assert isinstance(actual, Tensor), f"expected a Tensor, got {type(actual).__name__}"
    want = np.asarray(expected)
    got = to_numpy(actual)
    want_shape = shape if shape is not None else want.shape
    assert got.shape == tuple(want_shape), f"shape {got.shape}, expected {tuple(want_shape)}"
    if dtype is not None:
        assert actual.dtype is dtype, f"dtype {actual.dtype}, expected {dtype}"
    if actual.dtype.is_float:
        r, a = TOLERANCE[actual.dtype]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=r if rtol is None else rtol,
                                   atol=a if atol is None else atol, equal_nan=True)
    else:
        if actual.dtype is BOOL:
            want = want.astype(bool)
        np.testing.assert_array_equal(got, want)


def assert_equal(actual: Tensor, expected: Any, *, dtype: DType | None = None) -> None:
    """Exact comparison (values, shape, optionally dtype), for movement and integer results."""
    want = np.asarray(expected)
    got = to_numpy(actual)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    if dtype is not None:
        assert actual.dtype is dtype, f"dtype {actual.dtype}, expected {dtype}"
    np.testing.assert_array_equal(got, want)
