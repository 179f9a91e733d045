"""Fusion's planning: the recorded stream (`Node`s) and what a flush of it launches (`Plan`).

`analyse` is a function of the stream's structure only (ops, dtypes, shapes, which results the
program still holds), so `Fusion` caches its answer by the stream's signature. It decides the
heavy kernels (matmul, conv, reductions, softmax) in stream order, the elementwise groups by
shape, the nodes cut out so that no kernel binds more buffers than WebGPU guarantees, and the
group that may run as a heavy kernel's epilogue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..dtype import DType
from .fused import INPUT, SCALAR, STEP, Program, Ref, Step

MAX_BINDINGS = 8  # storage buffers per kernel that every WebGPU device allows
_MAX_READS = MAX_BINDINGS - 2  # a kernel's inputs besides its metadata and one output
_HEAVY = frozenset({"reduce", "softmax", "matmul", "conv2d", "conv2d_input_grad"})
_CONVS = ("conv2d", "conv2d_input_grad")  # heavy nodes of conv.py's kernels
_ROWS = ("reduce", "softmax")  # heavy nodes that compute their input's producers (fused_rows)
#: bindings a heavy kernel uses before its epilogue's metadata and inputs (softmax: its
#: metadata and output, and the inputs of the producers it computes)
_EPILOGUE_BASE = {"matmul": 4, "conv2d": 5, "conv2d_input_grad": 5, "softmax": 2}


class Node:
    """One recorded op. `args` holds Nodes (pending results), leaf slots (ints >= 0: tensors
    already in memory) and scalar slots (ints < 0: -1 - k)."""

    __slots__ = ("kind", "op", "args", "dtype", "shape", "index", "dim")

    def __init__(self, kind: str, op: Any, args: tuple[Any, ...], dtype: DType,
                 shape: tuple[int, ...], index: int, dim: int = -1) -> None:
        self.kind = kind
        self.op = op
        self.args = args
        self.dtype = dtype
        self.shape = shape
        self.index = index
        self.dim = dim


@dataclass(frozen=True)
class ConvOp:
    """The parameters of a recorded conv2d (its `name` keys plans)."""

    stride: tuple[int, int]
    padding: tuple[tuple[int, int], tuple[int, int]]
    dilation: tuple[int, int]
    groups: int
    bias: bool

    @cached_property
    def name(self) -> str:  # formatted once: every recorded call of the layer keys by it
        return f"conv2d{self.stride}{self.padding}{self.dilation}{self.groups}{self.bias}"


@dataclass(frozen=True)
class ConvGradOp(ConvOp):
    """A recorded conv2d input gradient: the conv's parameters and its input's shape."""

    input_shape: tuple[int, ...] = ()

    @cached_property
    def name(self) -> str:
        return "input_grad" + super().name + str(self.input_shape)


@dataclass(frozen=True)
class KernelPlan:
    """One kernel of a flush. `kind`: "reduce", "matmul" or "elementwise". `sources` name the
    inputs: ("l", slot) a leaf, ("h", node) a heavy node's result. `node` is the heavy node, or
    the node whose shape is the iteration shape of an elementwise group; `outputs` the nodes an
    elementwise group writes; `scalars` the stream's scalar slots in program order."""

    kind: str
    node: int
    sources: tuple[tuple[str, int], ...] = ()
    program: Program | None = None
    result: int = -1  # reduce: the step whose values are reduced
    outputs: tuple[int, ...] = ()
    out_steps: tuple[int, ...] = ()
    scalars: tuple[int, ...] = ()
    #: matmul: the elementwise kernel (its index in the plan) that may run as this product's
    #: epilogue, and which of that kernel's inputs is the product; -1: none
    epilogue: int = -1
    acc: int = -1


@dataclass(frozen=True)
class Plan:
    kernels: tuple[KernelPlan, ...]
    uses: dict[tuple[str, int], int]  # how many kernels read each source
    #: a memo of the plan: (kernel index, layout facts) -> pipeline, so a repeated stream skips
    #: building kernel keys, and facts of its kernels worked out once ("facts", "f16" entries)
    pipelines: dict[tuple[Any, ...], Any] = field(default_factory=dict)


# ---- analysis: a stream -> a plan ---------------------------------------------------------------
class _ProgramBuilder:
    """Collects the elementwise nodes under some roots into one `Program`."""

    def __init__(self, cuts: set[int]) -> None:
        self.cuts = cuts  # nodes written by a kernel of their own: read from memory here
        self.steps: list[Step] = []
        self.step_of: dict[int, int] = {}
        self.sources: list[tuple[str, int]] = []
        self.source_dtypes: list[DType] = []
        self.source_of: dict[tuple[str, int], int] = {}
        self.scalar_slots: list[int] = []
        self.scalar_dtypes: list[DType] = []

    def _input(self, source: tuple[str, int], dtype: DType) -> Ref:
        j = self.source_of.get(source)
        if j is None:
            j = self.source_of[source] = len(self.sources)
            self.sources.append(source)
            self.source_dtypes.append(dtype)
        return (INPUT, j)

    def ref(self, arg: Node | int, dtype: DType, leaf_dtype: Callable[[int], DType]) -> Ref:
        if type(arg) is Node:
            return self.visit(arg, leaf_dtype)
        assert isinstance(arg, int)
        if arg >= 0:
            return self._input(("l", arg), leaf_dtype(arg))
        self.scalar_slots.append(-1 - arg)
        self.scalar_dtypes.append(dtype)
        return (SCALAR, len(self.scalar_slots) - 1)

    def visit(self, node: Node, leaf_dtype: Callable[[int], DType], root: bool = False) -> Ref:
        found = self.step_of.get(node.index)
        if found is not None:
            return (STEP, found)
        if node.kind in _HEAVY or (node.index in self.cuts and not root):
            return self._input(("h", node.index), node.dtype)
        scalar_dtype = node.dtype
        if node.kind == "binary":
            first = node.args[0]
            scalar_dtype = first.dtype if type(first) is Node else leaf_dtype(first)
        args = tuple(self.ref(a, scalar_dtype, leaf_dtype) for a in node.args)
        op = node.op.name if node.op is not None else ""
        self.steps.append(Step(node.kind, op, node.dtype, args))
        self.step_of[node.index] = len(self.steps) - 1
        return (STEP, len(self.steps) - 1)

    def program(self) -> Program:
        return Program(tuple(self.steps), tuple(self.source_dtypes), tuple(self.scalar_dtypes))


def _reads(nodes: list[Node], needed: list[bool]) -> tuple[dict[int, frozenset[Any]], set[int]]:
    """The buffers each needed elementwise node's kernel would read, and the nodes cut out to be
    written first so that no kernel reads more than `_MAX_READS` buffers (WebGPU guarantees
    only `MAX_BINDINGS` storage buffers per kernel; a sum of 40 tensors must not be one
    kernel): where a node would read too many, its elementwise arguments are written first."""
    reads: dict[int, frozenset[Any]] = {}
    cuts: set[int] = set()
    for n in nodes:
        if not needed[n.index] or n.kind in _HEAVY:
            continue
        found: set[Any] = set()
        for a in n.args:
            if type(a) is Node:
                if a.kind in _HEAVY or a.index in cuts:
                    found.add(("h", a.index))
                else:
                    found |= reads[a.index]
            elif a >= 0:
                found.add(("l", a))
        if len(found) > _MAX_READS:
            found = set()
            for a in n.args:
                if type(a) is Node:
                    if a.kind not in _HEAVY:
                        cuts.add(a.index)
                    found.add(("h", a.index))
                elif a >= 0:
                    found.add(("l", a))
        reads[n.index] = frozenset(found)
    return reads, cuts


def analyse(nodes: list[Node], leaf_dtypes: tuple[DType, ...], alive: tuple[int, ...]) -> Plan:
    """Which kernels a flush launches, in order (a function of the stream's structure): heavy
    nodes and cut-out intermediates in stream order, then the held elementwise results grouped
    by shape (a group split where it would bind too many buffers)."""
    needed = [False] * len(nodes)
    for i in alive:
        needed[i] = True
    for i in range(len(nodes) - 1, -1, -1):
        if needed[i]:
            for a in nodes[i].args:
                if type(a) is Node:
                    needed[a.index] = True
    reads, cuts = _reads(nodes, needed)
    for n in nodes:  # a reduction reading too many buffers takes its input from memory
        if n.kind in _ROWS and needed[n.index] and type(n.args[0]) is Node:
            arg = n.args[0]
            if arg.kind not in _HEAVY and len(reads[arg.index]) > _MAX_READS:
                cuts.add(arg.index)
    leaf_dtype = leaf_dtypes.__getitem__

    def group(outs: list[Node]) -> KernelPlan:
        b = _ProgramBuilder(cuts)
        steps = tuple(b.visit(n, leaf_dtype, root=True)[1] for n in outs)
        return KernelPlan("elementwise", outs[0].index, tuple(b.sources), b.program(),
                          outputs=tuple(n.index for n in outs), out_steps=steps,
                          scalars=tuple(b.scalar_slots))

    kernels: list[KernelPlan] = []
    for n in nodes:
        if n.index in cuts:
            kernels.append(group([n]))
        if not needed[n.index] or n.kind not in _HEAVY:
            continue
        if n.kind in ("matmul", *_CONVS):
            kernels.append(KernelPlan(n.kind, n.index, tuple(("l", a) for a in n.args)))
            continue
        (arg,) = n.args
        if type(arg) is Node and arg.kind not in _HEAVY and arg.index not in cuts:
            b = _ProgramBuilder(cuts)
            kind, result = b.visit(arg, leaf_dtype, root=True)
            kernels.append(KernelPlan(n.kind, n.index, tuple(b.sources), b.program(), result,
                                      scalars=tuple(b.scalar_slots)))
        else:
            source = ("h", arg.index) if type(arg) is Node else ("l", arg)
            kernels.append(KernelPlan(n.kind, n.index, (source,)))
    groups: dict[tuple[tuple[int, ...], int], list[Node]] = {}
    held = set(alive)
    for i in alive:
        n = nodes[i]
        if n.kind not in _HEAVY:
            # a result of one conv or product (that the program does not hold) groups apart
            # from other results of its shape: alone it may run as that kernel's epilogue
            # (SqueezeNet's two expand convs' ReLUs, one group, left both without theirs)
            products = [j for kind, j in reads[n.index]
                        if kind == "h" and nodes[j].kind in _EPILOGUE_BASE]
            apart = len(products) == 1 and products[0] not in held
            groups.setdefault((n.shape, products[0] if apart else -1), []).append(n)
    for outs in groups.values():
        chunk: list[Node] = []
        chunk_reads: frozenset[Any] = frozenset()
        for n in outs:
            more = chunk_reads | reads[n.index]
            if chunk and 1 + len(chunk) + 1 + len(more) > MAX_BINDINGS:
                kernels.append(group(chunk))
                chunk, more = [], reads[n.index]
            chunk.append(n)
            chunk_reads = more
        kernels.append(group(chunk))
    uses: dict[tuple[str, int], int] = {}
    for kp in kernels:
        for s in kp.sources:
            uses[s] = uses.get(s, 0) + 1
    for i, kp in enumerate(kernels):
        if kp.kind in _EPILOGUE_BASE and (kp.kind != "softmax" or kp.program is not None):
            kernels[i] = _with_epilogue(kp, kernels, nodes, uses, alive)
    return Plan(tuple(kernels), uses)


def _with_epilogue(kp: KernelPlan, kernels: list[KernelPlan], nodes: list[Node],
                   uses: dict[tuple[str, int], int], alive: tuple[int, ...]) -> KernelPlan:
    """`kp` (a matmul, conv2d or fused softmax) with the elementwise kernel that may run as its
    epilogue: the one group that reads its result (nothing else does, nor does the program hold
    it), writing one f32 output of the result's shape, whose other inputs exist before it runs,
    within the binding limit."""
    m = kp.node
    source = ("h", m)
    if m in alive or uses.get(source) != 1 or nodes[m].dtype is not DType.F32:
        return kp
    for g, group in enumerate(kernels):
        if source not in group.sources:
            continue
        if group.kind != "elementwise" or len(group.outputs) != 1:
            return kp
        assert group.program is not None
        own = _EPILOGUE_BASE[kp.kind] + (len(kp.sources) if kp.kind == "softmax" else 0)
        if (nodes[group.node].shape != nodes[m].shape
                # the kernel's own bindings, the epilogue's metadata and other inputs
                or own + len(group.sources) > MAX_BINDINGS
                or group.program.steps[group.out_steps[0]].dtype is not DType.F32
                or any(kind == "h" and i > m for kind, i in group.sources)):
            return kp
        return KernelPlan(kp.kind, m, kp.sources, kp.program, kp.result, scalars=kp.scalars,
                          epilogue=g, acc=group.sources.index(source))
    return kp


__all__ = ["MAX_BINDINGS", "ConvGradOp", "ConvOp", "KernelPlan", "Node", "Plan", "analyse"]
