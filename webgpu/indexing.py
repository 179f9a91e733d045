"""Index-driven movement: gather, select, scatter_add, select_add (`shaders/gather.wgsl`,
`shaders/scatter_add.wgsl`).

select and select_add are gather and scatter_add with the 1-D index viewed across the other
dims with stride 0, so each pair shares one kernel and no index is copied.
"""

from __future__ import annotations

from ..dtype import DType
from .codegen import WORKGROUP, KernelKey, compute_type, header, load, render, storage_type, store
from .kernels import Kernels
from .tensor import GpuTensor


def _spread(index: GpuTensor, shape: tuple[int, ...], dim: int) -> GpuTensor:
    """A 1-D index seen as a tensor of `shape` that varies only along dim."""
    strides = tuple(index.strides[0] if d == dim else 0 for d in range(len(shape)))
    return index.view(shape, strides, index.offset)


def _without(strides: tuple[int, ...], dim: int) -> list[int]:
    """`strides` with dim's set to 0: the kernels step along dim themselves."""
    return [0 if d == dim else s for d, s in enumerate(strides)]


def gather(k: Kernels, x: GpuTensor, dim: int, index: GpuTensor) -> GpuTensor:
    out = k.empty(index.shape, x.dtype, "gather")
    if out.numel == 0:
        return out
    key = KernelKey("gather", "gather", (x.dtype, DType.I32, x.dtype))
    pipeline = k.cached(key) or k.pipeline(key, render(
        "gather.wgsl", enable=header((x.dtype,)), io_type=storage_type(x.dtype),
        workgroup=WORKGROUP))
    words = [out.numel, x.rank, x.strides[dim], x.offset, index.offset, *out.shape,
             *_without(x.strides, dim), *index.strides]
    k.launch(pipeline, [k.meta(words), x.block.buffer, index.block.buffer, out.block.buffer],
             k.grid(-(-out.numel // WORKGROUP)))
    return out


def select(k: Kernels, x: GpuTensor, dim: int, index: GpuTensor) -> GpuTensor:
    shape = tuple(index.shape[0] if d == dim else n for d, n in enumerate(x.shape))
    return gather(k, x, dim, _spread(index, shape, dim))


def scatter_add(k: Kernels, x: GpuTensor, dim: int, index: GpuTensor,
                value: GpuTensor) -> GpuTensor:
    out = k.empty(x.shape, x.dtype, "scatter_add")
    if out.numel == 0:
        return out
    acc = DType.F32 if x.dtype.is_float else DType.I32
    key = KernelKey("scatter_add", "scatter_add", (x.dtype, DType.I32, x.dtype, x.dtype))
    pipeline = k.cached(key) or k.pipeline(key, render(
        "scatter_add.wgsl", enable=header((x.dtype,)), io_type=storage_type(x.dtype),
        acc_type=compute_type(acc), load_x=load("x[xp]", x.dtype),
        load_v=load("value[vp + j * v_step]", x.dtype), store=store("acc", x.dtype),
        workgroup=WORKGROUP))
    bound = [x.shape[dim] if d == dim else n for d, n in enumerate(index.shape)]
    along = [int(d == dim) for d in range(x.rank)]
    words = [out.numel, x.rank, index.shape[dim], x.offset, index.offset, value.offset,
             index.strides[dim], value.strides[dim], *x.shape, *bound, *x.strides,
             *_without(index.strides, dim), *_without(value.strides, dim), *along]
    buffers = [k.meta(words), x.block.buffer, index.block.buffer, value.block.buffer,
               out.block.buffer]
    k.launch(pipeline, buffers, k.grid(-(-out.numel // WORKGROUP)))
    return out


def select_add(k: Kernels, x: GpuTensor, dim: int, index: GpuTensor,
               value: GpuTensor) -> GpuTensor:
    return scatter_add(k, x, dim, _spread(index, value.shape, dim), value)
