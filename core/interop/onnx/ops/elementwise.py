"""Elementwise operators: arithmetic, math functions, comparisons, logic, casts (the
activations are in activation.py).

Everything here is written with pyrite's tensor methods only (no numpy), so the same code runs
in a page. Functions without a tensor method of their own (atan, sinh, the bitwise family...)
are composed from ones that exist; see each helper for the identity it uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import reduce

from ....dtype import DType, Kind
from ....shape import broadcast_shapes
from ....tensor import Tensor
from ..registry import op
from ..runtime import storable
from ._util import Legacy, dtype_of, scalar, via_f32, wide_dtype


# ---- helpers --------------------------------------------------------------------------------
def _old_broadcast(a: Tensor, b: Tensor, broadcast: int, axis: int | None) -> Tensor:
    """b aligned for opset < 7's `broadcast` with `axis` (b's dims start at that axis of a)."""
    if not broadcast or axis is None:
        return b
    start = axis + a.ndim if axis < 0 else axis
    trailing = a.ndim - start - b.ndim
    return b.reshape(list(b.shape) + [1] * trailing) if trailing > 0 else b


def _is_signed(dt: DType) -> bool:
    """Whether dt is a signed integer type."""
    return dt.kind is Kind.INT and dt is not DType.U8


# ---- unary math -----------------------------------------------------------------------------
@op("Abs")
def abs_(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """|x|."""
    return x.abs()


@op("Neg")
def neg(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """-x."""
    return x.neg()


@op("Sign")
def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 per element."""
    return x.sign()


@op("Ceil")
def ceil(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """Round up."""
    return x.ceil()


@op("Floor")
def floor(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """Round down."""
    return x.floor()


@op("Round")
def round_(x: Tensor) -> Tensor:
    """Round half to even."""
    return x.round()


@op("Reciprocal")
def reciprocal(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """1 / x."""
    return x.recip()


@op("Sqrt")
def sqrt(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """Square root."""
    return x.sqrt()


@op("Exp")
def exp(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """e ** x."""
    return x.exp()


@op("Log")
def log(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """Natural logarithm."""
    return x.log()


@op("Erf")
def erf(x: Tensor) -> Tensor:
    """The error function."""
    return x.erf()


@op("Sin")
def sin(x: Tensor) -> Tensor:
    """Sine."""
    return x.sin()


@op("Cos")
def cos(x: Tensor) -> Tensor:
    """Cosine."""
    return x.cos()


@op("Tan")
@via_f32
def tan(x: Tensor) -> Tensor:
    """Tangent, as sin / cos."""
    return x.sin() / x.cos()


@op("Tanh")
def tanh(x: Tensor, *, consumed_inputs: Legacy = None) -> Tensor:
    """Hyperbolic tangent."""
    return x.tanh()


def _atan_unit(u: Tensor) -> Tensor:
    """atan(u) for 0 <= u <= 1: two half-angle steps, then a short odd series."""
    for _ in range(2):  # tan(a / 2) = u / (1 + sqrt(1 + u^2)): |t| <= tan(pi / 16)
        u = u / ((u * u + 1.0).sqrt() + 1.0)
    t2 = u * u
    series = reduce(lambda acc, k: acc * t2 + (-1.0) ** k / (2 * k + 1), range(7, -1, -1),
                    t2 * 0.0)
    return u * series * 4.0


def _atan(x: Tensor) -> Tensor:
    """atan(x): |x| > 1 goes through pi/2 - atan(1/|x|), the sign comes back at the end."""
    a = x.abs()
    big = a.greater(1.0)
    r = _atan_unit(a.mask_where(big, a.clamp_min(1.0).recip()))
    return r.mask_where(big, math.pi / 2 - r) * x.sign()


@op("Atan")
@via_f32
def atan(x: Tensor) -> Tensor:
    """Arctangent."""
    return _atan(x)


@op("Asin")
@via_f32
def asin(x: Tensor) -> Tensor:
    """Arcsine, as 2 atan(x / (1 + sqrt(1 - x^2)))."""
    return _atan(x / ((1.0 - x * x).sqrt() + 1.0)) * 2.0


@op("Acos")
@via_f32
def acos(x: Tensor) -> Tensor:
    """Arccosine: 2 atan(sqrt((1 - |x|) / (1 + |x|))), or pi minus that for a negative x."""
    a = x.abs()
    v = _atan(((1.0 - a) / (a + 1.0)).sqrt()) * 2.0
    return v.mask_where(x.lower(0.0), math.pi - v)


@op("Sinh")
@via_f32
def sinh(x: Tensor) -> Tensor:
    """Hyperbolic sine: 2t / (1 - t^2), t = tanh(x/2), near 0 (no cancellation), else exps."""
    t = (x.clamp(-1.0, 1.0) * 0.5).tanh()
    near = t * 2.0 / (1.0 - t * t)
    far = (x.exp() - x.neg().exp()) * 0.5
    return far.mask_where(x.abs().lower(1.0), near)


@op("Cosh")
@via_f32
def cosh(x: Tensor) -> Tensor:
    """Hyperbolic cosine."""
    return (x.exp() + x.neg().exp()) * 0.5


_HUGE = 1e8  # beyond it asinh(x) = acosh(x) = log(2x) to double precision


@op("Asinh")
@via_f32
def asinh(x: Tensor) -> Tensor:
    """Inverse hyperbolic sine: log1p(a + a^2 / (1 + sqrt(a^2 + 1))) with a = |x|, signed."""
    a = x.abs()
    c = a.clamp_max(_HUGE)
    near = (c + c * c / ((c * c + 1.0).sqrt() + 1.0)).log1p()
    return near.mask_where(a.greater(_HUGE), a.log() + math.log(2.0)) * x.sign()


@op("Acosh")
@via_f32
def acosh(x: Tensor) -> Tensor:
    """Inverse hyperbolic cosine: log1p((x - 1) + sqrt((x - 1)(x + 1))), NaN below 1."""
    c = x.clamp_max(_HUGE)
    near = ((c - 1.0) + ((c - 1.0) * (c + 1.0)).sqrt()).log1p()
    out = near.mask_where(x.greater(_HUGE), x.log() + math.log(2.0))
    return out.mask_fill(x.lower(1.0), math.nan)


@op("Atanh")
@via_f32
def atanh(x: Tensor) -> Tensor:
    """Inverse hyperbolic tangent, as (log1p(x) - log1p(-x)) / 2 (exact 1 +- x near +-1)."""
    return (x.log1p() - x.neg().log1p()) * 0.5


@op("IsNaN")
def is_nan(x: Tensor) -> Tensor:
    """True where x is NaN."""
    return x.is_nan()


@op("IsInf")
def is_inf(x: Tensor, *, detect_negative: int = 1, detect_positive: int = 1) -> Tensor:
    """True where x is an infinity of a sign the attributes ask for."""
    found = x.equal_elem(math.inf) if detect_positive else x.zeros_like().bool()
    if detect_negative:
        found = found.bool_or(x.equal_elem(-math.inf))
    return found


@op("Not")
def not_(x: Tensor) -> Tensor:
    """Logical not."""
    return x.bool_not()



# ---- binary arithmetic ----------------------------------------------------------------------
@op("Add")
def add(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None,
        consumed_inputs: Legacy = None) -> Tensor:
    """a + b."""
    return a + _old_broadcast(a, b, broadcast, axis)


@op("Sub")
def sub(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None,
        consumed_inputs: Legacy = None) -> Tensor:
    """a - b."""
    return a - _old_broadcast(a, b, broadcast, axis)


@op("Mul")
def mul(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None,
        consumed_inputs: Legacy = None) -> Tensor:
    """a * b."""
    return a * _old_broadcast(a, b, broadcast, axis)


def _floor_not_trunc(a: Tensor, b: Tensor) -> Tensor:
    """Where integer a / b rounds differently down and toward zero: inexact, signs differ."""
    return a.rem(b).not_equal_elem(0).bool_and(a.lower(0).bool_xor(b.lower(0)))


def _trunc_div(a: Tensor, b: Tensor) -> Tensor:
    """Integer a / b rounded toward zero: the floor quotient, plus 1 where they differ."""
    q = a.div(b)
    return q + _floor_not_trunc(a, b).cast(q.dtype) if _is_signed(a.dtype) else q


@op("Div")
def div(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None,
        consumed_inputs: Legacy = None) -> Tensor:
    """a / b; integers truncate toward zero."""
    b = _old_broadcast(a, b, broadcast, axis)
    return _trunc_div(a, b) if a.kind is Kind.INT else a / b


@op("Mod")
def mod(a: Tensor, b: Tensor, *, fmod: int = 0) -> Tensor:
    """Remainder: the divisor's sign (fmod=0) or the dividend's (fmod=1, C's fmod)."""
    if not fmod or a.dtype is DType.U8:
        return a.rem(b)
    if a.kind is Kind.FLOAT:
        return a.abs().rem(b.abs()) * a.sign()
    r = a.rem(b)
    return r.mask_where(_floor_not_trunc(a, b), r - b)


@op("Pow")
def pow_(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None) -> Tensor:
    """a ** b in a's type (the exponent may be of another type)."""
    b = _old_broadcast(a, b, broadcast, axis)
    if a.kind is Kind.INT and b.kind is Kind.FLOAT:
        wide = wide_dtype(a.device)
        return a.cast(wide).powf(b.cast(wide)).cast(a.dtype)
    return a.powf(b.cast(a.dtype))


def _pow2(n: Tensor, top: int) -> Tensor:
    """2 ** n for integers 0 <= n <= top, exactly (products of 2 ** 2 ** j per bit j of n; at
    the sign bit the product wraps, as a left shift does)."""
    out = n.ones_like()
    for j in range(top.bit_length()):
        bit = n.div(1 << j).rem(2)
        out = out * (bit * ((1 << (1 << j)) - 1) + 1)
    return out


@op("BitShift")
def bit_shift(x: Tensor, y: Tensor, *, direction: str) -> Tensor:
    """x shifted by y bits; a shift past the width leaves only the sign fill."""
    if direction not in ("LEFT", "RIGHT"):
        raise ValueError(f"BitShift direction {direction!r} is not LEFT or RIGHT")
    dt = x.dtype
    bits = dt.itemsize * 8
    right = direction == "RIGHT"
    limit = bits - 1 if right and _is_signed(dt) else bits  # shifts below it are computed
    y = y.cast(dt)
    power = _pow2(y.clamp(0, limit - 1), limit - 1)
    out = x.div(power) if right else x * power
    fill = x.lower(0).cast(dt).neg() if right and _is_signed(dt) else x.zeros_like()
    beyond = y.lower(0).bool_or(y.greater_equal(limit))
    return out.mask_where(beyond, fill)


def _bitwise(a: Tensor, b: Tensor, combine: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    """A bitwise op, one bit at a time (two's complement: the sign bit weighs -2^(n-1))."""
    dt = a.dtype
    b = b.cast(dt)
    bits = dt.itemsize * 8

    def term(k: int) -> Tensor:
        if k == bits - 1 and _is_signed(dt):
            return combine(a.lower(0).cast(dt), b.lower(0).cast(dt)) * -(1 << k)
        return combine(a.div(1 << k).rem(2), b.div(1 << k).rem(2)) * (1 << k)

    return reduce(Tensor.add, (term(k) for k in range(bits)))


@op("BitwiseAnd")
def bitwise_and(a: Tensor, b: Tensor) -> Tensor:
    """Bitwise and of integers."""
    return _bitwise(a, b, lambda p, q: p * q)


@op("BitwiseOr")
def bitwise_or(a: Tensor, b: Tensor) -> Tensor:
    """Bitwise or of integers."""
    return _bitwise(a, b, lambda p, q: p + q - p * q)


@op("BitwiseXor")
def bitwise_xor(a: Tensor, b: Tensor) -> Tensor:
    """Bitwise exclusive or of integers."""
    return _bitwise(a, b, lambda p, q: (p + q).rem(2))


@op("BitwiseNot")
def bitwise_not(x: Tensor) -> Tensor:
    """Every bit flipped: -x - 1 for signed types, max - x for unsigned."""
    return x.neg() - 1 if _is_signed(x.dtype) else int(x.dtype.bounds[1]) - x


# ---- comparisons and logic ------------------------------------------------------------------
@op("Equal")
def equal(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None) -> Tensor:
    """a == b."""
    return a.equal(_old_broadcast(a, b, broadcast, axis))


@op("Less")
def less(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None) -> Tensor:
    """a < b."""
    return a.lower(_old_broadcast(a, b, broadcast, axis))


@op("Greater")
def greater(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None) -> Tensor:
    """a > b."""
    return a.greater(_old_broadcast(a, b, broadcast, axis))


@op("LessOrEqual")
def less_or_equal(a: Tensor, b: Tensor) -> Tensor:
    """a <= b."""
    return a.lower_equal(b)


@op("GreaterOrEqual")
def greater_or_equal(a: Tensor, b: Tensor) -> Tensor:
    """a >= b."""
    return a.greater_equal(b)


@op("And")
def and_(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None) -> Tensor:
    """Logical and."""
    return a.bool_and(_old_broadcast(a, b, broadcast, axis))


@op("Or")
def or_(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None) -> Tensor:
    """Logical or."""
    return a.bool_or(_old_broadcast(a, b, broadcast, axis))


@op("Xor")
def xor(a: Tensor, b: Tensor, *, broadcast: int = 0, axis: int | None = None) -> Tensor:
    """Logical exclusive or."""
    return a.bool_xor(_old_broadcast(a, b, broadcast, axis))


# ---- variadic -------------------------------------------------------------------------------
@op("Max")
def max_(*xs: Tensor, consumed_inputs: Legacy = None) -> Tensor:
    """Elementwise maximum of all inputs (broadcast together)."""
    return reduce(Tensor.max_pair, xs)


@op("Min")
def min_(*xs: Tensor, consumed_inputs: Legacy = None) -> Tensor:
    """Elementwise minimum of all inputs (broadcast together)."""
    return reduce(Tensor.min_pair, xs)


@op("Sum")
def sum_(*xs: Tensor, consumed_inputs: Legacy = None) -> Tensor:
    """Elementwise sum of all inputs (broadcast together)."""
    return reduce(Tensor.add, xs)


@op("Mean")
def mean(*xs: Tensor, consumed_inputs: Legacy = None) -> Tensor:
    """Elementwise mean of all inputs (broadcast together)."""
    return reduce(Tensor.add, xs) / float(len(xs))


# ---- selection, clipping, casts -------------------------------------------------------------
@op("Where")
def where(cond: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """x where cond, else y (all three broadcast together)."""
    shape = broadcast_shapes("Where", broadcast_shapes("Where", cond.shape, x.shape), y.shape)
    return y.expand(shape).mask_where(cond, x)


@op("Clip", host=(1, 2), attr_inputs=(11, ("min", "max")))
def clip(x: Tensor, lo: object = None, hi: object = None, *,
         consumed_inputs: Legacy = None) -> Tensor:
    """x limited to [min, max] (either may be absent); min > max gives max everywhere."""
    low, high = scalar(lo), scalar(hi)
    if low is not None:
        x = x.clamp_min(low)
    if high is not None:
        x = x.clamp_max(high)
    return x


#: opset 1's Cast names its target type as a string
_TYPE_CODES = {"FLOAT": 1, "UINT8": 2, "INT8": 3, "UINT16": 4, "INT16": 5, "INT32": 6,
               "INT64": 7, "STRING": 8, "BOOL": 9, "FLOAT16": 10, "DOUBLE": 11, "UINT32": 12,
               "UINT64": 13}


def _cast(x: Tensor, dt: DType) -> Tensor:
    """x as dt, or as the type the device stores dt as."""
    return x.cast(storable(dt, x.device))


@op("Cast")
def cast_to(x: Tensor, *, to: int | str, saturate: int = 1, round_mode: str = "up") -> Tensor:
    """x converted to the element type `to` (saturate and round_mode concern float8 only)."""
    code = _TYPE_CODES.get(to.upper(), -1) if isinstance(to, str) else to
    return _cast(x, dtype_of(code))


@op("CastLike")
def cast_like(x: Tensor, like: Tensor, *, saturate: int = 1, round_mode: str = "up") -> Tensor:
    """x converted to the element type of `like`."""
    return _cast(x, like.dtype)
