"""`CustomOp`: a user's op with a shape signature, a default composite, optionally a WGSL kernel
and a backward of its own.

The composite is the op's meaning: every backend runs it unless it has a kernel of its own, so a
new op works on numpy, webgpu and in the page with no more code. A backend reaches the op through
one contract primitive, `Backend.custom(op, inputs, attrs)`; the decorators give it its
behaviour: Autodiff records a node whose rule is the user's backward (or the composite's
derivative), Fusion runs the composite fused or flushes and launches the kernel, and the capture
engine of `pyrite.compile` records the kernel's dispatch like any other. The front-end checks
(kinds, devices, the signature's shapes, attributes) happen once here, before any backend.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from numbers import Real
from typing import TYPE_CHECKING

from ..backend import registry
from ..backend.base import Backend, Prim, layers
from ..dtype import Kind
from ..errors import DeviceError, DTypeError, KindError, ShapeError
from .grad import checked_grads, composite_vjp
from .kernel import Grid, WgslKernel
from .signature import Signature

if TYPE_CHECKING:
    from ..tensor import Tensor

Attr = float | int | bool
Composite = Callable[..., "Tensor"]
#: backward(inputs, output, grad, **attrs) -> one gradient (or None) per input
Backward = Callable[..., Sequence["Tensor | None"]]


class CustomOp:
    """One user op; build it with `pyrite.extend.op(signature)` (see docs/extending.md)."""

    def __init__(self, name: str, signature: Signature, composite: Composite) -> None:
        self.name = name
        self.signature = signature
        self.composite = composite
        params = inspect.signature(composite).parameters.values()
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
        if tuple(positional) != signature.names:
            raise ShapeError(f"{name}: the composite takes ({', '.join(positional)}), the "
                             f"signature names ({', '.join(signature.names)}); use the same "
                             f"names in the same order")
        #: attribute name -> default (keyword-only parameters of the composite: host numbers)
        self.attrs: dict[str, Attr | None] = {
            p.name: None if p.default is p.empty else p.default
            for p in params if p.kind is p.KEYWORD_ONLY}
        self.kernel: WgslKernel | None = None
        self.custom_backward: Backward | None = None
        registry.register_custom(name, self)

    def __repr__(self) -> str:
        extras = [s for s, on in (("wgsl", self.kernel), ("backward", self.custom_backward)) if on]
        return f"CustomOp({self.name}: {self.signature.text}{', ' if extras else ''}" \
               f"{', '.join(extras)})"

    # ---- declaring -------------------------------------------------------------------------
    def wgsl(self, source: str, *, workgroup_size: tuple[int, ...] = (256,),
             workgroups: Grid | None = None) -> CustomOp:
        """Give the op a WGSL kernel for webgpu (natively and in the page); returns the op.

        `source` holds `fn main` and any helpers; pyrite declares the bindings, the shape
        accessors and `WORKGROUP_X/Y/Z` above it (docs/extending.md lists them).
        """
        self.kernel = WgslKernel.declare(self.name, source, workgroup_size, workgroups)
        return self

    def backward(self, fn: Backward) -> Backward:
        """Decorator: `fn(inputs, output, grad, **attrs)` gives one gradient per input (None for
        an input that needs none), each of its input's shape, written with tensor ops (which
        may call other custom ops and their kernels)."""
        self.custom_backward = fn
        return fn

    # ---- calling ---------------------------------------------------------------------------
    def __call__(self, *inputs: Tensor, **attrs: Attr) -> Tensor:
        from ..tensor import Tensor
        values = self._attrs(attrs)
        if not inputs or any(x.__class__ is not Tensor for x in inputs):
            kinds = ", ".join(type(x).__name__ for x in inputs)
            raise KindError(f"{self.name}: takes tensors ({', '.join(self.signature.names)}), "
                            f"got ({kinds})")
        first = inputs[0]
        backend = first._backend
        for name, x in zip(self.signature.names, inputs, strict=False):
            if x._kind is not Kind.FLOAT:
                raise KindError(f"{self.name}: {name} is a tensor of kind {x._kind.value}; "
                                f"custom ops take Float tensors (convert with .float())")
            if x._backend != backend:
                raise DeviceError(f"{self.name}: {name} is on {x._backend.name}, "
                                  f"{self.signature.names[0]} on {backend.name}; move it with "
                                  f".to_device(...)")
            if x.dtype is not first.dtype:
                raise DTypeError(f"{self.name}: {name} is {x.dtype.value}, "
                                 f"{self.signature.names[0]} {first.dtype.value}; cast one "
                                 f"with .cast(...)")
        bound = self.signature.bind(self.name, tuple(x.shape for x in inputs))
        prims = [(x if x.shape == full else x.reshape(
            (1,) * (len(full) - x.ndim) + x.shape).expand(full))._prim
            for x, full in zip(inputs, bound.inputs, strict=True)]
        return Tensor._wrap(backend.custom(self, prims, values), backend, Kind.FLOAT)

    def reference(self, *inputs: Tensor, **attrs: Attr) -> Tensor:
        """The composite alone, on the inputs' backend (what tests compare a kernel with)."""
        return self.composite(*inputs, **self._attrs(attrs))

    def _attrs(self, given: Mapping[str, Attr]) -> dict[str, Attr]:
        if unknown := sorted(set(given) - set(self.attrs)):
            raise KindError(f"{self.name}: no attribute {unknown}; it takes "
                            f"{sorted(self.attrs) or 'none'}")
        out: dict[str, Attr] = {}
        for name, default in self.attrs.items():
            value = given.get(name, default)
            if value is None:
                raise KindError(f"{self.name}: attribute {name!r} has no default; pass "
                                f"{name}=...")
            if not isinstance(value, Real):
                raise KindError(f"{self.name}: attribute {name}={value!r} is not a number; "
                                f"attributes are host numbers (pass tensors as inputs)")
            out[name] = value
        return out

    # ---- what backends call ----------------------------------------------------------------
    def kernel_on(self, backend: Backend) -> WgslKernel | None:
        """The kernel this op runs on `backend` (its innermost layer's kernel language)."""
        if self.kernel is None:
            return None
        return self.kernel if layers(backend)[-1].kernel_language == "wgsl" else None

    def run_composite(self, backend: Backend, inputs: Sequence[Prim],
                      attrs: Mapping[str, Attr]) -> Prim:
        """The composite on `backend`'s primitives (how a backend without a kernel runs it)."""
        from ..tensor import Tensor
        out = self.composite(*(Tensor._wrap(p, backend, Kind.FLOAT) for p in inputs), **attrs)
        if out.__class__ is not Tensor:
            raise KindError(f"{self.name}: the composite returned {type(out).__name__}, not a "
                            f"Tensor")
        return out._prim

    def grads(self, inner: Backend, values: Sequence[Prim], out: Prim, g: Prim,
              attrs: Mapping[str, Attr], needed: Sequence[bool]) -> list[Prim | None]:
        """The inputs' gradients (inner-backend primitives) from the output's `g`: the user's
        backward, checked against the inputs' shapes, or the composite's derivative."""
        from ..tensor import Tensor

        def wrap(p: Prim) -> Tensor:
            return Tensor._wrap(p, inner, Kind.FLOAT)
        if self.custom_backward is None:
            return composite_vjp(self.composite, inner, list(values), g, needed, attrs)
        got = self.custom_backward(tuple(wrap(v) for v in values), wrap(out), wrap(g), **attrs)
        shapes = [inner.shape(v) for v in values]
        return checked_grads(f"{self.name} backward", self.signature.names, shapes, got, needed)


def op(signature: str, *, name: str | None = None) -> Callable[[Composite], CustomOp]:
    """Declare a custom op from its composite (decorator); the function's name names the op.

    Shapes: as the signature says, e.g. "x[..., n] -> [..., n]".

    >>> import pyrite
    >>> @op("x[..., n], y[..., n] -> [..., n]", name="doctest_hypot")
    ... def hypot(x, y):
    ...     return (x * x + y * y).sqrt()
    >>> hypot(pyrite.tensor([3.0]), pyrite.tensor([4.0])).to_list()
    [5.0]
    """
    def declare(composite: Composite) -> CustomOp:
        op_name = name or composite.__name__
        return CustomOp(op_name, Signature.parse(signature, op_name), composite)
    return declare
