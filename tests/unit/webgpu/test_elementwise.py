"""Elementwise kernels generated from the registry, against the numpy backend's entries."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend import REGISTRY, get
from pyrite.dtype import DType, Kind

RNG = np.random.default_rng(0)
POSITIVE = {"log", "log1p", "sqrt", "recip"}
UNARY = [op for op in REGISTRY.values() if op.arity == 1]
BINARY = [op for op in REGISTRY.values() if op.arity == 2]


def _input(kind: Kind, shape: tuple[int, ...], positive: bool = False) -> np.ndarray:
    if kind is Kind.FLOAT:
        x = RNG.uniform(0.1 if positive else -3.0, 3.0, shape)
        return x.astype(np.float32)
    if kind is Kind.INT:
        x = RNG.integers(1 if positive else -7, 8, shape)
        return x.astype(np.int32)
    return RNG.random(shape) < 0.5


def _nonzero(b: np.ndarray) -> np.ndarray:
    return np.where(b == 0, 3, b).astype(b.dtype)


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_unary_matches_numpy(gpu, ref, up, down, op):
    for kind in sorted(op.kinds, key=lambda k: k.value):
        x = _input(kind, (3, 5), op.name in POSITIVE)
        got = down(gpu.unary(op, up(x)))
        want = ref.unary(op, x)
        assert got.dtype == want.dtype, (op, kind)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"{op} {kind}")


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_binary_broadcasts_like_numpy(gpu, ref, up, down, op):
    for kind in sorted(op.kinds, key=lambda k: k.value):
        a = _input(kind, (4, 1, 3), op.name == "pow")
        b = _input(kind, (1, 2, 3))
        if op.name in ("div", "rem"):
            b = _nonzero(b)
        if op.name == "pow":
            b = np.abs(b) if kind is Kind.INT else b
        got = down(gpu.binary(op, up(a), up(b)))
        want = ref.binary(op, a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{op} {kind}")


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_binary_with_scalar(gpu, ref, up, down, op):
    for kind in sorted(op.kinds, key=lambda k: k.value):
        a = _input(kind, (2, 3), op.name == "pow")
        scalar = {Kind.FLOAT: 1.5, Kind.INT: 3, Kind.BOOL: True}[kind]
        got = down(gpu.binary(op, up(a), scalar))
        want = ref.binary(op, a, scalar)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{op} {kind}")


def test_integer_division_floors_like_numpy(gpu, up, down):
    a = np.array([7, -7, 7, -7, 0, 6], np.int32)
    b = np.array([2, 2, -2, -2, 3, -3], np.int32)
    assert down(gpu.binary(get("div"), up(a), up(b))).tolist() == (a // b).tolist()
    assert down(gpu.binary(get("rem"), up(a), up(b))).tolist() == (a % b).tolist()


def test_non_contiguous_inputs(gpu, up, down):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = gpu.permute(up(a), (2, 0, 1))
    x = gpu.slice(x, [(1, 4, 2), (0, 2, 1), (0, 3, 2)])
    x = gpu.flip(x, (2,))
    want = np.flip(a.transpose(2, 0, 1)[1:4:2, 0:2, 0:3:2], 2)
    np.testing.assert_array_equal(down(gpu.unary(get("neg"), x)), -want)
    np.testing.assert_array_equal(down(x), want)


def test_where_broadcasts(gpu, up, down):
    mask = np.array([[True], [False]])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((1, 3), -1.0, np.float32)
    got = down(gpu.where(up(mask), up(a), up(b)))
    np.testing.assert_array_equal(got, np.where(mask, a, b))


@pytest.mark.parametrize("src", [DType.F32, DType.I32, DType.BOOL], ids=str)
@pytest.mark.parametrize("dst", [DType.F32, DType.I32, DType.BOOL], ids=str)
def test_cast(gpu, up, down, src, dst):
    x = np.array([-2.7, -1.0, 0.0, 0.5, 3.9], np.float32).astype(src.np_name)
    got = down(gpu.cast(up(x), dst))
    assert got.dtype == np.dtype(dst.np_name)
    np.testing.assert_array_equal(got, x.astype(dst.np_name))


def test_full_and_arange(gpu, down):
    np.testing.assert_array_equal(down(gpu.full((2, 3), 2.5, DType.F32)), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(down(gpu.full((3,), True, DType.BOOL)), [True] * 3)
    np.testing.assert_array_equal(down(gpu.full((2,), -4, DType.I32)), [-4, -4])
    np.testing.assert_array_equal(down(gpu.arange(-3, 9, 4, DType.I32)), np.arange(-3, 9, 4))
    np.testing.assert_array_equal(down(gpu.arange(0, 3, 1, DType.F32)), [0.0, 1.0, 2.0])


def test_special_floats(gpu, up, down):
    x = np.array([np.inf, -np.inf, np.nan, 0.0], np.float32)
    got = down(gpu.binary(get("add"), up(x), 1.0))
    np.testing.assert_array_equal(got, x + 1.0)


def test_is_nan(gpu, up, down):
    x = np.array([np.inf, -np.inf, np.nan, 0.0], np.float32)
    np.testing.assert_array_equal(down(gpu.unary(get("is_nan"), up(x))), np.isnan(x))


def test_large_tensor_uses_a_2d_grid(gpu, up, down):
    n = 65535 * 256 + 1000  # more workgroups than one grid dimension holds
    x = gpu.arange(0, n, 1, DType.I32)
    y = down(gpu.binary(get("mul"), x, 2))
    assert y[-1] == 2 * (n - 1) and y[12345] == 24690
