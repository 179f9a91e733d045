"""`ElementwiseOp`: a user's elementwise op as an entry of the op registry.

An elementwise op is one WGSL expression over `{x}` (one operand) or `{a}`, `{b}` (two, `b` a
tensor broadcast against `a` or a host number), with its composite as the meaning. It joins the
registry the built-in ops are in, so everything that reads the registry treats it as one of
them: numpy runs the composite on its arrays, webgpu generates its kernel from the expression,
Fusion fuses it with its neighbours (and into a matmul's epilogue), autodiff applies its rule
(the user's backward, or the composite's derivative).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..backend import registry
from ..backend.registry import FLOAT, Op
from ..dtype import Kind
from ..errors import KindError, ShapeError
from .grad import composite_vjp

if TYPE_CHECKING:
    from ..tensor import Tensor

#: unary: backward(x, out, g) -> dx; binary: backward(a, b, out, g) -> (da, db)
ElementwiseBackward = Callable[..., Any]


class ElementwiseOp:
    """A user elementwise op; call it like a function (`softplus(x, 2.0)`)."""

    def __init__(self, name: str, composite: Callable[..., Tensor], wgsl: str, prelude: str,
                 backward: ElementwiseBackward | None) -> None:
        params = [p for p in inspect.signature(composite).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        arity = len(params)
        names = ("{x}",) if arity == 1 else ("{a}", "{b}")
        if arity not in (1, 2) or any(n not in wgsl for n in names):
            raise KindError(f"{name}: an elementwise op takes one operand ({{x}} in its WGSL) or "
                            f"two ({{a}} and {{b}}); the composite takes {arity} and the WGSL "
                            f"is {wgsl!r}")
        self.name = name
        self.composite = composite
        self.custom_backward = backward
        rules = self._rules(arity, backward)
        self.entry = registry.register_user(Op(
            name, arity, FLOAT, self._numpy, wgsl, rules, prelude=prelude, user=True))

    def __repr__(self) -> str:
        return f"ElementwiseOp({self.name}, {self.entry.wgsl!r})"

    def __call__(self, x: Tensor, b: Tensor | float | None = None) -> Tensor:
        if self.entry.arity == 1:
            if b is not None:
                raise KindError(f"{self.name}: takes one tensor, got a second operand")
            return x._unary(self.entry)
        if b is None:
            raise KindError(f"{self.name}: takes two operands (a tensor and a tensor or number)")
        return x._binary(self.entry, b)

    def reference(self, *args: Any) -> Tensor:
        """The composite alone (what tests compare the registry entry with)."""
        return self.composite(*args)

    def _numpy(self, np: Any, *arrays: Any) -> Any:
        """The composite on numpy arrays: the numpy backend's function for this entry."""
        from ..device import device
        from ..tensor import Tensor
        backend = device("numpy")
        args = [Tensor._wrap(a, backend, Kind.FLOAT) if hasattr(a, "shape") else a
                for a in arrays]
        return self.composite(*args)._prim

    def _rules(self, arity: int, backward: ElementwiseBackward | None) -> tuple[Any, ...]:
        name, composite = self.name, self.composite

        def derived(i: int) -> Any:
            def rule(*args: Any) -> Any:
                *operands, _out, g = args
                values = [a._prim if hasattr(a, "_prim") else a for a in operands]
                needed = [j == i for j in range(arity)]
                grads = composite_vjp(composite, g._backend, values, g._prim, needed, {})
                return g._new(grads[i])
            return rule

        def given(i: int) -> Any:
            def rule(*args: Any) -> Any:
                got = backward(*args)  # type: ignore[misc]  # only built when given
                grad = got if arity == 1 else got[i]
                operand, out = args[i], args[-2]
                shapes = {tuple(out.shape), tuple(operand.shape)}
                if tuple(getattr(grad, "shape", ())) not in shapes:
                    raise ShapeError(f"{name} backward: the gradient of operand {i} has shape "
                                     f"{tuple(getattr(grad, 'shape', ()))}, the operand "
                                     f"{tuple(operand.shape)} and the output "
                                     f"{tuple(out.shape)}; return it in one of those shapes")
                return grad
            return rule
        make = derived if backward is None else given
        return tuple(make(i) for i in range(arity))


def elementwise(wgsl: str, *, prelude: str = "", backward: ElementwiseBackward | None = None,
                name: str | None = None) -> Callable[[Callable[..., Tensor]], ElementwiseOp]:
    """Declare an elementwise op from its composite and its WGSL expression (decorator).

    Shapes: as a built-in elementwise op: operands broadcast, the output has their shape.

    >>> import pyrite
    >>> @elementwise("({x} * {x} * {x})", name="doctest_cube")
    ... def cube(x):
    ...     return x * x * x
    >>> cube(pyrite.tensor([2.0])).to_list()
    [8.0]
    """
    def declare(composite: Callable[..., Tensor]) -> ElementwiseOp:
        return ElementwiseOp(name or composite.__name__, composite, wgsl, prelude, backward)
    return declare
