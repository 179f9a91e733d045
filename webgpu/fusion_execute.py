"""Fusion's execution: a `Plan` and one stream's tensors -> the kernels launched and results.

`Executor` runs a plan's kernels in order: products and convs (with their epilogue group in the
store where the plan allows), fused reductions and softmax (fused_rows.py), and elementwise
groups, which may write an output into an input's buffer when reference counts show that
nothing but the stream can still see it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..dtype import DType
from . import conv, fused_rows, linalg
from .codegen import WORKGROUP, KernelKey, scalar_bits, storage_itemsize, storage_type
from .fused import DenseEpilogue, Layout, fused_source
from .fusion_plan import _CONVS, ConvGradOp, ConvOp, KernelPlan, Node, Plan
from .tensor import GpuTensor

if TYPE_CHECKING:
    from .fusion import Fusion


# ---- reference counts: "nothing but the stream holds this" ------------------------------------
def _count(items: Any, i: int) -> int:
    return sys.getrefcount(items[i])


def _block_count(items: Any, i: int) -> int:
    return sys.getrefcount(items[i].block)


class _Holder:
    def __init__(self, block: object) -> None:
        self.block = block


_SOLE = _count([object()], 0)  # the count of an object one list holds, measured the same way
_SOLE_BLOCK = _block_count([_Holder(object())], 0)


@dataclass
class Inspection:
    """What `inspect()` saw: one entry per kernel a flush launched."""

    groups: list[dict[str, Any]] = field(default_factory=list)
    flushes: int = 0

    @property
    def kernels(self) -> int:
        return len(self.groups)


_INSPECTIONS: list[Inspection] = []


@contextmanager
def inspect() -> Iterator[Inspection]:
    """Record the kernels every Fusion backend launches inside the block (a test hook)::

        with fusion.inspect() as seen:
            y = (x * 2 + 1).relu().to_data()
        assert seen.kernels == 1
    """
    seen = Inspection()
    _INSPECTIONS.append(seen)
    try:
        yield seen
    finally:
        _INSPECTIONS.remove(seen)


# ---- execution: a plan + this stream's tensors -> results ----------------------------------
class Executor:
    """Runs one flush's plan (see the module docstring)."""

    def __init__(self, fusion: Fusion, nodes: list[Node], leaves: list[GpuTensor],
                 scalars: list[tuple[float | int | bool, DType]], plan: Plan,
                 alive: tuple[int, ...]) -> None:
        self.fusion = fusion
        self.k = fusion.inner.kernels
        self.nodes = nodes
        self.leaves = leaves
        self.scalars = scalars
        self.plan = plan
        self.alive = set(alive)
        self.results: dict[int, GpuTensor] = {}
        self.inspections = list(_INSPECTIONS)

    def run(self) -> dict[int, GpuTensor]:
        done: set[int] = set()  # elementwise kernels that ran as a matmul's epilogue
        for i, kp in enumerate(self.plan.kernels):
            self.index = i
            if i in done:
                continue
            if kp.kind == "matmul":
                a, b = (self.leaves[s] for _, s in kp.sources)
                if kp.epilogue >= 0 and self._matmul_epilogue(kp, a, b):
                    done.add(kp.epilogue)
                    continue
                self.results[kp.node] = linalg.matmul(self.k, a, b)
                self._saw(kp, "matmul", 0)
            elif kp.kind in _CONVS:
                if kp.epilogue >= 0 and self._conv_epilogue(kp):
                    done.add(kp.epilogue)
                    continue
                out = self._conv(kp, None)
                assert out is not None  # only a requested epilogue can be declined
                self.results[kp.node] = out
                self._saw(kp, kp.kind, 0)
            elif kp.kind == "reduce":
                fused_rows.run_reduce(self, kp)
            elif kp.kind == "softmax":
                epilogue = self._epilogue(kp) if kp.epilogue >= 0 else None
                out = fused_rows.run_softmax(self, kp, epilogue)
                if epilogue is not None and self._with_epilogue(kp, out):
                    done.add(kp.epilogue)
            else:
                self._elementwise(kp)
        return self.results

    def _source(self, source: tuple[str, int]) -> GpuTensor:
        kind, i = source
        return self.leaves[i] if kind == "l" else self.results[i]

    def _scalar_words(self, kp: KernelPlan) -> list[int]:
        return [scalar_bits(*self.scalars[s]) for s in kp.scalars]

    def _pipeline(self, key: KernelKey, make: Callable[[], str]) -> Any:
        k = self.k
        found = k.cached(key)
        stats = self.fusion.stats
        if found is not None:
            stats.pipeline_hits += 1
            return found
        stats.pipeline_misses += 1
        return k.pipeline(key, make())

    def _saw(self, kp: KernelPlan, kind: str, inplace: int, vec4: bool = False) -> None:
        for seen in self.inspections:
            ops = [f"{s.kind}:{s.op}" if s.op else s.kind
                   for s in (kp.program.steps if kp.program else ())]
            seen.groups.append({"kind": kind, "ops": ops, "inputs": len(kp.sources),
                                "outputs": len(kp.outputs) or 1, "inplace": inplace,
                                "vec4": vec4, "shape": self.nodes[kp.node].shape})

    def _epilogue(self, kp: KernelPlan) -> DenseEpilogue | None:
        """The epilogue group of a matmul or conv2d as the kernel's store step; None where
        it computes in f16 (the two kernels are f32 only: both then run as planned)."""
        group = self.plan.kernels[kp.epilogue]
        program = group.program
        assert program is not None
        f16 = self.plan.pipelines.get(("f16", kp.epilogue))
        if f16 is None:  # a fact of the plan: worked out once
            f16 = self.plan.pipelines[("f16", kp.epilogue)] = any(
                d is DType.F16 for d in (*program.inputs, *program.scalars,
                                         *(s.dtype for s in program.steps)))
        if f16:
            return None
        shape = self.nodes[kp.node].shape
        words = list(shape)
        views = []
        for j, source in enumerate(group.sources):
            if j == kp.acc:
                continue
            g = self._source(source)
            v = g if g.shape == shape else g.expanded(shape)
            words += [v.offset, *v.strides]
            views.append(v)
        words += self._scalar_words(group)
        return DenseEpilogue(program, kp.acc, group.out_steps[0], len(shape), tuple(views),
                             words)

    def _with_epilogue(self, kp: KernelPlan, out: GpuTensor | None) -> bool:
        """Book the epilogue group's output, computed by `kp`'s kernel (False: not run)."""
        if out is None:
            return False
        group = self.plan.kernels[kp.epilogue]
        self.results[group.outputs[0]] = out
        stats = self.fusion.stats
        stats.fused_kernels += 1
        stats.fused_ops += len(group.program)  # type: ignore[arg-type]
        self._saw(group, f"{kp.kind}+epilogue", 0)
        return True

    def _matmul_epilogue(self, kp: KernelPlan, a: GpuTensor, b: GpuTensor) -> bool:
        """The product and its epilogue group as one kernel; False where the matmul kernels
        take no epilogue (then both run as planned)."""
        epilogue = self._epilogue(kp)
        out = None if epilogue is None else linalg.matmul_epilogue(self.k, a, b, epilogue)
        return self._with_epilogue(kp, out)

    def _conv(self, kp: KernelPlan, epilogue: DenseEpilogue | None) -> GpuTensor | None:
        """The conv (or its input gradient) of `kp`, with `epilogue` in its store; None where
        the kernel conv.py picks takes no epilogue."""
        node = self.nodes[kp.node]
        op: ConvOp = node.op
        x, w, *rest = (self.leaves[s] for _, s in kp.sources)
        if isinstance(op, ConvGradOp):
            return conv.conv2d_input_grad_fused(self.k, x, w, op.input_shape, op.stride,
                                                op.padding, op.dilation, op.groups, epilogue)
        return conv.conv2d(self.k, x, w, rest[0] if rest else None, op.stride, op.padding,
                           op.dilation, op.groups, epilogue)

    def _conv_epilogue(self, kp: KernelPlan) -> bool:
        """The conv and its epilogue group as one kernel."""
        epilogue = self._epilogue(kp)
        out = None if epilogue is None else self._conv(kp, epilogue)
        return self._with_epilogue(kp, out)

    # ---- elementwise groups ----------------------------------------------------------------
    def _inplace_ok(self, source: tuple[str, int], shape: tuple[int, ...], dtype: DType) -> bool:
        """Whether an output of `shape` and `dtype` may overwrite `source`: this
        kernel is its only reader, it is a dense tensor of that shape stored as the same WGSL
        type (the kernel reads it through the output's binding), and nothing but the
        stream holds it or another view of its buffer (reference counts, taken before this
        flush makes views of it)."""
        if self.plan.uses.get(source, 0) != 1:
            return False
        kind, i = source
        if kind == "h" and i in self.alive:
            return False
        container: Any = self.results if kind == "h" else self.leaves
        if _count(container, i) > _SOLE or _block_count(container, i) > _SOLE_BLOCK:
            return False
        g = container[i]
        return (g.shape == shape and g.offset == 0 and g.is_contiguous
                and storage_type(g.dtype) == storage_type(dtype))

    def _elementwise(self, kp: KernelPlan) -> None:
        k = self.k
        program = kp.program
        assert program is not None
        shape = self.nodes[kp.node].shape
        n = math.prod(shape)
        facts = self.plan.pipelines.get(("facts", self.index))
        if facts is None:  # what depends on the plan only, worked out once
            out_dtypes = tuple(program.steps[s].dtype for s in kp.out_steps)
            item_bytes = sum(map(storage_itemsize, (*program.inputs, *out_dtypes)))
            words4 = all(storage_itemsize(d) == 4 for d in (*program.inputs, *out_dtypes))
            facts = self.plan.pipelines[("facts", self.index)] = (out_dtypes, item_bytes, words4)
        out_dtypes, item_bytes, words4 = facts
        # in place: decided before any view is made (a view would count as a reference)
        inplace = [-1] * len(out_dtypes)
        taken: set[int] = set()
        if n:
            for o, dt in enumerate(out_dtypes):
                for j, source in enumerate(kp.sources):
                    if j not in taken and self._inplace_ok(source, shape, dt):
                        inplace[o] = j
                        taken.add(j)
                        break
        views = []
        flat_all = aligned = True
        for source in kp.sources:
            g = self._source(source)
            v = g if g.shape == shape else g.expanded(shape)
            views.append(v)
            flat_all = flat_all and v.is_contiguous
            aligned = aligned and v.offset % 4 == 0
        flat = tuple(v.is_contiguous for v in views) if not flat_all else (True,) * len(views)
        outs = []
        for o, dt in enumerate(out_dtypes):
            j = inplace[o]
            if j >= 0:
                outs.append(GpuTensor.dense(views[j].block, shape, dt))
            else:
                outs.append(k.empty(shape, dt, "fused"))
        results = self.results
        for node, out in zip(kp.outputs, outs, strict=True):
            results[node] = out
        vec4 = flat_all and aligned and words4 and n % 4 == 0
        written = len(taken)
        if self.inspections:
            self._saw(kp, "elementwise", written, vec4)
        if not n:
            return
        stats = self.fusion.stats
        stats.fused_kernels += 1
        stats.fused_ops += len(program)
        stats.inplace += written
        stats.bytes_moved += n * item_bytes
        rank = 0 if flat_all else len(shape)
        key_facts = (self.index, rank, flat, tuple(inplace), vec4)
        pipeline = self.plan.pipelines.get(key_facts)
        if pipeline is None:
            layout = Layout(rank, flat, kp.out_steps, tuple(inplace), vec4)
            key = KernelKey("fused", f"{len(program)} ops", (*program.inputs, *out_dtypes),
                            rank, (program, layout))
            pipeline = self.plan.pipelines[key_facts] = self._pipeline(
                key, lambda: fused_source(program, layout))
        else:
            stats.pipeline_hits += 1
        words = [n]
        if not flat_all:
            words += shape
        words += [0] * len(outs)  # outputs are dense at offset 0
        for v, f in zip(views, flat, strict=True):
            words.append(v.offset)
            if not f:
                words += v.strides
        if kp.scalars:
            words += self._scalar_words(kp)
        bindings = [k.meta(words), *(o.block.buffer for o in outs)]
        bindings += [v.block.buffer for j, v in enumerate(views) if j not in taken]
        threads = n // 4 if vec4 else n
        k.launch(pipeline, bindings, k.grid(-(-threads // WORKGROUP)))

__all__ = ["Executor", "Inspection", "inspect"]
