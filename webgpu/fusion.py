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
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..backend.base import Backend
from ..backend.reduce import Reduction
from ..backend.registry import Op
from ..backend.unary import RELU
from ..capture.traced import keep_float, keep_int
from ..data import TensorData
from ..dtype import DType, Kind
from ..errors import BackendUnavailable, DeviceMemoryError, PyriteError
from . import fused_rows, reduction
from .codegen import storage_itemsize
from .fusion_execute import _INSPECTIONS, Executor, Inspection, inspect
from .fusion_memo import conv_record
from .fusion_plan import MAX_BINDINGS, ConvGradOp, Node, Plan, analyse
from .tensor import GpuTensor

MAX_STREAM = 192  # nodes recorded before a flush happens by itself
_PLANS = 512  # stream plans kept


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



# ---- the decorator ------------------------------------------------------------------------------
def _forward(method: str) -> Callable[..., Any]:
    def forward(self: Fusion, *args: Any, **kwargs: Any) -> Any:
        args = tuple([_realised(self, a) for a in args])
        if kwargs:
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
        codes = tuple([a.index * 3 if type(a) is Node else
                       (a * 3 + 1 if a >= 0 else -a * 3 + 2) for a in args])
        # the dtype itself, not its name: DType hashes by identity (Enum.name is Python code)
        self._sig.append((kind, op.name if op is not None else "", dtype, cls, codes, dim))
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
            if shape != b.shape:  # the front end gave both one rank
                shape = tuple(map(max, shape, b.shape))
                self._check_size(shape, dtype, op.name)
            return self._record("binary", op, (self._arg(a), self._arg(b)), dtype, shape)
        value = b if a.dtype.kind is Kind.FLOAT else keep_int(b)
        return self._record("binary", op, (self._arg(a), self._scalar(value, a.dtype)), dtype,
                            a.shape)

    def unary_consuming(self, op: Op, x: FusedTensor) -> FusedTensor:
        """Recorded as `unary`: the flush already writes into an input nothing else holds
        (forwarded, it flushed the stream and ran the raw kernel, so `linear`'s bias add,
        `pyrite.consuming.add`, cut a product off from its epilogue)."""
        return self.unary(op, x)

    def binary_consuming(self, op: Op, a: FusedTensor,
                         b: FusedTensor | float | int | bool) -> FusedTensor:
        """Recorded as `binary` (see `unary_consuming`)."""
        return self.binary(op, a, b)

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
        if len(a.shape) == 2:  # the front end gave both one rank
            shape: tuple[int, ...] = (a.shape[0], b.shape[1])
        else:
            shape = tuple([max(p, q) for p, q in zip(a.shape[:-2], b.shape[:-2], strict=True)]
                          ) + (a.shape[-2], b.shape[-1])
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
        op, shape = conv_record(x.shape, weight.shape, stride, padding, dilation, groups,
                                bias is not None)
        return self._record("conv2d", op, tuple([self._leaf(v) for v in values]), DType.F32,
                            shape)

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

    def from_data_many(self, items: Sequence[tuple[TensorData, DType, FusedTensor | None]]
                       ) -> list[FusedTensor]:
        # only a value in memory can be written in place; a pending one is not replaced
        return [self._wrap(g) for g in self.inner.from_data_many(
            [(d, dt, None if x is None or x.node is not None else x.value) for d, dt, x in items])]

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
        alive = tuple([i for i, ft in enumerate(held) if ft is not None])
        leaf_dtypes = tuple([g.dtype for g in leaves])
        key = (tuple(sig), leaf_dtypes, alive)
        plan = self._plans.get(key)
        stats = self.stats
        stats.flushes += 1
        for seen in _INSPECTIONS:
            seen.flushes += 1
        if plan is None:
            stats.plan_misses += 1
            plan = analyse(nodes, leaf_dtypes, alive)
            if len(self._plans) >= _PLANS:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = plan
        else:
            stats.plan_hits += 1
        try:
            results = Executor(self, nodes, leaves, scalars, plan, alive).run()
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
    if isinstance(value, (list, tuple)):  # a shape's ints pass without a call each
        return type(value)([v if type(v) is int else _realised(fusion, v) for v in value])
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


__all__ = ["MAX_BINDINGS", "MAX_STREAM", "Fusion", "FusedTensor", "FusionStats", "Inspection",
           "inspect"]
