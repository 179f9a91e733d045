"""`WebGpu`: the backend contract on WebGPU, over any `Runtime` (native wgpu-py by default).

Dtypes: tensors live as f32, i32 or bool (stored as u32 words); f16 where the adapter has
`shader-f16`. `from_data` converts the rest: f64 -> f32 (ConversionOverflow past f32's range),
i64/i16/i8/u8 -> i32 (ConversionOverflow past i32's range). `to_data` gives the stored dtype.
The runtime (adapter, device) is built on first use, never at construction or import.
"""

from __future__ import annotations

import array
import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

from ..backend.attention_ops import AttentionOps
from ..backend.base import Backend, Range
from ..backend.module_ops import ModuleOps, Pads, Pair
from ..backend.reduce import Reduction
from ..backend.registry import Op
from ..capture.traced import keep_float, keep_int
from ..data import TensorData
from ..distribution import Distribution
from ..dtype import DType, Kind
from ..errors import DTypeError
from . import conv, flash_attention, indexing, linalg, pool, reduction, rng, sorting, upload
from .codegen import storage_itemsize
from .guard import GuardedRuntime
from .kernels import Kernels
from .memory import BufferPool, PoolStats
from .runtime import AdapterInfo, Runtime
from .tensor import GpuTensor

_STORED = {DType.F32: DType.F32, DType.F64: DType.F32, DType.F16: DType.F16,
           DType.I32: DType.I32, DType.I64: DType.I32, DType.I16: DType.I32, DType.I8: DType.I32,
           DType.U8: DType.I32, DType.BOOL: DType.BOOL}


def _default_runtime(adapter: str | None) -> Runtime:
    """The browser's WebGPU inside Pyodide, else wgpu-py's adapter chosen by `adapter`."""
    from .browser import BrowserRuntime, in_browser
    if in_browser():
        power = adapter if adapter in ("high-performance", "low-power") else None
        return BrowserRuntime.create_sync(power)
    from .native import NativeRuntime
    return NativeRuntime(adapter)


class WebGpu(Backend):
    """Tensors on a WebGPU device; `adapter` as in PYRITE_WEBGPU_ADAPTER ("gl", "vulkan,1")."""

    name = "webgpu"
    defers_checks = True  # index bounds are checked at the next readback (core/checks.py)
    kernel_language = "wgsl"  # user ops' kernels (pyrite.extend) run here
    float_dtype = DType.F32
    int_dtype = DType.I32

    def __init__(self, adapter: str | None = None, *, runtime: Runtime | None = None,
                 seed: int | None = None, name: str | None = None) -> None:
        if name is not None:  # "webgpu:1": the device on one adapter of several
            self.name = name
        self._adapter_choice = adapter
        self._given_runtime = runtime
        self._runtime = runtime
        self._kernels: Kernels | None = None
        self._seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
        self._counter = 0
        #: while a step is captured: the traced seed, counter and the counter at its start
        self._traced_rng: Any = None
        self._capture: Any = None

    # ---- device-level ----------------------------------------------------------------------
    @property
    def kernels(self) -> Kernels:
        """The launch context, built (adapter requested) on first use."""
        if self._kernels is None:
            if self._runtime is None:
                self._runtime = _default_runtime(self._adapter_choice)
            guarded = GuardedRuntime(self._runtime)
            self._kernels = Kernels(guarded, BufferPool(guarded))
        return self._kernels

    def reset(self, runtime: Runtime | None = None) -> None:
        """Drop the device (after a DeviceLostError): the next op uses `runtime`, or asks for a
        new device as `WebGpu()` does (a runtime given at construction is not reused: its
        device is the lost one). Tensors made before are unusable; reload parameters from
        records."""
        self._kernels = None
        self._capture = None
        self._given_runtime = self._runtime = runtime

    @property
    def adapter(self) -> AdapterInfo:
        return self.kernels.runtime.adapter

    def adapter_info(self) -> dict[str, object]:
        """What `pyrite info backends` prints: the adapter in use and every adapter seen."""
        from .info import adapters
        found: dict[str, object] = {"in use": str(self.adapter)}
        describe = getattr(getattr(self.kernels.runtime, "inner", None), "describe", None)
        if describe is not None:  # the browser: one adapter, described by the page
            found.update(describe())
            return found
        for row in adapters():
            limits = row["limits"]
            found[f"adapter #{row['index']} (webgpu:{row['index']})"] = (
                f"{row['name']} ({row['adapter_type']}, {row['backend']}), "
                f"shader-f16: {row['shader_f16']}, max buffer: "
                f"{limits['max-buffer-size']} bytes")  # type: ignore[index]
        return found

    def memory_stats(self) -> PoolStats:
        """The buffer pool's counters (bytes allocated, reused, peak, live buffers, ...)."""
        return self.kernels.pool.stats

    def seed(self, seed: int) -> None:
        self._seed, self._counter = seed, 0

    def sync(self) -> None:
        if self._kernels is not None:
            self._kernels.runtime.sync()

    def stored_dtype(self, dtype: DType) -> DType:
        """The dtype a tensor asked for as `dtype` is kept in here."""
        if dtype is DType.F16 and "shader-f16" not in self.kernels.runtime.features:
            raise DTypeError(f"webgpu: f16 needs the adapter feature shader-f16, which "
                             f"{self.adapter} lacks; use f32")
        return _STORED[dtype]

    def supports(self, dtype: DType) -> bool:
        if dtype is DType.F16:
            return "shader-f16" in self.kernels.runtime.features
        return dtype in (DType.F32, DType.I32, DType.BOOL)

    # ---- creation and data -----------------------------------------------------------------
    def from_data(self, data: TensorData) -> GpuTensor:
        dtype = self.stored_dtype(data.dtype)
        data = data.convert(dtype)
        raw = array.array("I", list(data.bytes)).tobytes() if dtype is DType.BOOL else data.bytes
        k = self.kernels
        out = k.empty(data.shape, dtype, "from_data")
        if raw:
            pad = -len(raw) % 4
            k.write(out.block.buffer, 0, raw + b"\0" * pad)
        return out

    def _readable(self, x: GpuTensor) -> tuple[GpuTensor, int, int]:
        size = storage_itemsize(x.dtype)
        if not x.is_contiguous or (x.offset * size) % 4:
            x = self.kernels.copy(x)
        return x, x.offset * size, x.numel * size

    @staticmethod
    def _data(raw: bytes, x: GpuTensor) -> TensorData:
        if x.dtype is DType.BOOL:
            raw = bytes(memoryview(raw).cast("I").tolist())
        return TensorData.raw(raw, x.shape, x.dtype)

    def to_data(self, x: GpuTensor) -> TensorData:
        x, offset, nbytes = self._readable(x)
        raw = self.kernels.read(x.block.buffer, offset, (nbytes + 3) // 4 * 4)
        return self._data(raw[:nbytes], x)

    async def to_data_async(self, x: GpuTensor) -> TensorData:
        """As `to_data`, awaiting the readback (for callers that cannot block: the browser)."""
        x, offset, nbytes = self._readable(x)
        if self.kernels.recorder is not None:
            self.kernels.recorder.readback()
        raw = await self.kernels.runtime.read_buffer_async(x.block.buffer, offset,
                                                           (nbytes + 3) // 4 * 4)
        return self._data(raw[:nbytes], x)

    def from_data_as(self, data: TensorData, dtype: DType) -> GpuTensor:
        """Half precision into an f32 tensor is unpacked on the device (a half-precision
        record's load); any other conversion happens on the host."""
        if data.dtype is DType.F16 and self.stored_dtype(dtype) is DType.F32 and data.bytes:
            return upload.unpack_f16(self.kernels, data.bytes, data.shape)
        return self.from_data(data.convert(dtype))

    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> GpuTensor:
        dtype = self.stored_dtype(dtype)
        value = keep_float(value) if dtype.kind is Kind.FLOAT else keep_int(value)
        return self.kernels.full(shape, value, dtype)

    def uninitialized(self, shape: tuple[int, ...], dtype: DType) -> GpuTensor:
        out = self.kernels.empty(shape, self.stored_dtype(dtype), "uninitialized")
        self.kernels.blank.add(out.block)
        return out

    def from_data_many(self, items: Sequence[tuple[TensorData, DType, GpuTensor | None]]
                       ) -> list[GpuTensor]:
        """A record's tensors in one write and one submit (upload.upload_many)."""
        return upload.upload_many(self, items)

    def arange(self, start: int, stop: int, step: int, dtype: DType) -> GpuTensor:
        return self.kernels.arange(start, stop, step, self.stored_dtype(dtype))

    def random(self, shape: tuple[int, ...], distribution: Distribution,
               dtype: DType) -> GpuTensor:
        self._counter += 1
        seed, counter = self._seed, self._counter
        if self._traced_rng is not None:  # a capture: the replay computes them anew
            seed, counter0, start = self._traced_rng
            counter = counter0 + (self._counter - start)
        return rng.random(self.kernels, shape, distribution, self.stored_dtype(dtype),
                          seed, counter)

    def capture_engine(self) -> Any:
        """Capture and replay of steps on this device (`pyrite.compile`; webgpu/capture.py)."""
        if self._capture is None:
            from .capture import CaptureEngine
            self._capture = CaptureEngine(self)
        return self._capture

    # ---- metadata --------------------------------------------------------------------------
    def shape(self, x: GpuTensor) -> tuple[int, ...]:
        return x.shape

    def dtype(self, x: GpuTensor) -> DType:
        return x.dtype

    # ---- elementwise -----------------------------------------------------------------------
    def unary(self, op: Op, x: GpuTensor) -> GpuTensor:
        return self.kernels.unary(op, x)

    def binary(self, op: Op, a: GpuTensor, b: GpuTensor | float | int | bool) -> GpuTensor:
        return self.kernels.binary(op, a, b)

    def where(self, mask: GpuTensor, a: GpuTensor, b: GpuTensor) -> GpuTensor:
        return self.kernels.where(mask, a, b)

    def cast(self, x: GpuTensor, dtype: DType) -> GpuTensor:
        dtype = self.stored_dtype(dtype)
        return x if dtype is x.dtype else self.kernels.cast(x, dtype)

    # ---- reductions and linear algebra -----------------------------------------------------
    def reduce(self, op: Reduction, x: GpuTensor, dim: int) -> GpuTensor:
        return reduction.reduce(self.kernels, op, x, dim)

    def matmul(self, a: GpuTensor, b: GpuTensor) -> GpuTensor:
        return linalg.matmul(self.kernels, a, b)

    def custom(self, op: Any, inputs: Sequence[GpuTensor], attrs: Mapping[str, Any]) -> GpuTensor:
        if op.kernel is None:
            return cast(GpuTensor, op.run_composite(self, inputs, attrs))
        from . import custom
        return custom.launch(self.kernels, op, inputs, attrs)

    def sort(self, x: GpuTensor, dim: int, descending: bool) -> tuple[GpuTensor, GpuTensor]:
        return sorting.sort(self.kernels, x, dim, descending)

    # ---- movement: views where possible ----------------------------------------------------
    def reshape(self, x: GpuTensor, shape: tuple[int, ...]) -> GpuTensor:
        return self.kernels.contiguous(x).reshaped(shape)

    def permute(self, x: GpuTensor, axes: tuple[int, ...]) -> GpuTensor:
        return x.permuted(axes)

    def expand(self, x: GpuTensor, shape: tuple[int, ...]) -> GpuTensor:
        return x.expanded(shape)

    def slice(self, x: GpuTensor, ranges: Sequence[Range]) -> GpuTensor:
        return x.sliced(ranges)

    def flip(self, x: GpuTensor, axes: tuple[int, ...]) -> GpuTensor:
        return x.flipped(axes)

    def slice_assign(self, x: GpuTensor, ranges: Sequence[Range],
                     value: GpuTensor) -> GpuTensor:
        out = self.kernels.copy(x)
        self.kernels.copy(value, out.sliced(ranges))
        return out

    def cat(self, xs: Sequence[GpuTensor], dim: int) -> GpuTensor:
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        out = self.kernels.empty(tuple(shape), xs[0].dtype, "cat")
        start = 0
        for x in xs:
            ranges = [(start, start + n, 1) if d == dim else (0, n, 1)
                      for d, n in enumerate(x.shape)]
            self.kernels.copy(x, out.sliced(ranges))
            start += x.shape[dim]
        return out

    def gather(self, x: GpuTensor, dim: int, index: GpuTensor) -> GpuTensor:
        return indexing.gather(self.kernels, x, dim, index)

    def scatter_add(self, x: GpuTensor, dim: int, index: GpuTensor,
                    value: GpuTensor) -> GpuTensor:
        return indexing.scatter_add(self.kernels, x, dim, index, value)

    def select(self, x: GpuTensor, dim: int, index: GpuTensor) -> GpuTensor:
        return indexing.select(self.kernels, x, dim, index)

    def select_add(self, x: GpuTensor, dim: int, index: GpuTensor,
                   value: GpuTensor) -> GpuTensor:
        return indexing.select_add(self.kernels, x, dim, index, value)

    # ---- composites overridden for speed ---------------------------------------------------
    def softmax(self, x: GpuTensor, dim: int) -> GpuTensor:
        return reduction.softmax(self.kernels, x, dim, log=False)

    def log_softmax(self, x: GpuTensor, dim: int) -> GpuTensor:
        return reduction.softmax(self.kernels, x, dim, log=True)

    # ---- attention: flash attention's kernels where they fit (flash_attention.py) ----------
    def attention(self, q: GpuTensor, k: GpuTensor, v: GpuTensor, mask: GpuTensor | None,
                  scale: float, quiet: bool, causal: bool) -> GpuTensor:
        found = self.attention_saving(q, k, v, mask, scale, quiet, causal)
        if found is None:
            return cast(GpuTensor, AttentionOps.attention(self, q, k, v, mask, scale, quiet,
                                                          causal))
        return found[0]

    def attention_saving(self, q: GpuTensor, k: GpuTensor, v: GpuTensor,
                         mask: GpuTensor | None, scale: float, quiet: bool,
                         causal: bool) -> tuple[GpuTensor, GpuTensor] | None:
        """The output and its rows' log-sum-exp, or None where the kernels do not fit."""
        if not flash_attention.covers(self.kernels, q, k, v, mask):
            return None
        return flash_attention.forward(self.kernels, q, k, v, mask, keep_float(scale), quiet,
                                       causal)

    def attention_grad(self, q: GpuTensor, k: GpuTensor, v: GpuTensor, mask: GpuTensor | None,
                       out: GpuTensor, saved: object, grad: GpuTensor, scale: float,
                       quiet: bool, causal: bool,
                       needs: tuple[bool, bool, bool]) -> tuple[GpuTensor | None, ...]:
        assert isinstance(saved, GpuTensor)  # attention_saving's log-sum-exp
        return flash_attention.backward(self.kernels, q, k, v, mask, out, saved, grad,
                                        keep_float(scale), causal, needs)

    # ---- module ops overridden for speed (f32; other dtypes take the composites) -----------
    # The composites return this backend's primitives, typed `Prim` (Any) in ModuleOps: the
    # casts below name them.
    def conv2d(self, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None, stride: Pair,
               padding: Pads, dilation: Pair, groups: int) -> GpuTensor:
        if not _f32(x, weight, bias):
            return cast(GpuTensor, ModuleOps.conv2d(self, x, weight, bias, stride, padding,
                                                    dilation, groups))
        return conv.conv2d(self.kernels, x, weight, bias, stride, padding, dilation, groups)

    def conv2d_input_grad(self, grad: GpuTensor, weight: GpuTensor, input_shape: tuple[int, ...],
                          stride: Pair, padding: Pads, dilation: Pair, groups: int) -> GpuTensor:
        if not _f32(grad, weight):
            return cast(GpuTensor, ModuleOps.conv2d_input_grad(self, grad, weight, input_shape,
                                                               stride, padding, dilation, groups))
        return conv.conv2d_input_grad(self.kernels, grad, weight, input_shape, stride, padding,
                                      dilation, groups)

    def conv2d_weight_grad(self, x: GpuTensor, grad: GpuTensor, weight_shape: tuple[int, ...],
                           stride: Pair, padding: Pads, dilation: Pair, groups: int,
                           saved: object = None) -> GpuTensor:
        if not _f32(x, grad):
            return cast(GpuTensor, ModuleOps.conv2d_weight_grad(self, x, grad, weight_shape,
                                                                stride, padding, dilation, groups,
                                                                saved))
        return conv.conv2d_weight_grad(self.kernels, x, grad, weight_shape, stride, padding,
                                       dilation, groups)

    def max_pool2d_with_indices(self, x: GpuTensor, kernel: Pair, stride: Pair, padding: Pads,
                                dilation: Pair) -> tuple[GpuTensor, GpuTensor]:
        if not _f32(x):
            return ModuleOps.max_pool2d_with_indices(self, x, kernel, stride, padding, dilation)
        return pool.max_pool2d_with_indices(self.kernels, x, kernel, stride, padding, dilation)

    def max_pool2d(self, x: GpuTensor, kernel: Pair, stride: Pair, padding: Pads,
                   dilation: Pair) -> GpuTensor:
        if not _f32(x):
            return cast(GpuTensor, ModuleOps.max_pool2d(self, x, kernel, stride, padding,
                                                        dilation))
        return pool.max_pool2d_with_indices(self.kernels, x, kernel, stride, padding,
                                            dilation)[0]

    def max_pool2d_with_indices_grad(self, grad: GpuTensor, indices: GpuTensor,
                                     input_shape: tuple[int, ...], kernel: Pair, stride: Pair,
                                     padding: Pads, dilation: Pair) -> GpuTensor:
        """d max_pool2d / d x from the output gradient and the indices of the forward pass
        (Autodiff's max-pool rule calls it; the indices never leave the device)."""
        return pool.max_pool2d_grad(self.kernels, grad, indices, input_shape, kernel, stride,
                                    padding, dilation)

    def avg_pool2d(self, x: GpuTensor, kernel: Pair, stride: Pair, padding: Pads,
                   count_include_pad: bool) -> GpuTensor:
        if not _f32(x):
            return cast(GpuTensor, ModuleOps.avg_pool2d(self, x, kernel, stride, padding,
                                                        count_include_pad))
        return pool.avg_pool2d(self.kernels, x, kernel, stride, padding, count_include_pad)

    def avg_pool2d_grad(self, grad: GpuTensor, input_shape: tuple[int, ...], kernel: Pair,
                        stride: Pair, padding: Pads, count_include_pad: bool) -> GpuTensor:
        """d avg_pool2d / d x (Autodiff's avg-pool rule calls it)."""
        return pool.avg_pool2d_grad(self.kernels, grad, input_shape, kernel, stride, padding,
                                    count_include_pad)

    def adaptive_avg_pool2d(self, x: GpuTensor, output_size: Pair) -> GpuTensor:
        if not _f32(x):
            return cast(GpuTensor, ModuleOps.adaptive_avg_pool2d(self, x, output_size))
        return pool.adaptive_avg_pool2d(self.kernels, x, output_size)

    def adaptive_avg_pool2d_grad(self, grad: GpuTensor, input_shape: tuple[int, ...]) -> GpuTensor:
        if not _f32(grad):
            return cast(GpuTensor, ModuleOps.adaptive_avg_pool2d_grad(self, grad, input_shape))
        return pool.adaptive_avg_pool2d_grad(self.kernels, grad, input_shape)


def _f32(*xs: GpuTensor | None) -> bool:
    """Whether every given tensor is f32 (the module-op kernels' dtype)."""
    return all(x is None or x.dtype is DType.F32 for x in xs)
