"""Autodiff(inner): a backend decorator that records a graph of float ops and runs it backward.

Float tensors become `Tracked` primitives (the inner primitive + a graph node, or no node when
nothing upstream requires grad); Int and Bool tensors pass through untouched. Gradient rules are
written once per primitive with front-end tensors on the inner backend; elementwise rules come
from the op registry. Composites inherited from `Backend` run on these primitives, so they are
differentiated through their composition; ops a backend accelerates (softmax, log_softmax, pad)
get a rule of their own so the fast kernel serves forward and backward alike.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..data import TensorData
from ..distribution import Distribution
from ..dtype import DType, Kind
from ..errors import GradError
from .autodiff_module import AutodiffModuleOps
from .base import Backend, Prim, Range
from .reduce import SUM, Reduction
from .registry import Op, get

if TYPE_CHECKING:
    from ..extend.op import CustomOp

_ids = itertools.count()
Backward = Callable[[Prim], Sequence[Prim | None]]


class Node:
    """A vertex of the graph: parents (None for untracked inputs) and the rule mapping the
    output's gradient to theirs. Leaves have no rule; `order` increases with creation time, so
    decreasing order is a valid reverse topological order."""

    __slots__ = ("id", "parents", "backward", "keep")

    def __init__(self, parents: tuple[Node | None, ...], backward: Backward | None,
                 keep: bool = False) -> None:
        self.id = next(_ids)
        self.parents = parents
        self.backward = backward
        self.keep = keep


class Tracked:
    """A float primitive of the autodiff backend: the inner primitive and its node (or None)."""

    __slots__ = ("value", "node")

    def __init__(self, value: Prim, node: Node | None = None) -> None:
        self.value = value
        self.node = node


class Gradients:
    """Gradients from one `backward()`: leaf tensor -> gradient (an inner-backend primitive)."""

    def __init__(self, grads: dict[int, Prim]) -> None:
        self._grads = grads

    def get(self, prim: Prim) -> Prim | None:
        node = getattr(prim, "node", None)
        return None if node is None else self._grads.get(node.id)

    def remove(self, prim: Prim) -> Prim | None:
        node = getattr(prim, "node", None)
        return None if node is None else self._grads.pop(node.id, None)

    def __len__(self) -> int:
        return len(self._grads)

    def __repr__(self) -> str:
        return f"Gradients({len(self._grads)} tensors)"


class Autodiff(AutodiffModuleOps, Backend):
    """Adds reverse-mode autodiff to any backend: `Autodiff(NumpyBackend())`."""

    is_autodiff = True

    def __init__(self, inner: Backend) -> None:
        if inner.is_autodiff:
            raise GradError(f"Autodiff: {inner.name} already tracks gradients")
        self.inner = inner
        self.name = f"autodiff<{inner.name}>"
        self.float_dtype = inner.float_dtype
        self.int_dtype = inner.int_dtype

    # ---- helpers -----------------------------------------------------------------------------
    def _t(self, prim: Prim) -> Any:
        from ..tensor import Tensor
        return Tensor._wrap(prim, self.inner, Kind.FLOAT)

    @staticmethod
    def unwrap(x: Prim) -> Prim:
        return x.value if x.__class__ is Tracked else x

    def wrap(self, prim: Prim, kind: Kind) -> Prim:
        return Tracked(prim) if kind is Kind.FLOAT else prim

    def _wrap_dtype(self, prim: Prim, dtype: DType) -> Prim:
        return Tracked(prim) if dtype.kind is Kind.FLOAT else prim

    @staticmethod
    def _record(out: Prim, inputs: Sequence[Any], backward: Backward) -> Tracked:
        parents = tuple(x.node if x.__class__ is Tracked else None for x in inputs)
        if not any(p is not None for p in parents):
            return Tracked(out)
        return Tracked(out, Node(parents, backward))

    def _unbroadcast(self, g: Prim, shape: tuple[int, ...]) -> Prim:
        """Sum a broadcast gradient back to `shape` (same rank)."""
        gs = self.inner.shape(g)
        for d, (gd, sd) in enumerate(zip(gs, shape, strict=True)):
            if sd == 1 and gd != 1:
                g = self.inner.reduce(SUM, g, d)
        return g

    def _zeros(self, shape: tuple[int, ...], dtype: DType) -> Prim:
        return self.inner.full(shape, 0, dtype)

    # ---- autodiff API ------------------------------------------------------------------------
    def set_require_grad(self, x: Tracked, flag: bool) -> Tracked:
        return Tracked(x.value, Node((), None, keep=True) if flag else None)

    def is_tracked(self, x: Prim) -> bool:
        return x.__class__ is Tracked and x.node is not None

    def detach(self, x: Tracked) -> Tracked:
        return Tracked(x.value)

    def backward(self, root: Tracked) -> Gradients:
        if root.node is None:
            raise GradError("backward: this tensor does not depend on any tensor that requires "
                            "grad; call .require_grad() on the inputs (module params do this)")
        inner = self.inner
        nodes: dict[int, Node] = {}
        stack = [root.node]
        while stack:
            node = stack.pop()
            if node.id in nodes:
                continue
            nodes[node.id] = node
            stack.extend(p for p in node.parents if p is not None and p.id not in nodes)
        pending: dict[int, Prim] = {
            root.node.id: inner.full(inner.shape(root.value), 1, inner.dtype(root.value))}
        result: dict[int, Prim] = {}
        add = get("add")
        for nid in sorted(nodes, reverse=True):
            node = nodes[nid]
            g = pending.pop(nid, None)
            if g is None:
                continue
            if node.backward is None:
                if node.keep:
                    result[nid] = g
                continue
            for parent, pg in zip(node.parents, node.backward(g), strict=True):
                if parent is None or pg is None:
                    continue
                prev = pending.get(parent.id)
                pending[parent.id] = pg if prev is None else inner.binary(add, prev, pg)
        return Gradients(result)

    # ---- device-level ------------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        self.inner.seed(seed)

    def sync(self) -> None:
        self.inner.sync()

    def supports(self, dtype: DType) -> bool:
        return self.inner.supports(dtype)

    # ---- creation and data -------------------------------------------------------------------
    def from_data(self, data: TensorData) -> Prim:
        return self._wrap_dtype(self.inner.from_data(data), data.dtype)

    def from_data_as(self, data: TensorData, dtype: DType) -> Prim:
        return self._wrap_dtype(self.inner.from_data_as(data, dtype), dtype)

    def to_data(self, x: Prim) -> TensorData:
        return self.inner.to_data(self.unwrap(x))

    async def to_data_async(self, x: Prim) -> TensorData:
        return await self.inner.to_data_async(self.unwrap(x))

    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> Prim:
        return self._wrap_dtype(self.inner.full(shape, value, dtype), dtype)

    def uninitialized(self, shape: tuple[int, ...], dtype: DType) -> Prim:
        return self._wrap_dtype(self.inner.uninitialized(shape, dtype), dtype)

    def arange(self, start: int, stop: int, step: int, dtype: DType) -> Prim:
        return self._wrap_dtype(self.inner.arange(start, stop, step, dtype), dtype)

    def random(self, shape: tuple[int, ...], distribution: Distribution, dtype: DType) -> Prim:
        return self._wrap_dtype(self.inner.random(shape, distribution, dtype), dtype)

    def shape(self, x: Prim) -> tuple[int, ...]:
        return self.inner.shape(x.value if x.__class__ is Tracked else x)

    def dtype(self, x: Prim) -> DType:
        return self.inner.dtype(x.value if x.__class__ is Tracked else x)

    # ---- elementwise -------------------------------------------------------------------------
    def unary(self, op: Op, x: Prim) -> Prim:
        if x.__class__ is not Tracked:
            return self.inner.unary(op, x)
        out = self.inner.unary(op, x.value)
        if op.out_kind is not None:
            return out
        if op.grad is None:
            return Tracked(out)
        rule = op.grad[0]

        def backward(g: Prim) -> tuple[Prim]:
            return (rule(self._t(x.value), self._t(out), self._t(g))._prim,)
        return self._record(out, (x,), backward)

    def binary(self, op: Op, a: Prim, b: Prim | float | int | bool) -> Prim:
        if a.__class__ is not Tracked:
            return self.inner.binary(op, a, b)
        bv = b.value if b.__class__ is Tracked else b
        out = self.inner.binary(op, a.value, bv)
        if op.out_kind is not None:
            return out
        if op.grad is None:
            return Tracked(out)
        rule_a, rule_b = op.grad
        scalar = b.__class__ is not Tracked

        def backward(g: Prim) -> tuple[Prim | None, Prim | None]:
            ta, to, tg = self._t(a.value), self._t(out), self._t(g)
            tb = bv if scalar else self._t(bv)
            ga = self._unbroadcast(rule_a(ta, tb, to, tg)._prim, self.inner.shape(a.value))
            if scalar or b.node is None:  # type: ignore[union-attr]  # b is Tracked here
                return ga, None
            gb = self._unbroadcast(rule_b(ta, tb, to, tg)._prim, self.inner.shape(bv))
            return ga, gb
        return self._record(out, (a, b), backward)

    def where(self, mask: Prim, a: Prim, b: Prim) -> Prim:
        if a.__class__ is not Tracked:
            return self.inner.where(mask, a, b)
        out = self.inner.where(mask, a.value, b.value)

        def backward(g: Prim) -> tuple[Prim | None, Prim | None]:
            # as in matmul: no gradient for an operand that needs none (mask_fill's fill value)
            zero = self._zeros(self.inner.shape(g), self.inner.dtype(g))
            ga = gb = None
            if a.node is not None:
                ga = self._unbroadcast(self.inner.where(mask, g, zero), self.inner.shape(a.value))
            if b.__class__ is Tracked and b.node is not None:
                gb = self._unbroadcast(self.inner.where(mask, zero, g), self.inner.shape(b.value))
            return ga, gb
        return self._record(out, (a, b), backward)

    def cast(self, x: Prim, dtype: DType) -> Prim:
        if x.__class__ is not Tracked:
            return self._wrap_dtype(self.inner.cast(x, dtype), dtype)
        out = self.inner.cast(x.value, dtype)
        if dtype.kind is not Kind.FLOAT:
            return out
        src = self.inner.dtype(x.value)
        return self._record(out, (x,), lambda g: (self.inner.cast(g, src),))

    # ---- reductions and linear algebra -------------------------------------------------------
    def reduce(self, op: Reduction, x: Prim, dim: int) -> Prim:
        if x.__class__ is not Tracked:
            return self.inner.reduce(op, x, dim)
        out = self.inner.reduce(op, x.value, dim)
        if op.returns_index:
            return out
        rule = op.grad
        assert rule is not None

        def backward(g: Prim) -> tuple[Prim]:
            return (rule(self._t(x.value), self._t(out), self._t(g), dim)._prim,)
        return self._record(out, (x,), backward)

    def matmul(self, a: Prim, b: Prim) -> Prim:
        out = self.inner.matmul(a.value, b.value)

        def backward(g: Prim) -> tuple[Prim | None, Prim | None]:
            # only the operands that need a gradient get one: a constant operand (an input
            # batch, a resampling matrix) would cost a whole matmul for nothing
            ta, tb, tg = self._t(a.value), self._t(b.value), self._t(g)
            ga = gb = None
            if a.node is not None:
                ga = self._unbroadcast((tg @ tb.swap_dims(-1, -2))._prim,
                                       self.inner.shape(a.value))
            if b.node is not None:
                gb = self._matmul_weight_grad(ta, tg, self.inner.shape(b.value))
            return ga, gb
        return self._record(out, (a, b), backward)

    def _matmul_weight_grad(self, ta: Any, tg: Any, shape: tuple[int, ...]) -> Prim:
        """a^T @ g summed back to b's `shape`. When b is one matrix broadcast over a's batch
        (a linear layer's weight on (batch, seq, d) input), the batch is folded into the rows:
        one (K, B*M) @ (B*M, N) product instead of B products and a sum over them."""
        sa = ta.shape
        if len(sa) > 2 and all(s == 1 for s in shape[:-2]) and any(s != 1 for s in sa[:-2]):
            rows = ta.reshape([-1, sa[-1]])
            grads = tg.reshape([-1, tg.shape[-1]])
            return self.inner.reshape((rows.swap_dims(0, 1) @ grads)._prim, shape)
        return self._unbroadcast((ta.swap_dims(-1, -2) @ tg)._prim, shape)

    def sort(self, x: Prim, dim: int, descending: bool) -> tuple[Prim, Prim]:
        if x.__class__ is not Tracked:
            return self.inner.sort(x, dim, descending)
        values, index = self.inner.sort(x.value, dim, descending)
        shape, dtype = self.inner.shape(x.value), self.inner.dtype(x.value)
        return self._record(values, (x,), lambda g: (
            self.inner.scatter_add(self._zeros(shape, dtype), dim, index, g),)), index

    # ---- movement ----------------------------------------------------------------------------
    def _movement(self, x: Prim, forward: Callable[[Prim], Prim],
                  backward: Callable[[Prim], Prim]) -> Prim:
        if x.__class__ is not Tracked:
            return forward(x)
        return self._record(forward(x.value), (x,), lambda g: (backward(g),))

    def reshape(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        old = self.shape(x)
        return self._movement(x, lambda v: self.inner.reshape(v, shape),
                              lambda g: self.inner.reshape(g, old))

    def permute(self, x: Prim, axes: tuple[int, ...]) -> Prim:
        inverse = tuple(sorted(range(len(axes)), key=lambda i: axes[i]))
        return self._movement(x, lambda v: self.inner.permute(v, axes),
                              lambda g: self.inner.permute(g, inverse))

    def expand(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        old = self.shape(x)
        return self._movement(x, lambda v: self.inner.expand(v, shape),
                              lambda g: self._unbroadcast(g, old))

    def flip(self, x: Prim, axes: tuple[int, ...]) -> Prim:
        return self._movement(x, lambda v: self.inner.flip(v, axes),
                              lambda g: self.inner.flip(g, axes))

    def slice(self, x: Prim, ranges: Sequence[Range]) -> Prim:
        shape, dtype = self.shape(x), self.dtype(x)
        return self._movement(x, lambda v: self.inner.slice(v, ranges),
                              lambda g: self.inner.slice_assign(self._zeros(shape, dtype),
                                                                ranges, g))

    def pad(self, x: Prim, pads: Sequence[tuple[int, int]], value: float | int | bool) -> Prim:
        shape = self.shape(x)
        ranges = [(lo, lo + s, 1) for s, (lo, _) in zip(shape, pads, strict=True)]
        return self._movement(x, lambda v: self.inner.pad(v, pads, value),
                              lambda g: self.inner.slice(g, ranges))

    def slice_assign(self, x: Prim, ranges: Sequence[Range], value: Prim) -> Prim:
        if x.__class__ is not Tracked:
            return self.inner.slice_assign(x, ranges, value)
        out = self.inner.slice_assign(x.value, ranges, value.value)
        vshape, dtype = self.inner.shape(value.value), self.inner.dtype(value.value)
        return self._record(out, (x, value), lambda g: (
            self.inner.slice_assign(g, ranges, self._zeros(vshape, dtype)),
            self.inner.slice(g, ranges)))

    def cat(self, xs: Sequence[Prim], dim: int) -> Prim:
        if xs[0].__class__ is not Tracked:
            return self.inner.cat(xs, dim)
        out = self.inner.cat([x.value for x in xs], dim)
        sizes = [self.shape(x)[dim] for x in xs]

        def backward(g: Prim) -> list[Prim]:
            shape = self.inner.shape(g)
            parts, start = [], 0
            for size in sizes:
                ranges = [(0, s, 1) for s in shape]
                ranges[dim] = (start, start + size, 1)
                parts.append(self.inner.slice(g, ranges))
                start += size
            return parts
        return self._record(out, xs, backward)

    def gather(self, x: Prim, dim: int, index: Prim) -> Prim:
        if x.__class__ is not Tracked:
            return self.inner.gather(x, dim, index)
        shape, dtype = self.shape(x), self.dtype(x)
        return self._record(self.inner.gather(x.value, dim, index), (x,), lambda g: (
            self.inner.scatter_add(self._zeros(shape, dtype), dim, index, g),))

    def scatter_add(self, x: Prim, dim: int, index: Prim, value: Prim) -> Prim:
        if x.__class__ is not Tracked:
            return self.inner.scatter_add(x, dim, index, value)
        out = self.inner.scatter_add(x.value, dim, index, value.value)
        return self._record(out, (x, value), lambda g: (g, self.inner.gather(g, dim, index)))

    def select(self, x: Prim, dim: int, index: Prim) -> Prim:
        if x.__class__ is not Tracked:
            return self.inner.select(x, dim, index)
        shape, dtype = self.shape(x), self.dtype(x)
        return self._record(self.inner.select(x.value, dim, index), (x,), lambda g: (
            self.inner.select_add(self._zeros(shape, dtype), dim, index, g),))

    def select_add(self, x: Prim, dim: int, index: Prim, value: Prim) -> Prim:
        if x.__class__ is not Tracked:
            return self.inner.select_add(x, dim, index, value)
        out = self.inner.select_add(x.value, dim, index, value.value)
        return self._record(out, (x, value), lambda g: (g, self.inner.select(g, dim, index)))

    # ---- user ops (pyrite.extend) ------------------------------------------------------------
    def custom(self, op: CustomOp, inputs: Sequence[Prim], attrs: Mapping[str, Any]) -> Prim:
        # without a backward or a kernel of its own the composite runs here, so its own ops
        # record the graph; otherwise the inner backend runs the op (its kernel) and the rule
        # is the user's backward, or the composite's derivative (computed again in backward)
        tracked = [self.is_tracked(x) for x in inputs]
        if any(tracked) and op.custom_backward is None and op.kernel_on(self) is None:
            return op.run_composite(self, inputs, attrs)
        values = [self.unwrap(x) for x in inputs]
        out = self.inner.custom(op, values, attrs)
        return self._record(out, inputs, lambda g: op.grads(self.inner, values, out, g, attrs,
                                                              tracked))

    # ---- accelerated composites with their own rules -----------------------------------------
    def softmax(self, x: Prim, dim: int) -> Prim:
        out = self.inner.softmax(x.value, dim)
        return self._record(out, (x,), lambda g: (self.inner.softmax_grad(out, g, dim),))

    def layer_norm(self, x: Prim, gamma: Prim, beta: Prim, epsilon: float) -> Prim:
        inner, unwrap = self.inner, self.unwrap
        xv, gv = unwrap(x), unwrap(gamma)
        out = inner.layer_norm(xv, gv, unwrap(beta), epsilon)
        return self._record(out, (x, gamma, beta),
                            lambda g: inner.layer_norm_grad(xv, gv, g, epsilon))

    def log_softmax(self, x: Prim, dim: int) -> Prim:
        out = self.inner.log_softmax(x.value, dim)

        def backward(g: Prim) -> tuple[Prim]:
            to, tg = self._t(out), self._t(g)
            return ((tg - to.exp() * tg.sum_dim(dim))._prim,)
        return self._record(out, (x,), backward)
