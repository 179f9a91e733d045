"""Two-operand elementwise ops against numpy: arithmetic, comparisons and logic, with
broadcasting, Python scalars on either side, dtype promotion, memory layouts and every dtype.

numpy is the reference: integer division floors and the remainder takes the divisor's sign."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from pyrite import tensor

from .helpers import (
    BOOL,
    F16,
    F32,
    F64,
    FLOATS,
    I8,
    I16,
    I32,
    I64,
    INTS,
    LAYOUTS,
    NUMERIC,
    U8,
    assert_close,
    assert_equal,
    make,
    random_array,
    reference,
)

# name -> (method name, float64 reference)
ARITH = {
    "add": (np.add, (-3.0, 3.0)),
    "sub": (np.subtract, (-3.0, 3.0)),
    "mul": (np.multiply, (-3.0, 3.0)),
    "div": (np.true_divide, (0.5, 3.0)),
    "rem": (np.mod, (0.5, 3.0)),
    "powf": (np.power, (0.5, 2.0)),
    "max_pair": (np.maximum, (-3.0, 3.0)),
    "min_pair": (np.minimum, (-3.0, 3.0)),
}
# integer references run in the operands' own dtype, exactly as numpy computes them
INT_ARITH = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.floor_divide,
    "rem": np.mod, "max_pair": np.maximum, "min_pair": np.minimum,
}
COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "lower": np.less, "lower_equal": np.less_equal,
}
# (lhs shape, rhs shape): same shape, trailing broadcast, both sides broadcast, lower rank,
# a single element against a matrix
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1, 5), (4, 1)), ((2, 3, 4), (3, 1)),
          ((1,), (2, 3)), ((1,), (1,))]


def _signed_nonzero(values: np.ndarray, seed: int) -> np.ndarray:
    """The same magnitudes with random signs (divisors stay away from 0)."""
    sign = np.where(random_array(values.shape, BOOL, seed=seed), 1, -1)
    return (values * sign).astype(values.dtype)


# ---- examples ----------------------------------------------------------------------------------

def test_add_example(backend):
    a = tensor([[1.0, 2.0], [3.0, 4.0]], device=backend)
    b = tensor([10.0, 20.0], device=backend)
    assert_close(a + b, [[11.0, 22.0], [13.0, 24.0]], dtype=F32)


def test_int_division_floors_and_remainder_takes_divisor_sign(backend):
    a = tensor([7, -7, 7, -7, 6], device=backend)
    b = tensor([2, 2, -2, -2, 3], device=backend)
    assert (a / b).to_list() == [3, -4, -4, 3, 2]
    assert a.div(b).to_list() == [3, -4, -4, 3, 2]
    assert (a // b).to_list() == [3, -4, -4, 3, 2]
    assert (a % b).to_list() == [1, 1, -1, -1, 0]
    assert a.rem(b).to_list() == [1, 1, -1, -1, 0]


def test_float_remainder_takes_divisor_sign(backend):
    a = tensor([-7.5, 7.5, -7.5, 7.5], device=backend)
    b = tensor([2.0, 2.0, -2.0, -2.0], device=backend)
    assert_close(a % b, np.mod([-7.5, 7.5, -7.5, 7.5], [2.0, 2.0, -2.0, -2.0]))
    assert_close(a // b, np.floor_divide([-7.5, 7.5, -7.5, 7.5], [2.0, 2.0, -2.0, -2.0]))


def test_pow_of_negative_base(backend):
    # an integral exponent gives a signed result; a fractional one NaN
    a = tensor([-2.0, -2.0, 2.0, 0.0], device=backend)
    assert_close(a.powf(tensor([3.0, 2.0, -1.0, 0.0], device=backend)), [-8.0, 4.0, 0.5, 1.0])
    assert_close(a.powi_scalar(3), [-8.0, -8.0, 8.0, 0.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy warns on a fractional power of < 0
def test_pow_of_negative_base_fractional_exponent_is_nan(backend):
    a = tensor([-2.0, 4.0], device=backend)
    assert_close(a.powf_scalar(0.5), [np.nan, 2.0])


# ---- arithmetic: floats ------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(ARITH))
def test_float_arith_broadcast(backend, name, dtype, shapes):
    fn, (low, high) = ARITH[name]
    a = random_array(shapes[0], dtype, seed=1, low=low, high=high)
    b = random_array(shapes[1], dtype, seed=2, low=low, high=high)
    if name in ("div", "rem"):
        a, b = _signed_nonzero(a, 3), _signed_nonzero(b, 4)
    out = getattr(make(backend, a, dtype), name)(make(backend, b, dtype))
    assert_close(out, fn(reference(a), reference(b)), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(ARITH))
def test_float_arith_layouts(backend, name, dtype, layout):
    fn, (low, high) = ARITH[name]
    a = random_array((3, 4, 5), dtype, seed=5, low=low, high=high)
    b = random_array((3, 4, 5), dtype, seed=6, low=low, high=high)
    out = getattr(make(backend, a, dtype, layout), name)(make(backend, b, dtype, "permuted"))
    assert_close(out, fn(reference(a), reference(b)), dtype=dtype)


OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
             "div": operator.truediv, "rem": operator.mod, "powf": operator.pow}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(OPERATORS))
def test_float_scalar_both_sides(backend, name, dtype):
    fn = ARITH[name][0]
    op = OPERATORS[name]
    a = random_array((2, 3), dtype, seed=7, low=0.5, high=2.0)
    x = make(backend, a, dtype, "sliced")
    assert_close(op(x, 1.5), fn(reference(a), 1.5), dtype=dtype)
    assert_close(op(1.5, x), fn(1.5, reference(a)), dtype=dtype)
    assert_close(op(x, 2), fn(reference(a), 2.0), dtype=dtype)  # an int scalar widens
    assert_close(getattr(x, name)(1.5), fn(reference(a), 1.5), dtype=dtype)


def test_scalar_method_aliases(backend):
    x = tensor([1.0, 2.0, 4.0], device=backend)
    assert_close(x.add_scalar(1), [2.0, 3.0, 5.0])
    assert_close(x.sub_scalar(1), [0.0, 1.0, 3.0])
    assert_close(x.mul_scalar(3), [3.0, 6.0, 12.0])
    assert_close(x.div_scalar(2), [0.5, 1.0, 2.0])
    assert_close(x.rem_scalar(3), [1.0, 2.0, 1.0])
    assert_close(x.powf_scalar(0.5), [1.0, 2.0 ** 0.5, 2.0])
    assert_close(x.powi(tensor([2.0, 2.0, 2.0], device=backend)), [1.0, 4.0, 16.0])
    assert_close(x.powi_scalar(2), [1.0, 4.0, 16.0])


# ---- arithmetic: ints --------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", SHAPES[:4], ids=str)
@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("name", list(INT_ARITH))
def test_int_arith_broadcast(backend, name, dtype, shapes):
    fn = INT_ARITH[name]
    low = 0 if dtype is U8 else -10
    a = random_array(shapes[0], dtype, seed=8, low=low, high=11)
    b = random_array(shapes[1], dtype, seed=9, low=1, high=6)
    if name in ("div", "rem") and dtype is not U8:
        b = _signed_nonzero(b, 10)
    if name == "sub" and dtype is U8:
        a, b = np.maximum(a, b), np.minimum(a, b)
    out = getattr(make(backend, a, dtype), name)(make(backend, b, dtype))
    assert_equal(out, fn(a, b), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_int_arith_layouts(backend, dtype, layout):
    a = random_array((3, 4, 5), dtype, seed=11, low=0, high=11)
    b = random_array((3, 4, 5), dtype, seed=12, low=1, high=5)
    x, y = make(backend, a, dtype, layout), make(backend, b, dtype, "permuted")
    assert_equal(x + y, a + b, dtype=dtype)
    assert_equal(x * y, a * b, dtype=dtype)
    assert_equal(x / y, a // b, dtype=dtype)
    assert_equal(x % y, a % b, dtype=dtype)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_int_scalars(backend, dtype):
    a = np.array([[1, 5, 9], [12, 7, 3]], dtype.np_name)
    x = make(backend, a, dtype)
    assert_equal(x + 3, a + 3, dtype=dtype)
    assert_equal(x - 1, a - 1, dtype=dtype)
    assert_equal(20 - x, 20 - a, dtype=dtype)
    assert_equal(x * 2, a * 2, dtype=dtype)
    assert_equal(3 * x, 3 * a, dtype=dtype)
    assert_equal(x / 4, a // 4, dtype=dtype)
    assert_equal(x % 4, a % 4, dtype=dtype)
    assert_equal(30 % x, 30 % a, dtype=dtype)
    assert_equal(x ** 2, a ** 2, dtype=dtype)
    assert_equal(x.powi_scalar(2), a ** 2, dtype=dtype)
    assert_equal(x + 2.0, a + 2, dtype=dtype)  # an integral float is accepted


def test_floor_division_operator(backend):
    a = np.array([7.5, -7.5, 3.0])
    x = tensor(a, device=backend)
    assert_close(x // 2.0, a // 2.0)
    assert_close(10.0 // x, 10.0 // a)
    i = tensor([7, -7, 3], device=backend)
    assert (i // 2).to_list() == [3, -4, 1]
    assert (10 // i).to_list() == [1, -2, 3]


def test_inputs_are_unchanged_and_may_be_shared(backend):
    # an op reading the same tensor twice, or a tensor another op also reads, is still correct
    # (a backend that reuses uniquely owned buffers must not reuse these)
    a = np.array([[1.0, -2.0], [3.0, 0.5]])
    x = tensor(a, device=backend)
    y = x
    assert_close(x * x, a * a)
    assert_close(x + y, a + a)
    assert_close((x - 1.0).exp() + x, np.exp(a - 1.0) + a)
    assert_close(x.reshape([4]) * x.reshape([4]).flip([0]), a.reshape(4) * a.reshape(4)[::-1])
    assert_close(x, a)


@pytest.mark.parametrize("dtype", [I8, U8], ids=str)
def test_small_int_overflow_wraps_like_numpy(backend, dtype):
    a = np.array([100, 120], dtype.np_name)
    x = make(backend, a, dtype)
    assert_equal(x + x, a + a, dtype=dtype)


# ---- promotion ---------------------------------------------------------------------------------

@pytest.mark.parametrize("lhs, rhs, out", [(F32, F64, F64), (F16, F32, F32), (F16, F64, F64),
                                           (I32, I64, I64), (I8, I16, I16), (U8, I8, I8),
                                           (I16, I32, I32)], ids=str)
def test_mixed_dtypes_promote_to_the_wider(backend, lhs, rhs, out):
    a = make(backend, [1, 2, 3], lhs)
    b = make(backend, [4, 5, 6], rhs)
    assert_equal(a + b, np.array([5, 7, 9]), dtype=out)
    assert_equal(b + a, np.array([5, 7, 9]), dtype=out)
    assert_equal(a < b, [True, True, True], dtype=BOOL)


# ---- clamp -------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_clamp(backend, dtype, layout):
    a = random_array((4, 6), dtype, seed=13, low=0 if dtype is U8 else -10, high=11)
    x = make(backend, a, dtype, layout)
    lo, hi = (2, 7)
    assert_close(x.clamp(lo, hi), np.clip(a, lo, hi), dtype=dtype)
    assert_close(x.clamp_min(lo), np.maximum(a, lo), dtype=dtype)
    assert_close(x.clamp_max(hi), np.minimum(a, hi), dtype=dtype)


def test_clamp_example(backend):
    x = tensor([-2.0, 0.5, 3.0], device=backend)
    assert_close(x.clamp(-1.0, 1.0), [-1.0, 0.5, 1.0])


# ---- comparisons -------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("name", list(COMPARE))
def test_compare_broadcast(backend, name, dtype, shapes):
    # few distinct values so that ties (equal, lower_equal) actually occur
    a = random_array(shapes[0], dtype, seed=14, low=0, high=3).round().astype(dtype.np_name)
    b = random_array(shapes[1], dtype, seed=15, low=0, high=3).round().astype(dtype.np_name)
    out = getattr(make(backend, a, dtype), name)(make(backend, b, dtype))
    assert_equal(out, COMPARE[name](a, b), dtype=BOOL)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [F32, I32], ids=str)
def test_compare_operators_and_elem(backend, dtype, layout):
    a = random_array((3, 4), dtype, seed=16, low=0, high=4).round().astype(dtype.np_name)
    x = make(backend, a, dtype, layout)
    y = make(backend, a[::-1].copy(), dtype)
    b = a[::-1]
    assert_equal(x == y, a == b)
    assert_equal(x != y, a != b)
    assert_equal(x < y, a < b)
    assert_equal(x <= y, a <= b)
    assert_equal(x > y, a > b)
    assert_equal(x >= y, a >= b)
    assert_equal(x.equal_elem(2), a == 2)
    assert_equal(x.not_equal_elem(2), a != 2)
    assert_equal(x.greater_elem(2), a > 2)
    assert_equal(x.greater_equal_elem(2), a >= 2)
    assert_equal(x.lower_elem(2), a < 2)
    assert_equal(x.lower_equal_elem(2), a <= 2)
    assert_equal(x == 2, a == 2)
    assert_equal(2 < x, 2 < a)  # reflected: Python calls x > 2


def test_compare_bool_tensors(backend):
    a = tensor([True, True, False, False], device=backend)
    b = tensor([True, False, True, False], device=backend)
    assert a.equal(b).to_list() == [True, False, False, True]
    assert a.not_equal(b).to_list() == [False, True, True, False]
    assert (a == True).to_list() == [True, True, False, False]  # noqa: E712 - a tensor op


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_compare_nan_is_never_equal(backend):
    a = tensor([np.nan, 1.0], device=backend)
    assert (a == a).to_list() == [False, True]
    assert (a != a).to_list() == [True, False]
    assert (a < 2.0).to_list() == [False, True]


# ---- logic -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_logic_broadcast(backend, shapes):
    a = random_array(shapes[0], BOOL, seed=17)
    b = random_array(shapes[1], BOOL, seed=18)
    x, y = make(backend, a, BOOL), make(backend, b, BOOL)
    assert_equal(x.bool_and(y), a & b, dtype=BOOL)
    assert_equal(x.bool_or(y), a | b, dtype=BOOL)
    assert_equal(x.bool_xor(y), a ^ b, dtype=BOOL)
    assert_equal(x & y, a & b)
    assert_equal(x | y, a | b)
    assert_equal(x ^ y, a ^ b)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_logic_layouts_and_scalars(backend, layout):
    a = random_array((3, 4), BOOL, seed=19)
    x = make(backend, a, BOOL, layout)
    y = make(backend, a.T.copy(), BOOL, "permuted").transpose()
    assert_equal(x & y, a & a)
    assert_equal(x ^ y, np.zeros_like(a))
    assert_equal(x | True, np.ones_like(a))
    assert_equal(x & False, np.zeros_like(a))


def test_logic_truth_table(backend):
    a = tensor([True, True, False, False], device=backend)
    b = tensor([True, False, True, False], device=backend)
    assert (a & b).to_list() == [True, False, False, False]
    assert (a | b).to_list() == [True, True, True, False]
    assert (a ^ b).to_list() == [False, True, True, False]


# ---- is_close / all_close ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_is_close(backend, dtype):
    a = np.array([1.0, 1.0, 1.0, 100.0, 0.0])
    b = np.array([1.0, 1.0 + 1e-6, 1.1, 100.001, 1e-9])
    x, y = make(backend, a, dtype), make(backend, b, dtype)
    want = np.isclose(a.astype(dtype.np_name), b.astype(dtype.np_name), rtol=1e-5, atol=1e-8)
    assert_equal(x.is_close(y, atol=1e-8, rtol=1e-5), want, dtype=BOOL)
    assert x.all_close(x) is True
    assert x.all_close(y) is False
    assert x.all_close(y, atol=0.2) is True


def test_is_close_int(backend):
    x = tensor([1, 2, 3], device=backend)
    y = tensor([1, 3, 3], device=backend)
    assert x.is_close(y).to_list() == [True, False, True]
