"""The op registry: every elementwise op described once.

An entry carries the op's name, arity, the kinds it accepts, its numpy function, its WGSL
expression and its derivative rule. The numpy backend, the WGSL generator, fusion and autodiff
all read the same entry, so adding an op is one entry here plus its conformance cases.

Derivative rules receive front-end tensors on the *inner* backend: unary rules get
`(x, out, g)`, binary rules get `(a, b, out, g)` per operand (b may be a Python scalar) and
return the gradient for that operand in the broadcast output shape; autodiff sums it back to
the operand's shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..dtype import Kind

FLOAT = frozenset({Kind.FLOAT})
NUMERIC = frozenset({Kind.FLOAT, Kind.INT})
ALL = frozenset({Kind.FLOAT, Kind.INT, Kind.BOOL})
BOOL = frozenset({Kind.BOOL})

Rule = Callable[..., Any]


@dataclass(frozen=True, eq=False)
class Op:
    """One elementwise op.

    `numpy` is the name of a numpy function, or `f(np, *args)` computing it with the numpy
    module `np`; `wgsl` is an expression over
    `{x}` (unary) or `{a}`, `{b}` (binary); `wgsl_int` overrides it for integer dtypes;
    `numpy_int` overrides `numpy` for integer dtypes (floor division, say);
    `prelude` is WGSL helper code the expression needs. `grad` holds one rule per operand, or
    is None when the op has no gradient (integer-valued results such as floor or comparisons).
    """

    name: str
    arity: int
    kinds: frozenset[Kind]
    numpy: str | Callable[..., Any]
    wgsl: str
    grad: tuple[Rule, ...] | None = None
    out_kind: Kind | None = None
    wgsl_int: str | None = None
    prelude: str = ""
    zero_grad: bool = False
    numpy_int: str | Callable[..., Any] | None = None
    user: bool = False  # declared through pyrite.extend

    def __repr__(self) -> str:
        return f"Op({self.name})"


REGISTRY: dict[str, Op] = {}


def _register(op: Op) -> Op:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is registered twice")
    REGISTRY[op.name] = op
    return op


def unary(name: str, *, numpy: str | Callable[..., Any], wgsl: str, grad: Rule | None = None,
          kinds: frozenset[Kind] = FLOAT, out_kind: Kind | None = None,
          wgsl_int: str | None = None, prelude: str = "", zero_grad: bool = False) -> Op:
    """Register a one-operand op."""
    return _register(Op(name, 1, kinds, numpy, wgsl, (grad,) if grad else None, out_kind,
                        wgsl_int, prelude, zero_grad))


def binary(name: str, *, numpy: str | Callable[..., Any], wgsl: str,
           grad: tuple[Rule, Rule] | None = None, kinds: frozenset[Kind] = NUMERIC,
           out_kind: Kind | None = None, wgsl_int: str | None = None, prelude: str = "",
           numpy_int: str | Callable[..., Any] | None = None) -> Op:
    """Register a two-operand op."""
    return _register(Op(name, 2, kinds, numpy, wgsl, grad, out_kind, wgsl_int, prelude,
                        numpy_int=numpy_int))


#: ops declared with `pyrite.extend.op` (a kernel of their own rather than an expression), by
#: name; they share the registry's one name space with the elementwise entries above
CUSTOM: dict[str, Any] = {}


def register_custom(name: str, op: Any) -> None:
    """Enter a user op; declaring a name again replaces it (a page or notebook re-running its
    definitions), but a built-in's name is refused."""
    if name in REGISTRY:
        what = "an elementwise op" if REGISTRY[name].user else "a built-in op"
        raise ValueError(f"op {name!r} is {what} already; give yours another name")
    CUSTOM[name] = op


def register_user(op: Op) -> Op:
    """Enter a user's elementwise op (`pyrite.extend.elementwise`). Declaring it again with the
    same WGSL replaces it; other WGSL under a taken name is refused, since compiled kernels are
    cached by name."""
    old = REGISTRY.get(op.name)
    if old is not None and (not old.user or (old.wgsl, old.prelude) != (op.wgsl, op.prelude)):
        what = "a built-in op" if not old.user else "declared with other WGSL"
        raise ValueError(f"op {op.name!r} is {what}; give yours another name")
    if op.name in CUSTOM:
        raise ValueError(f"op {op.name!r} is a custom op already; give yours another name")
    REGISTRY[op.name] = op
    return op


def get(name: str) -> Op:
    """The registry entry of an op by name."""
    return REGISTRY[name]
