"""`Fusion(inner)`: a backend decorator over `WebGpu` that records ops lazily and runs each group
of elementwise ops as ONE generated kernel.

Recording. Elementwise ops (unary, binary with broadcast tensors or scalars, casts, `where`,
`full`, `expand`) and the two heavy ops that can absorb them (reductions along a dim, matmul)
return a `FusedTensor` holding a `Node` of the stream instead of running. Every other op of the
contract (conv, pools, movement that is not a view, sort, gather, ...) first *flushes* the
stream and then runs on the inner backend, as does a readback (`to_data`) or `sync()`; a stream
of `MAX_STREAM` nodes flushes by itself.

Flushing. The tensors of the stream that the program still holds (a weak reference tells) are
the outputs; the others died in the stream and are never written to memory. Heavy nodes run in
stream order: a reduction computes the elementwise ops that produce its input as it reads them
(`sum_dim(x * x)` reads x once, writes nothing else). Then the held elementwise results are
grouped by shape and each group becomes one kernel with several outputs (`fused.py` writes the
WGSL), vec4 when every view allows. An output may overwrite an input in place when nothing but
this kernel can still see that input (its only references are the stream's: CPython reference
counts tell, as Burn's ownership does) and the input is read at the element it is written to.

Caching. A kernel is keyed by its structure (ops, dtypes, layout), never by shapes: shapes,
strides, offsets and scalars travel as metadata. The analysis of a whole stream (what is an
output, the groups, the programs) is cached by the stream's signature, so a training step that
repeats the same ops skips it and only fills in metadata and bindings.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..backend.base import Backend
from ..backend.reduce import Reduction
from ..backend.registry import Op
from ..backend.unary import RELU
from ..capture.traced import keep_float, keep_int
from ..data import TensorData
from ..dtype import DType, Kind
from ..errors import BackendUnavailable, DeviceMemoryError, PyriteError
from . import conv, fused_rows, linalg, reduction
from .codegen import WORKGROUP, KernelKey, scalar_bits, storage_itemsize, storage_type
from .fused import (
    INPUT,
    SCALAR,
    STEP,
    DenseEpilogue,
    Layout,
    Program,
    Ref,
    Step,
    fused_source,
)
from .tensor import GpuTensor

MAX_STREAM = 192  # nodes recorded before a flush happens by itself
MAX_BINDINGS = 8  # storage buffers per kernel that every WebGPU device allows
_MAX_READS = MAX_BINDINGS - 2  # a kernel's inputs besides its metadata and one output
_HEAVY = frozenset({"reduce", "softmax", "matmul", "conv2d", "conv2d_input_grad"})
_CONVS = ("conv2d", "conv2d_input_grad")  # heavy nodes of conv.py's kernels
_ROWS = ("reduce", "softmax")  # heavy nodes that compute their input's producers (fused_rows)
#: bindings a heavy kernel uses before its epilogue's metadata and inputs (softmax: its
#: metadata and output, and the inputs of the producers it computes)
_EPILOGUE_BASE = {"matmul": 4, "conv2d": 5, "conv2d_input_grad": 5, "softmax": 2}
_PLANS = 512  # stream plans kept


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

    @property
    def name(self) -> str:
        return f"conv2d{self.stride}{self.padding}{self.dilation}{self.groups}{self.bias}"


@dataclass(frozen=True)
class ConvGradOp(ConvOp):
    """A recorded conv2d input gradient: the conv's parameters and its input's shape."""

    input_shape: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return "input_grad" + super().name + str(self.input_shape)


class FusedTensor:
    """The primitive of `Fusion`: a tensor in memory (`value`) or a pending result (`node`)."""

    __slots__ = ("shape", "dtype", "value", "node", "error", "__weakref__")

    def __init__(self, shape: tuple[int, ...], dtype: DType, value: GpuTensor | None,
                 node: Node | None = None) -> None:
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.node = node
        self.error: BaseException | None = None  # why the flush that was to compute it failed

    def __repr__(self) -> str:
        state = "pending" if self.node is not None else "in memory"
        return f"FusedTensor(shape={self.shape}, dtype={self.dtype}, {state})"


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


# ---- plans --------------------------------------------------------------------------------------
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
    #: (kernel index, layout facts) -> pipeline: a repeated stream skips building kernel keys
    pipelines: dict[tuple[Any, ...], Any] = field(default_factory=dict)


@dataclass
class FusionStats:
    """Counters of a `Fusion` backend (`pyrite.webgpu.stats()` shows them)."""

    ops_recorded: int = 0
    flushes: int = 0
    fused_kernels: int = 0  # generated kernels launched (elementwise groups, fused reductions)
    fused_ops: int = 0  # ops those kernels computed
    plan_hits: int = 0
    plan_misses: int = 0
    pipeline_hits: int = 0
    pipeline_misses: int = 0
    inplace: int = 0  # outputs written into an input's buffer
    bytes_moved: int = 0  # bytes the generated kernels read and wrote

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


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


# ---- the decorator ------------------------------------------------------------------------------
def _forward(method: str) -> Callable[..., Any]:
    def forward(self: Fusion, *args: Any, **kwargs: Any) -> Any:
        args = tuple(_realised(self, a) for a in args)
        kwargs = {k: _realised(self, v) for k, v in kwargs.items()}
        return _wrapped(getattr(self.inner, method)(*args, **kwargs))
    forward.__name__ = method
    forward.__doc__ = f"Flush, then `{method}` on the inner backend."
    return forward


class Fusion(Backend):
    """Lazy elementwise fusion over a `WebGpu` backend (see the module docstring)."""

    def __init__(self, inner: Backend, name: str | None = None) -> None:
        from .backend import WebGpu
        if not isinstance(inner, WebGpu):
            raise BackendUnavailable(f"fusion<{inner.name}>: Fusion generates WGSL kernels and "
                                     f"wraps a webgpu backend; use fusion<webgpu>")
        self.inner = inner
        self.name = name or f"fusion<{inner.name}>"
        self.float_dtype = inner.float_dtype
        self.int_dtype = inner.int_dtype
        self.stats = FusionStats()
        self._plans: dict[tuple[Any, ...], Plan] = {}
        self._new_stream()

    def _new_stream(self) -> None:
        self._nodes: list[Node] = []
        self._refs: list[weakref.ref[FusedTensor]] = []
        self._leaves: list[GpuTensor] = []
        self._slot: dict[int, int] = {}
        self._scalars: list[tuple[float | int | bool, DType]] = []
        self._sig: list[tuple[Any, ...]] = []
        self._shapes: dict[tuple[int, ...], int] = {}

    def __getattr__(self, name: str) -> Any:
        # what WebGpu offers beyond the contract (kernels, memory_stats, adapter, reset, ...)
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # ---- recording -------------------------------------------------------------------------
    def _leaf(self, g: GpuTensor) -> int:
        slot = self._slot.get(id(g))
        if slot is None:
            slot = self._slot[id(g)] = len(self._leaves)
            self._leaves.append(g)
        return slot

    def _arg(self, x: FusedTensor) -> Node | int:
        node = x.node
        if node is not None:
            return node
        return self._leaf(x.value)  # type: ignore[arg-type]

    def _scalar(self, value: float | int | bool, dtype: DType) -> int:
        self._scalars.append((value, dtype))
        return -len(self._scalars)

    def _record(self, kind: str, op: Any, args: tuple[Any, ...], dtype: DType,
                shape: tuple[int, ...], dim: int = -1) -> FusedTensor:
        nodes = self._nodes
        node = Node(kind, op, args, dtype, shape, len(nodes), dim)
        out = FusedTensor(shape, dtype, None, node)
        nodes.append(node)
        self._refs.append(weakref.ref(out))
        shapes = self._shapes
        cls = shapes.get(shape)
        if cls is None:
            cls = shapes[shape] = len(shapes)
        codes = tuple(a.index * 3 if type(a) is Node else
                      (a * 3 + 1 if a >= 0 else -a * 3 + 2) for a in args)
        self._sig.append((kind, op.name if op is not None else "", dtype.name, cls, codes, dim))
        self.stats.ops_recorded += 1
        if len(nodes) >= MAX_STREAM:
            self.flush()
        return out

    def _value(self, x: FusedTensor) -> GpuTensor:
        """x in memory (flushing the stream if x is pending)."""
        if x.node is not None:
            self.flush()
        if x.value is None:
            raise PyriteError(f"{self.name}: this tensor was never computed: the kernels that "
                              f"were to compute it failed ({x.error}); compute it again"
                              ) from x.error
        return x.value

    def _check_size(self, shape: tuple[int, ...], dtype: DType, op: str) -> None:
        """Fail now, not at the flush, when a result could not fit in one buffer."""
        nbytes = math.prod(shape) * storage_itemsize(dtype)
        limit = self.inner.kernels.runtime.limits.max_allocation
        if nbytes > limit:
            raise DeviceMemoryError(
                f"{op}: a buffer of {nbytes} bytes exceeds this adapter's limit of {limit} "
                f"bytes per buffer (max_buffer_size / max_storage_buffer_binding_size); split "
                f"the tensor or use a smaller batch")

    @staticmethod
    def _wrap(g: GpuTensor) -> FusedTensor:
        return FusedTensor(g.shape, g.dtype, g)

    # ---- the contract: recorded ops --------------------------------------------------------
    def unary(self, op: Op, x: FusedTensor) -> FusedTensor:
        dtype = DType.BOOL if op.out_kind is Kind.BOOL else x.dtype
        return self._record("unary", op, (self._arg(x),), dtype, x.shape)

    def binary(self, op: Op, a: FusedTensor, b: FusedTensor | float | int | bool) -> FusedTensor:
        dtype = DType.BOOL if op.out_kind is Kind.BOOL else a.dtype
        if isinstance(b, FusedTensor):
            shape = a.shape
            if a.shape != b.shape:
                shape = tuple(max(m, n) for m, n in zip(a.shape, b.shape, strict=True))
                self._check_size(shape, dtype, op.name)
            return self._record("binary", op, (self._arg(a), self._arg(b)), dtype, shape)
        value = b if a.dtype.kind is Kind.FLOAT else keep_int(b)
        return self._record("binary", op, (self._arg(a), self._scalar(value, a.dtype)), dtype,
                            a.shape)

    def where(self, mask: FusedTensor, a: FusedTensor, b: FusedTensor) -> FusedTensor:
        shape = tuple(max(s) for s in zip(mask.shape, a.shape, b.shape, strict=True))
        self._check_size(shape, a.dtype, "where")
        return self._record("where", None, (self._arg(mask), self._arg(a), self._arg(b)),
                            a.dtype, shape)

    def cast(self, x: FusedTensor, dtype: DType) -> FusedTensor:
        dtype = self.inner.stored_dtype(dtype)
        if dtype is x.dtype:
            return x
        return self._record("cast", None, (self._arg(x),), dtype, x.shape)

    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> FusedTensor:
        dtype = self.inner.stored_dtype(dtype)
        value = keep_float(value) if dtype.kind is Kind.FLOAT else keep_int(value)
        self._check_size(tuple(shape), dtype, "full")
        return self._record("fill", None, (self._scalar(value, dtype),), dtype, tuple(shape))

    def expand(self, x: FusedTensor, shape: tuple[int, ...]) -> FusedTensor:
        if x.node is None:
            return self._wrap(x.value.expanded(shape))  # type: ignore[union-attr]
        self._check_size(tuple(shape), x.dtype, "expand")
        return self._record("view", None, (x.node,), x.dtype, tuple(shape))

    def reduce(self, op: Reduction, x: FusedTensor, dim: int) -> FusedTensor:
        if op.returns_index or x.shape[dim] > reduction.SEGMENT:
            # the raw kernels split a long row over several workgroups (reduction.py)
            return self._wrap(self.inner.reduce(op, self._value(x), dim))
        shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape))
        return self._record("reduce", op, (self._arg(x),), x.dtype, shape, dim)

    def softmax(self, x: FusedTensor, dim: int) -> FusedTensor:
        return self._row(fused_rows.SOFTMAX, x, dim)

    def log_softmax(self, x: FusedTensor, dim: int) -> FusedTensor:
        return self._row(fused_rows.LOG_SOFTMAX, x, dim)

    def _row(self, op: fused_rows.RowOp, x: FusedTensor, dim: int) -> FusedTensor:
        """softmax or log-softmax as a stream node: fused with its producers (fused_rows.py)."""
        return self._record("softmax", op, (self._arg(x),), x.dtype, x.shape, dim)

    def matmul(self, a: FusedTensor, b: FusedTensor) -> FusedTensor:
        ga, gb = self._value(a), self._value(b)
        batch = tuple(max(p, q) for p, q in zip(a.shape[:-2], b.shape[:-2], strict=True))
        shape = batch + (a.shape[-2], b.shape[-1])
        return self._record("matmul", None, (self._leaf(ga), self._leaf(gb)), a.dtype, shape)

    def conv2d(self, x: FusedTensor, weight: FusedTensor, bias: FusedTensor | None,
               stride: Any, padding: Any, dilation: Any, groups: int) -> FusedTensor:
        """Recorded (f32), so the elementwise ops that consume the output can run as its
        epilogue; other dtypes take the inner backend's path."""
        if not all(t is None or t.dtype is DType.F32 for t in (x, weight, bias)):
            return _wrapped(self.inner.conv2d(  # type: ignore[no-any-return]
                self._value(x), self._value(weight), None if bias is None else
                self._value(bias), stride, padding, dilation, groups))
        values = [self._value(x), self._value(weight)]
        if bias is not None:
            values.append(self._value(bias))
        from ..backend.module_ops import conv_out_size
        n, _, h, w = x.shape
        c_out, _, kh, kw = weight.shape
        padded = (h + sum(padding[0]), w + sum(padding[1]))
        oh, ow = conv_out_size(padded, (kh, kw), stride, dilation)
        op = ConvOp(tuple(stride), tuple(tuple(p) for p in padding),  # type: ignore[arg-type]
                    tuple(dilation), groups, bias is not None)
        return self._record("conv2d", op, tuple(self._leaf(v) for v in values), DType.F32,
                            (n, c_out, oh, ow))

    def conv2d_input_grad(self, grad: FusedTensor, weight: FusedTensor,
                          input_shape: tuple[int, ...], stride: Any, padding: Any,
                          dilation: Any, groups: int) -> FusedTensor:
        """Recorded (f32) like conv2d, so an elementwise consumer (the mask of the activation
        before the conv, in a backward pass) can run in its store."""
        if not (grad.dtype is DType.F32 and weight.dtype is DType.F32):
            return _wrapped(self.inner.conv2d_input_grad(  # type: ignore[no-any-return]
                self._value(grad), self._value(weight), input_shape, stride, padding, dilation,
                groups))
        op = ConvGradOp(tuple(stride), tuple(tuple(p) for p in padding),  # type: ignore[arg-type]
                        tuple(dilation), groups, False, tuple(input_shape))
        return self._record("conv2d_input_grad", op,
                            (self._leaf(self._value(grad)), self._leaf(self._value(weight))),
                            DType.F32, tuple(input_shape))

    def conv2d_relu(self, x: FusedTensor, weight: FusedTensor, bias: FusedTensor | None,
                    stride: Any, padding: Any, dilation: Any, groups: int) -> FusedTensor:
        """Both ops recorded, so the ReLU runs as the conv's epilogue (forwarded, as the other
        composites are, it flushed and ran a conv and a relu kernel on the inner backend)."""
        return self.unary(RELU, self.conv2d(x, weight, bias, stride, padding, dilation, groups))

    def conv2d_saving(self, x: FusedTensor, weight: FusedTensor, bias: FusedTensor | None,
                      stride: Any, padding: Any, dilation: Any,
                      groups: int) -> tuple[FusedTensor, Any]:
        """conv2d; the webgpu kernels keep nothing for the weight gradient."""
        return self.conv2d(x, weight, bias, stride, padding, dilation, groups), None

    # ---- the contract: answered here -------------------------------------------------------
    def shape(self, x: FusedTensor) -> tuple[int, ...]:
        return x.shape

    def dtype(self, x: FusedTensor) -> DType:
        return x.dtype

    def same_shape_and_dtype(self, a: Any, b: Any) -> bool:
        return type(b) is FusedTensor and a.shape == b.shape and a.dtype is b.dtype

    def supports(self, dtype: DType) -> bool:
        return self.inner.supports(dtype)

    def stored_dtype(self, dtype: DType) -> DType:
        return self.inner.stored_dtype(dtype)

    def seed(self, seed: int) -> None:
        self.inner.seed(seed)

    def sync(self) -> None:
        self.flush()
        self.inner.sync()

    def adapter_info(self) -> dict[str, object]:
        """The inner backend's adapters, and that ops are fused here."""
        found: dict[str, object] = self.inner.adapter_info()
        found["fusion"] = "on: elementwise ops fused into generated kernels (PYRITE_FUSION=off " \
                          "runs one kernel per op)"
        return found

    def reset(self, runtime: Any = None) -> None:
        """Drop the device (after a DeviceLostError) and everything recorded on it; see
        `WebGpu.reset`."""
        self._new_stream()
        self._plans.clear()
        self.inner.reset(runtime)

    def from_data(self, data: TensorData) -> FusedTensor:
        return self._wrap(self.inner.from_data(data))

    def uninitialized(self, shape: tuple[int, ...], dtype: DType) -> FusedTensor:
        return self._wrap(self.inner.uninitialized(shape, dtype))

    def from_data_as(self, data: TensorData, dtype: DType) -> FusedTensor:
        return self._wrap(self.inner.from_data_as(data, dtype))

    def to_data(self, x: FusedTensor) -> TensorData:
        return self.inner.to_data(self._value(x))

    async def to_data_async(self, x: FusedTensor) -> TensorData:
        return await self.inner.to_data_async(self._value(x))

    # ---- the contract: flush, then the inner backend (every other public method is
    # forwarded the same way below the class; these are named here as the contract's
    # abstract primitives) ----------------------------------------------------------------
    arange = _forward("arange")
    cat = _forward("cat")
    flip = _forward("flip")
    gather = _forward("gather")
    permute = _forward("permute")
    random = _forward("random")
    reshape = _forward("reshape")
    scatter_add = _forward("scatter_add")
    select = _forward("select")
    select_add = _forward("select_add")
    slice = _forward("slice")
    slice_assign = _forward("slice_assign")
    sort = _forward("sort")

    def custom(self, op: Any, inputs: Sequence[FusedTensor], attrs: Mapping[str, Any]) -> Any:
        """A user op (pyrite.extend): its composite is recorded and fused like any ops; with a
        kernel, the stream is flushed for its inputs and the kernel's result joins the next."""
        if op.kernel_on(self) is None:
            return op.run_composite(self, inputs, attrs)
        return _wrapped(self.inner.custom(op, _realised(self, list(inputs)), attrs))

    # ---- flushing --------------------------------------------------------------------------
    def flush(self) -> None:
        """Run every recorded op: the held results land in memory, the rest never do."""
        nodes = self._nodes
        if not nodes:
            return
        refs, leaves, scalars, sig = self._refs, self._leaves, self._scalars, self._sig
        self._new_stream()
        held: list[FusedTensor | None] = [r() for r in refs]
        alive = tuple(i for i, ft in enumerate(held) if ft is not None)
        leaf_dtypes = tuple(g.dtype for g in leaves)
        key = (tuple(sig), tuple(d.name for d in leaf_dtypes), alive)
        plan = self._plans.get(key)
        stats = self.stats
        stats.flushes += 1
        for seen in _INSPECTIONS:
            seen.flushes += 1
        if plan is None:
            stats.plan_misses += 1
            plan = _analyse(nodes, leaf_dtypes, alive)
            if len(self._plans) >= _PLANS:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = plan
        else:
            stats.plan_hits += 1
        try:
            results = _Executor(self, nodes, leaves, scalars, plan, alive).run()
        except BaseException as exc:
            for i in alive:  # never computed: say so when they are used, not a later flush
                ft = held[i]
                ft.node, ft.error = None, exc  # type: ignore[union-attr]
            raise
        for i in alive:
            ft = held[i]
            ft.value = results[i]  # type: ignore[union-attr]
            ft.node = None  # type: ignore[union-attr]


def _realised(fusion: Fusion, value: Any) -> Any:
    if type(value) is FusedTensor:
        return fusion._value(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_realised(fusion, v) for v in value)
    return value


def _wrapped(value: Any) -> Any:
    if type(value) is GpuTensor:
        return FusedTensor(value.shape, value.dtype, value)
    if isinstance(value, tuple):
        return tuple(_wrapped(v) for v in value)
    if isinstance(value, list):
        return [_wrapped(v) for v in value]
    return value


_OWN = {name for name, v in vars(Fusion).items() if callable(v)}
for _name in dir(Backend):
    if not _name.startswith("_") and _name not in _OWN and callable(getattr(Backend, _name)):
        setattr(Fusion, _name, _forward(_name))


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


def _analyse(nodes: list[Node], leaf_dtypes: tuple[DType, ...], alive: tuple[int, ...]) -> Plan:
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


# ---- execution: a plan + this stream's tensors -> results ----------------------------------
class _Executor:
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
        if any(d is DType.F16 for d in (*program.inputs, *program.scalars,
                                        *(s.dtype for s in program.steps))):
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


__all__ = ["MAX_STREAM", "Fusion", "FusedTensor", "FusionStats", "Inspection", "inspect"]
