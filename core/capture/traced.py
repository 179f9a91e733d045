"""Traced host scalars: the numbers a compiled step computes on the host, remembered as formulas.

A training step turns host numbers into kernel metadata: the learning rate, Adam's bias
corrections `1 - beta ** t`, the random generator's counter. A replayed step runs no Python, so
the numbers that change from step to step must be computed again from the step's new inputs.
While `pyrite.compile` captures a step, each changing input number (a float argument, a number
in an optimizer's state, the generator's seed and counter) enters as a `TracedFloat` or a
`TracedInt`: a real `float`/`int` that also carries its formula over the inputs. Arithmetic on it
gives another traced number, so `1.0 - b1 ** t` arrives at the kernel as a formula, and the
replay evaluates every formula for the new inputs (one generated function, `Formulas`).

A traced number used any other way is a *guard*: a comparison (`if t > 10:`), a conversion to a
plain number (`int(t)`, `math.sqrt(lr)`), a truth test. The capture remembers the answer it got,
and a replay first checks every guard against the new inputs; one that answers differently means
the step would take another path, so that call runs eagerly instead (and is captured anew).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

#: an expression: ("in", k) the k-th traced input, ("k", value) a constant, (op, a, b) or (op, a)
Expr = tuple[Any, ...]

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
    "rshift": operator.rshift, "min": min, "max": max,
}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
           "pow": "**", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class Trace:
    """What one capture saw: the traced inputs' values and the guards their uses made."""

    def __init__(self) -> None:
        self.inputs: list[float | int] = []
        self.guards: list[tuple[Expr, str, Any]] = []  # (expression, "eq"/"lt"/..., answer)

    def input(self, value: float | int) -> Traced:
        expr: Expr = ("in", len(self.inputs))
        self.inputs.append(value)
        out: Traced = TracedFloat(value) if isinstance(value, float) else TracedInt(value)
        out._expr = expr
        return out

    def guard(self, expr: Expr, how: str, answer: Any) -> None:
        self.guards.append((expr, how, answer))


_ACTIVE: list[Trace] = []  # the trace of the capture running now (at most one)


def active() -> Trace | None:
    return _ACTIVE[-1] if _ACTIVE else None


def expr_of(value: Any) -> Expr:
    return value._expr if isinstance(value, Traced) else ("k", value)


def make(value: Any, expr: Expr) -> Any:
    """`value` carrying `expr` (plain when no capture is running or the value is not a number)."""
    if not _ACTIVE or isinstance(value, bool):
        return value
    if isinstance(value, float):
        out: Traced = TracedFloat(value)
    elif isinstance(value, int):
        out = TracedInt(value)
    else:
        return value
    out._expr = expr
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, TracedFloat):
        return float.__float__(value)
    if isinstance(value, TracedInt):
        return int.__int__(value)
    return value


class Traced:
    """Mixin of `TracedFloat` and `TracedInt`; `_expr` is the formula of the value."""

    _expr: Expr

    def _leak(self, how: str) -> None:
        trace = active()
        if trace is not None:
            trace.guard(self._expr, "eq", _plain(self))


def _binary(name: str) -> tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]:
    fn = _BINARY[name]

    def forward(self: Any, other: Any) -> Any:
        if not isinstance(other, (int, float)) or isinstance(other, bool) and name in (
                "and", "or", "xor"):
            return NotImplemented
        return make(fn(_plain(self), _plain(other)), (name, self._expr, expr_of(other)))

    def reverse(self: Any, other: Any) -> Any:
        if not isinstance(other, (int, float)):
            return NotImplemented
        return make(fn(_plain(other), _plain(self)), (name, expr_of(other), self._expr))
    return forward, reverse


def _compare(name: str) -> Callable[[Any, Any], Any]:
    fn = getattr(operator, name)

    def compare(self: Any, other: Any) -> Any:
        if not isinstance(other, (int, float)):
            return NotImplemented
        answer = fn(_plain(self), _plain(other))
        trace = active()
        if trace is not None:
            trace.guard((name, self._expr, expr_of(other)), "eq", answer)
        return answer
    return compare


def _install(cls: type) -> None:
    for name in _BINARY:
        if name in ("min", "max"):
            continue
        if name in ("and", "or", "xor", "lshift", "rshift") and cls is TracedFloat:
            continue
        forward, reverse = _binary(name)
        setattr(cls, f"__{name}__", forward)
        setattr(cls, f"__r{name}__", reverse)
    for name in _COMPARE:
        setattr(cls, f"__{name}__", _compare(name))


class TracedFloat(Traced, float):
    """A float with a formula (see the module doc)."""

    _expr: Expr

    def __neg__(self) -> Any:
        return make(-float.__float__(self), ("neg", self._expr))

    def __abs__(self) -> Any:
        return make(abs(float.__float__(self)), ("abs", self._expr))

    def __pos__(self) -> Any:
        return self

    def __bool__(self) -> bool:
        answer = float.__float__(self) != 0.0
        trace = active()
        if trace is not None:
            trace.guard(("ne", self._expr, ("k", 0.0)), "eq", answer)
        return answer

    def __float__(self) -> float:
        self._leak("float")
        return float.__float__(self)

    def __int__(self) -> int:
        self._leak("int")
        return float.__int__(self)

    def __round__(self, ndigits: Any = None) -> Any:
        self._leak("round")
        return round(float.__float__(self), ndigits)

    def __trunc__(self) -> int:
        self._leak("trunc")
        return math.trunc(float.__float__(self))

    def __floor__(self) -> int:
        self._leak("floor")
        return math.floor(float.__float__(self))

    def __ceil__(self) -> int:
        self._leak("ceil")
        return math.ceil(float.__float__(self))

    __hash__ = float.__hash__

    def __repr__(self) -> str:
        return float.__repr__(self)

    def __reduce__(self) -> Any:  # pickles (and copies) as the plain number
        return (float, (float.__float__(self),))


class TracedInt(Traced, int):
    """An int with a formula (see the module doc)."""

    _expr: Expr

    def __neg__(self) -> Any:
        return make(-int.__int__(self), ("neg", self._expr))

    def __abs__(self) -> Any:
        return make(abs(int.__int__(self)), ("abs", self._expr))

    def __pos__(self) -> Any:
        return self

    def __bool__(self) -> bool:
        answer = int.__int__(self) != 0
        trace = active()
        if trace is not None:
            trace.guard(("ne", self._expr, ("k", 0)), "eq", answer)
        return answer

    def __int__(self) -> int:
        self._leak("int")
        return int.__int__(self)

    def __index__(self) -> int:
        self._leak("index")
        return int.__int__(self)

    def __float__(self) -> float:
        self._leak("float")
        return int.__float__(self)

    __hash__ = int.__hash__

    def __repr__(self) -> str:
        return int.__repr__(self)

    def __reduce__(self) -> Any:
        return (int, (int.__int__(self),))


_install(TracedFloat)
_install(TracedInt)


# ---- helpers for code that converts scalars (keeps the formula) -------------------------------
def keep_float(value: Any) -> float:
    """`float(value)`, keeping a traced value's formula."""
    if isinstance(value, TracedFloat):
        return value
    if isinstance(value, TracedInt):
        return make(int.__float__(value), ("float", value._expr))  # type: ignore[no-any-return]
    return float(value)


def keep_int(value: Any) -> int:
    """`int(value)`, keeping a traced value's formula (floats truncate, as int() does)."""
    if isinstance(value, TracedInt):
        return value
    if isinstance(value, TracedFloat):
        return make(float.__int__(value), ("int", value._expr))  # type: ignore[no-any-return]
    return int(value)


def f32_word(value: Any) -> Any:
    """The i32 word holding `value` as an f32 (a traced value gives a traced word)."""
    word = _f32(float(_plain(value)))  # _plain: float() of a traced int would be a guard
    if isinstance(value, Traced):
        return make(word, ("f32", value._expr))
    return word


def is_traced(value: Any) -> bool:
    return isinstance(value, Traced)


def plain(value: Any) -> Any:
    """The number without its formula."""
    return _plain(value)


# ---- evaluation: one generated function for all a program's formulas ---------------------------
def _f32(x: float) -> int:
    import struct
    return struct.unpack("<i", struct.pack("<f", x))[0]  # type: ignore[no-any-return]


def _source(expr: Expr, names: dict[Expr, str], lines: list[str]) -> str:
    """Python source of `expr` over `v` (the inputs); shared subexpressions computed once."""
    if expr[0] == "in":
        return f"v[{int(expr[1])}]"
    if expr[0] == "k":
        value = expr[1]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"not a number constant: {value!r}")
        return repr(_plain(value)) if not (isinstance(value, float) and not math.isfinite(
            value)) else f"float({str(value)!r})"
    found = names.get(expr)
    if found is not None:
        return found
    op, *args = expr
    parts = [_source(a, names, lines) for a in args]
    if op in _SYMBOL:
        text = f"({parts[0]} {_SYMBOL[op]} {parts[1]})"
    elif op in _COMPARE:
        text = f"({parts[0]} {_COMPARE[op]} {parts[1]})"
    elif op in ("min", "max", "abs", "float", "int"):
        text = f"{op}({', '.join(parts)})"
    elif op == "neg":
        text = f"(-{parts[0]})"
    elif op == "f32":
        text = f"f32({parts[0]})"
    else:
        raise ValueError(f"unknown formula op {op!r}")
    name = f"t{len(names)}"
    names[expr] = name
    lines.append(f"    {name} = {text}")
    return name


class Formulas:
    """`Formulas(values, guards)(inputs)`: every value's formula evaluated for new inputs, or
    None when a guard answers differently than at capture."""

    def __init__(self, values: Sequence[Expr], guards: Sequence[tuple[Expr, str, Any]]) -> None:
        names: dict[Expr, str] = {}
        lines: list[str] = []
        checks = []
        for expr, _, answer in guards:
            text = _source(expr, names, lines)
            want = repr(answer) if not isinstance(answer, float) or math.isfinite(answer) \
                else f"float({str(answer)!r})"
            checks.append(f"    if {text} != {want}: return None")
        results = [_source(e, names, lines) for e in values]
        body = "\n".join(lines[:]) if lines else "    pass"
        source = ("def formulas(v):\n" + body + "\n" + "\n".join(checks) +
                  f"\n    return [{', '.join(results)}]\n")
        scope: dict[str, Any] = {"f32": _f32}
        exec(compile(source, "<pyrite.compile formulas>", "exec"), scope)  # noqa: S102 - our own formulas
        self.source = source
        self.evaluate: Callable[[Sequence[Any]], list[Any] | None] = scope["formulas"]

    def __call__(self, inputs: Sequence[Any]) -> list[Any] | None:
        try:
            return self.evaluate(inputs)
        except (ArithmeticError, ValueError, TypeError):
            return None  # the formula fails for these inputs: run eagerly, which will say why


__all__ = ["Formulas", "Trace", "Traced", "TracedFloat", "TracedInt", "active", "f32_word",
           "is_traced", "keep_float", "keep_int", "make", "plain"]
