"""Registry entries of the one-operand elementwise ops."""

from __future__ import annotations

import math

from ..dtype import Kind
from . import special
from .registry import ALL, BOOL, FLOAT, NUMERIC, unary

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): WGSL has no erf builtin.
_ERF_WGSL = """
fn pyrite_erf(x: f32) -> f32 {
  let s = sign(x);
  let a = abs(x);
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
          + 0.254829592) * t * exp(-a * a);
  return s * y;
}
"""

# WGSL leaves log of 0, of a negative number and of inf "indeterminate" (Chrome's SwiftShader
# gives -88.0 for log(0)); numpy's -inf, NaN and inf are spelled out.
_LOG_WGSL = """
fn pyrite_log(x: f32) -> f32 {
  let inf = pyrite_bits(0x7f800000u);
  if (x > 0.0 && x < inf) { return log(x); }
  if (x == 0.0) { return -inf; }
  if (x == inf) { return inf; }
  return pyrite_bits(0x7fc00000u);
}
"""

EXP = unary("exp", numpy="exp", wgsl="exp({x})",
            grad=lambda x, out, g: g * out)
LOG = unary("log", numpy="log", wgsl="pyrite_log({x})", prelude=_LOG_WGSL,
            grad=lambda x, out, g: g / x)
LOG1P = unary("log1p", numpy="log1p", wgsl="pyrite_log(1.0 + {x})", prelude=_LOG_WGSL,
              grad=lambda x, out, g: g / (x + 1.0))
SQRT = unary("sqrt", numpy="sqrt", wgsl="sqrt({x})",
             grad=lambda x, out, g: g * 0.5 / out)
SIN = unary("sin", numpy="sin", wgsl="sin({x})",
            grad=lambda x, out, g: g * x.cos())
COS = unary("cos", numpy="cos", wgsl="cos({x})",
            grad=lambda x, out, g: -(g * x.sin()))
# tanh(x) = 1 - 2 / (exp(2x) + 1) stays finite where some drivers' tanh overflows.
TANH = unary("tanh", numpy="tanh", wgsl="(1.0 - 2.0 / (exp(2.0 * {x}) + 1.0))",
             grad=lambda x, out, g: g * (1.0 - out * out))
ERF = unary("erf", numpy=special.erf, wgsl="pyrite_erf({x})", prelude=_ERF_WGSL,
            grad=lambda x, out, g: g * (_TWO_OVER_SQRT_PI * (-(x * x)).exp()))
# gelu and its derivative are entries of their own rather than a composite over erf: one
# cache-blocked numpy pass each (the composite made ten whole-array passes, forward and back,
# over a transformer's widest activations) and one fusable WGSL expression
GELU_GRAD = unary("gelu_grad", numpy=special.gelu_grad,
                  wgsl="(0.5 * (1.0 + pyrite_erf(0.7071067811865476 * {x})) + "
                       "0.3989422804014327 * {x} * exp(-0.5 * min(abs({x}), 13.0) * "
                       "min(abs({x}), 13.0)))",
                  prelude=_ERF_WGSL)
GELU = unary("gelu", numpy=special.gelu,
             wgsl="(0.5 * {x} * (1.0 + pyrite_erf(0.7071067811865476 * {x})))",
             prelude=_ERF_WGSL, grad=lambda x, out, g: g * x._unary(GELU_GRAD))
SIGMOID = unary("sigmoid", numpy=lambda np, x: 0.5 * (np.tanh(0.5 * x) + 1.0),
                wgsl="(1.0 / (1.0 + exp(-{x})))",
                grad=lambda x, out, g: g * out * (1.0 - out))
# relu is an entry, not a composite where(x > 0, x, 0): one ufunc on numpy (the composite
# costs a comparison, a fill and a select) and one fusable WGSL expression; its rule masks the
# gradient with x > 0, so nothing is split at 0.
RELU = unary("relu", numpy=lambda np, x: np.maximum(x, 0), wgsl="max({x}, 0.0)",
             grad=lambda x, out, g: g.mask_fill(x.lower_equal_elem(0.0), 0.0))
RECIP = unary("recip", numpy="reciprocal", wgsl="(1.0 / {x})",
              grad=lambda x, out, g: -(g * out * out))
ABS = unary("abs", numpy="abs", wgsl="abs({x})", kinds=NUMERIC,
            grad=lambda x, out, g: g * x.sign())
NEG = unary("neg", numpy="negative", wgsl="(-{x})", kinds=NUMERIC,
            grad=lambda x, out, g: -g)
SIGN = unary("sign", numpy="sign", wgsl="sign({x})", kinds=NUMERIC,
             wgsl_int="select(select(0, -1, {x} < 0), 1, {x} > 0)", zero_grad=True)
FLOOR = unary("floor", numpy="floor", wgsl="floor({x})", zero_grad=True)
CEIL = unary("ceil", numpy="ceil", wgsl="ceil({x})", zero_grad=True)
# numpy and WGSL both round half to even.
ROUND = unary("round", numpy="round", wgsl="round({x})", zero_grad=True)
# NaN's bits, not `x != x`: shader compilers may assume no NaNs and fold that to false.
IS_NAN = unary("is_nan", numpy="isnan",
               wgsl="((bitcast<u32>(f32({x})) & 0x7fffffffu) > 0x7f800000u)",
               out_kind=Kind.BOOL)
NOT = unary("not", numpy="logical_not", wgsl="(!{x})", kinds=BOOL)

__all__ = ["ABS", "ALL", "CEIL", "COS", "ERF", "EXP", "FLOAT", "FLOOR", "GELU", "GELU_GRAD",
           "IS_NAN", "LOG", "LOG1P", "NEG", "NOT", "RECIP", "RELU", "ROUND", "SIGMOID", "SIGN",
           "SIN", "SQRT", "TANH"]
