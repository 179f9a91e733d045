"""One-operand elementwise ops against numpy: every float op on f32/f64/f16, the numeric ops
(abs, neg, sign) on every int dtype too, `not` on bools; each in three memory layouts and on a
single element."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyrite import tensor

from .helpers import (
    BOOL,
    F16,
    F32,
    F64,
    FLOATS,
    INTS,
    LAYOUTS,
    SIGNED,
    U8,
    assert_close,
    assert_equal,
    make,
    random_array,
    reference,
)

_erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> (numpy reference on float64, (low, high) of the random inputs)
FLOAT_OPS = {
    "exp": (np.exp, (-3.0, 3.0)),
    "log": (np.log, (0.1, 5.0)),
    "log1p": (np.log1p, (-0.9, 5.0)),
    "sqrt": (np.sqrt, (0.0, 5.0)),
    "sin": (np.sin, (-4.0, 4.0)),
    "cos": (np.cos, (-4.0, 4.0)),
    "tanh": (np.tanh, (-4.0, 4.0)),
    "erf": (_erf, (-3.0, 3.0)),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), (-6.0, 6.0)),
    "recip": (lambda x: 1.0 / x, (0.5, 3.0)),
    "floor": (np.floor, (-3.0, 3.0)),
    "ceil": (np.ceil, (-3.0, 3.0)),
    "round": (np.round, (-3.0, 3.0)),
    "abs": (np.abs, (-3.0, 3.0)),
    "neg": (np.negative, (-3.0, 3.0)),
    "sign": (np.sign, (-3.0, 3.0)),
}

#: WGSL's accuracy for sin and cos is an absolute error of 2^-11 (on [-pi, pi]), not ulps; the
#: browser's WebGPU (SwiftShader, hardware GPUs' fast paths) uses that room, lavapipe does not
WGSL_ABS_ERROR = {"sin": 2.0**-11, "cos": 2.0**-11}


def _atol(backend, name):
    return WGSL_ABS_ERROR.get(name) if "webgpu" in backend.name else None


def test_exp_example(backend):
    x = tensor([[0.0, 1.0], [2.0, 3.0]], device=backend)
    assert_close(x.exp(), np.exp([[0.0, 1.0], [2.0, 3.0]]), dtype=F32)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(FLOAT_OPS))
def test_float_op(backend, name, dtype, layout):
    fn, (low, high) = FLOAT_OPS[name]
    values = random_array((3, 4, 5), dtype, seed=len(name), low=low, high=high)
    if name == "recip":  # both signs, away from 0
        sign = np.where(random_array((3, 4, 5), BOOL, seed=1), 1, -1)
        values = (values * sign).astype(values.dtype)
    x = make(backend, values, dtype, layout)
    assert_close(getattr(x, name)(), fn(reference(values)), dtype=dtype,
                 atol=_atol(backend, name))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(FLOAT_OPS))
def test_float_op_single_element(backend, name, dtype):
    fn, (low, high) = FLOAT_OPS[name]
    value = (low + high) / 2 + 0.3
    x = make(backend, [value], dtype)
    assert_close(getattr(x, name)(), fn(reference(np.array([value], dtype.np_name))), dtype=dtype,
                 atol=_atol(backend, name))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_round_half_to_even(backend, dtype):
    x = make(backend, [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], dtype)
    assert_close(x.round(), [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0], dtype=dtype)


def test_floor_ceil_of_negatives(backend):
    x = tensor([-1.5, -1.0, -0.2, 0.0, 0.2, 1.0, 1.5], device=backend)
    assert_close(x.floor(), [-2.0, -1.0, -1.0, 0.0, 0.0, 1.0, 1.0])
    assert_close(x.ceil(), [-1.0, -1.0, -0.0, 0.0, 1.0, 1.0, 2.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy warns on log(0), sqrt(-1), 1/0
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_special_values(backend, dtype):
    x = make(backend, [0.0, -1.0, math.inf, -math.inf, math.nan], dtype)
    assert_close(x.log(), [-math.inf, math.nan, math.inf, math.nan, math.nan])
    assert_close(x.sqrt(), [0.0, math.nan, math.inf, math.nan, math.nan])
    assert_close(x.exp(), [1.0, math.exp(-1.0), math.inf, 0.0, math.nan])
    assert_close(x.recip(), [math.inf, -1.0, 0.0, -0.0, math.nan])
    assert_close(x.sigmoid(), [0.5, 1 / (1 + math.e), 1.0, 0.0, math.nan])
    assert_close(x.tanh(), [0.0, math.tanh(-1.0), 1.0, -1.0, math.nan])
    assert_close(x.is_nan(), [False, False, False, False, True])


def test_extreme_inputs_stay_finite(backend):
    # sigmoid and tanh saturate rather than overflow for large |x|
    x = tensor([-100.0, -30.0, 30.0, 100.0], device=backend)
    assert_close(x.sigmoid(), 1.0 / (1.0 + np.exp(-np.array([-100.0, -30.0, 30.0, 100.0]))))
    assert_close(x.tanh(), [-1.0, -1.0, 1.0, 1.0])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_int_abs_sign(backend, dtype, layout):
    values = random_array((3, 4, 5), dtype, seed=3, low=-50, high=50)
    x = make(backend, values, dtype, layout)
    assert_equal(x.abs(), np.abs(values), dtype=dtype)
    assert_equal(abs(x), np.abs(values), dtype=dtype)
    assert_equal(x.sign(), np.sign(values), dtype=dtype)


@pytest.mark.parametrize("dtype", SIGNED, ids=str)
def test_int_neg(backend, dtype):
    x = make(backend, [[-3, 0], [7, -128 if dtype.itemsize > 1 else -127]], dtype)
    want = -np.array([[-3, 0], [7, -128 if dtype.itemsize > 1 else -127]], dtype.np_name)
    assert_equal(x.neg(), want, dtype=dtype)
    assert_equal(-x, want, dtype=dtype)


def test_u8_neg_wraps_like_numpy(backend):
    x = make(backend, [0, 1, 200], U8)
    assert_equal(-x, np.array([0, 255, 56], np.uint8), dtype=U8)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_operators_match_methods(backend, dtype):
    values = random_array((4, 3), dtype, seed=5)
    x = make(backend, values, dtype, "permuted")
    assert_close(-x, -reference(values), dtype=dtype)
    assert_close(abs(x), np.abs(reference(values)), dtype=dtype)
    assert (+x) is x


def test_sign_of_zero(backend):
    x = tensor([-2.0, -0.0, 0.0, 3.0], device=backend)
    assert_close(x.sign(), [-1.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bool_not(backend, layout):
    values = random_array((3, 4), BOOL, seed=2)
    x = make(backend, values, BOOL, layout)
    assert_equal(x.bool_not(), ~values, dtype=BOOL)
    assert_equal(~x, ~values, dtype=BOOL)


def test_not_example(backend):
    x = tensor([True, False, True], device=backend)
    assert x.bool_not().to_list() == [False, True, False]


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_is_nan(backend, dtype):
    values = [1.0, math.nan, -2.0] if dtype.is_float else [1, 0, -2 if dtype is not U8 else 2]
    x = make(backend, values, dtype)
    assert_equal(x.is_nan(), [False, dtype.is_float, False], dtype=BOOL)
    assert x.contains_nan().to_list() == [dtype.is_float]


def test_f16_keeps_its_dtype(backend):
    x = make(backend, [0.5, 1.5], F16)
    assert x.exp().dtype is F16
    assert x.sqrt().dtype is F16


def test_f64_is_not_rounded_to_f32(backend):
    x = make(backend, [1e-10], F64)
    assert_close(x.log1p(), [math.log1p(1e-10)], dtype=F64, rtol=1e-14)
