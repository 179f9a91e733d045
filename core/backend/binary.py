"""Registry entries of the two-operand elementwise ops (arithmetic, comparisons, logic)."""

from __future__ import annotations

from ..dtype import Kind
from .registry import ALL, BOOL, binary

# Integer division and remainder follow numpy (floor toward -inf, remainder takes the divisor's
# sign); WGSL's `/` truncates, so the expressions correct for that. The truncated remainder is
# a - b * (a / b), never WGSL's `%`: NVIDIA's Vulkan driver gets signed `%` wrong for negative
# operands (7 % -2 gave 7 on an H200).
_TREM = "({a} - {b} * ({a} / {b}))"
_IDIV_WGSL = (f"select({{a}} / {{b}}, {{a}} / {{b}} - 1, "
              f"({_TREM} != 0) && (({{a}} < 0) != ({{b}} < 0)))")
_IREM_WGSL = (f"select({_TREM}, {_TREM} + {{b}}, "
              f"({_TREM} != 0) && (({_TREM} < 0) != ({{b}} < 0)))")
# WGSL's pow is undefined for a negative base; numpy gives a signed result for integral exponents.
_POW_WGSL = """
fn pyrite_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (a >= 0.0) { return pow(a, b); }
  if (b != floor(b)) { return pyrite_bits(0x7fc00000u); }
  let m = pow(-a, b);
  return select(m, -m, (i32(b) & 1) == 1);
}
"""


def _pow_grad_rhs(a, b, out, g):  # type: ignore[no-untyped-def]
    # d(a^b)/db = a^b * ln(a); defined as 0 where a <= 0 (the limit PyTorch also uses at 0)
    positive = a > 0.0
    safe = a.mask_fill(positive.bool_not(), 1.0)
    return (g * out * safe.log()).mask_fill(positive.bool_not(), 0.0)


ADD = binary("add", numpy="add", wgsl="({a} + {b})",
             grad=(lambda a, b, out, g: g, lambda a, b, out, g: g))
SUB = binary("sub", numpy="subtract", wgsl="({a} - {b})",
             grad=(lambda a, b, out, g: g, lambda a, b, out, g: -g))
MUL = binary("mul", numpy="multiply", wgsl="({a} * {b})",
             grad=(lambda a, b, out, g: g * b, lambda a, b, out, g: g * a))
DIV = binary("div", numpy="true_divide", wgsl="({a} / {b})",
             numpy_int="floor_divide", wgsl_int=_IDIV_WGSL,
             grad=(lambda a, b, out, g: g / b, lambda a, b, out, g: -(g * out / b)))
REM = binary("rem", numpy="mod",
             wgsl="({a} - {b} * floor({a} / {b}))", wgsl_int=_IREM_WGSL,
             grad=(lambda a, b, out, g: g, lambda a, b, out, g: -(g * (a / b).floor())))
POW = binary("pow", numpy="power", wgsl="pyrite_pow({a}, {b})",
             prelude=_POW_WGSL,
             grad=(lambda a, b, out, g: g * b * a.powf(b - 1.0), _pow_grad_rhs))
# Gradient of max/min goes to the lhs on ties, as with a mask a >= b.
MAXIMUM = binary("max_pair", numpy="maximum", wgsl="max({a}, {b})",
                 grad=(lambda a, b, out, g: g * (a >= b).float(),
                       lambda a, b, out, g: g * (a < b).float()))
MINIMUM = binary("min_pair", numpy="minimum", wgsl="min({a}, {b})",
                 grad=(lambda a, b, out, g: g * (a <= b).float(),
                       lambda a, b, out, g: g * (a > b).float()))

EQUAL = binary("equal", numpy="equal", wgsl="({a} == {b})",
               kinds=ALL, out_kind=Kind.BOOL)
# !(a == b), not a != b: some shader compilers treat != as ordered (false when a is NaN)
NOT_EQUAL = binary("not_equal", numpy="not_equal", wgsl="(!({a} == {b}))",
                   kinds=ALL, out_kind=Kind.BOOL)
GREATER = binary("greater", numpy="greater", wgsl="({a} > {b})",
                 out_kind=Kind.BOOL)
GREATER_EQUAL = binary("greater_equal", numpy="greater_equal",
                       wgsl="({a} >= {b})", out_kind=Kind.BOOL)
LOWER = binary("lower", numpy="less", wgsl="({a} < {b})",
               out_kind=Kind.BOOL)
LOWER_EQUAL = binary("lower_equal", numpy="less_equal",
                     wgsl="({a} <= {b})", out_kind=Kind.BOOL)

AND = binary("and", numpy="logical_and", wgsl="({a} && {b})", kinds=BOOL)
OR = binary("or", numpy="logical_or", wgsl="({a} || {b})", kinds=BOOL)
XOR = binary("xor", numpy="logical_xor", wgsl="({a} != {b})", kinds=BOOL)

COMPARISONS = (EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LOWER, LOWER_EQUAL)
