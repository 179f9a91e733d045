"""Batched matmul with broadcast batch dims.

Large f32 products go to the template `shaders/matmul_tiled.wgsl` (configured and rendered by
`matmul_config.py`, its tile chosen per shape bucket by `autotune.py`), which reads each operand
in place when it is a row-major or a transposed matrix view (any offset and row length) with one
batch stride: `x.T @ g` and `g @ w.T` of a linear layer's backward pass run without copies.
Other layouts (a mixed broadcast batch, a view strided in both dims) are copied first. A
product whose output is too small to fill the GPU with the smallest tile (a classifier's last
layer: N = 10; `SPLIT_BELOW`) splits K into slices (`matmul_config.split_k`), and
`shaders/matmul_split_sum.wgsl` adds the partial sums; its epilogue then runs apart. Autotune
(or, with autotune off, `matmul_config.choose_split`) may split mid-size products too.
Everything else (small or integer products) runs `shaders/matmul_naive.wgsl`, which reads any
strided view directly. A page's software adapter (`software.py`) runs f32 products of a few
rows, whatever their size, on `gemv.py`'s kernel instead of either. Natively, a product the
tiled kernel would split whose output has at most 16 columns (that classifier layer) runs on
`matmul_narrow.py`'s one-workgroup-a-row kernel instead: one dispatch, not two.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..dtype import DType
from . import gemv, matmul_config, matmul_narrow, matmul_variants, software
from .codegen import BITS_FN, KernelKey, compute_type, header, load, render, storage_type, store
from .fused import DenseEpilogue
from .kernels import Kernels
from .runtime import Buffer
from .tensor import GpuTensor, contiguous_strides

TILED_MIN_WORK = 64 * 64 * 64  # multiply-adds below which the naive kernel is as good
#: workgroups of the smallest tile below which the tiled kernel splits K (a latency-bound
#: handful of workgroups walking a long K: the N = 10 layer of MNIST took 79 us on the H100;
#: its 1024 -> 512 layer at batch 64, 32 workgroups, ran 0.040 ms whole and 0.023 in 8 slices,
#: benchmarks/results/linear_tiles_h100_s5.json)
SPLIT_BELOW = 64
#: multiply-adds per output and K slice, at least: the MNIST 512 -> 10 layer (8 tiles) ran
#: 0.023 ms in 8 slices of 64 against 0.034 in 4 of 128 at batch 256 on the H100, 0.027
#: against 0.030 at 64, its bias added in the sum (benchmarks/results/linear_tiles_h100_s5.json)
MIN_SPLIT = 64
EPILOGUE_BINDING = 4  # the first binding of an epilogue, in both matmul kernels


def matmul_epilogue(k: Kernels, a: GpuTensor, b: GpuTensor,
                    epilogue: DenseEpilogue) -> GpuTensor | None:
    """`epilogue(a @ b)` as one kernel, or None where that is not offered (not f32, an empty
    product): the caller then runs the two apart."""
    batch = tuple(max(p, q) for p, q in zip(a.shape[:-2], b.shape[:-2], strict=True))
    m, inner, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if a.dtype is not DType.F32 or b.dtype is not DType.F32 or m * n * inner == 0:
        return None
    if gemv.takes(m, a.dtype, software.software(k.runtime.adapter)):
        done = _gemv(k, a, b, batch, epilogue)
        if done is not None:
            return done
    if m * n * inner >= TILED_MIN_WORK:
        done = _narrow(k, a, b, batch, epilogue) or _tiled(k, a, b, batch, epilogue)
        if done is not None:
            return done
    return _naive(k, a.expanded(batch + (m, inner)), b.expanded(batch + (inner, n)), epilogue)


def matmul(k: Kernels, a: GpuTensor, b: GpuTensor) -> GpuTensor:
    """(..., m, k) @ (..., k, n) -> dense (..., m, n); batch dims broadcast."""
    batch = tuple(max(p, q) for p, q in zip(a.shape[:-2], b.shape[:-2], strict=True))
    m, inner, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if m * n * inner == 0:
        return k.full(batch + (m, n), 0, a.dtype)
    if gemv.takes(m, a.dtype, software.software(k.runtime.adapter)) and b.dtype is DType.F32:
        done = _gemv(k, a, b, batch)
        if done is not None:
            return done
    if a.dtype is DType.F32 and m * n * inner >= TILED_MIN_WORK:
        done = _narrow(k, a, b, batch) or _tiled(k, a, b, batch)
        if done is not None:
            return done
    return _naive(k, a.expanded(batch + (m, inner)), b.expanded(batch + (inner, n)))


@dataclass(frozen=True)
class _Operand:
    """How the tiled kernel reads one operand: stored transposed or not, its row length
    (leading dimension), element offset and batch stride (0: broadcast)."""

    transposed: bool
    ld: int
    offset: int
    batch_stride: int


def _operand(t: GpuTensor) -> _Operand | None:
    """`t` (batch..., rows, cols) as a row-major or transposed matrix with one batch stride,
    or None when its strides allow neither."""
    rows, cols = t.shape[-2:]
    s_row, s_col = t.strides[-2:]
    # a dim of size 1 may have any stride; a stride 0 (a broadcast row or column) fits neither
    if (cols == 1 or s_col == 1) and (rows == 1 or s_row >= cols):
        transposed, ld = False, s_row if rows > 1 else cols
    elif (rows == 1 or s_row == 1) and (cols == 1 or s_col >= rows):
        transposed, ld = True, s_col if cols > 1 else rows
    else:
        return None
    sized = [(s, w) for n, s, w in zip(t.shape[:-2], t.strides[:-2],
                                       contiguous_strides(t.shape[:-2]), strict=True) if n > 1]
    if all(s == 0 for s, _ in sized):
        return _Operand(transposed, ld, t.offset, 0)
    first = sized[-1][0]  # the innermost batch dim's stride; the others must follow densely
    if first > 0 and all(s == w * first for s, w in sized):
        return _Operand(transposed, ld, t.offset, first)
    return None


def _operands(k: Kernels, a: GpuTensor, b: GpuTensor, batch: tuple[int, ...]
              ) -> tuple[list[GpuTensor], _Operand, _Operand] | None:
    """The two operands expanded to the batch shape as the tiled and GEMV kernels read them
    (a copy where the strides allow neither layout), or None where the batch is too long for
    one dispatch."""
    m, inner, n = a.shape[-2], a.shape[-1], b.shape[-1]
    views, ops = [], []
    for t, shape in ((a, batch + (m, inner)), (b, batch + (inner, n))):
        view = t.expanded(shape)
        op = _operand(view)
        if op is None:
            view = k.copy(t).expanded(shape)
            op = _operand(view)
        views.append(view)
        ops.append(op)
    op_a, op_b = ops
    most = k.runtime.limits.max_compute_workgroups_per_dimension
    if op_a is None or op_b is None or math.prod(batch) > most:
        return None
    return views, op_a, op_b


def _gemv(k: Kernels, a: GpuTensor, b: GpuTensor, batch: tuple[int, ...],
          epilogue: DenseEpilogue | None = None) -> GpuTensor | None:
    """A product of few rows on `gemv.py`'s kernel (f32), or None where the operands do not
    fit it (see `_operands`)."""
    m, inner, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if gemv.dispatch(m, n)[0] > k.runtime.limits.max_compute_workgroups_per_dimension:
        return None
    found = _operands(k, a, b, batch)
    if found is None:
        return None
    count = math.prod(batch)
    return _launch_rows(k, found, batch, (m, inner, n), epilogue, "matmul_gemv", (),
                        gemv.render, gemv.dispatch(m, n, count))


def _narrow(k: Kernels, a: GpuTensor, b: GpuTensor, batch: tuple[int, ...],
            epilogue: DenseEpilogue | None = None) -> GpuTensor | None:
    """A product the tiled kernel would split K for, with few output columns, on
    `matmul_narrow.py`'s kernel (one dispatch, the epilogue in it); None where it does not
    take it or the operands do not fit (see `_operands`)."""
    m, inner, n = a.shape[-2], a.shape[-1], b.shape[-1]
    count = math.prod(batch)
    most = k.runtime.limits.max_compute_workgroups_per_dimension
    if not (splits_k(m, n, inner, count) and b.dtype is DType.F32 and matmul_narrow.takes(
            m, n, inner, a.dtype, software.software(k.runtime.adapter), most)):
        return None
    found = _operands(k, a, b, batch)
    if found is None:
        return None
    return _launch_rows(k, found, batch, (m, inner, n), epilogue, "matmul_narrow", (n,),
                        lambda code: matmul_narrow.render(n, code),
                        matmul_narrow.dispatch(m, count))


def _launch_rows(k: Kernels, found: tuple[list[GpuTensor], _Operand, _Operand],
                 batch: tuple[int, ...], mkn: tuple[int, int, int],
                 epilogue: DenseEpilogue | None, kernel: str, shape_key: tuple[object, ...],
                 source: Callable[[str], str], grid: tuple[int, int, int]) -> GpuTensor:
    """The launch the two barrier-free row kernels share (`gemv_io.wgsl`'s bindings): the
    output, the Params uniform of `gemv.params_bytes`, the epilogue's bindings, the pipeline
    keyed by `kernel`, `shape_key` and the epilogue (`source` makes its WGSL on a miss)."""
    views, op_a, op_b = found
    m, inner, n = mkn
    layout = "nt"[op_a.transposed] + "nt"[op_b.transposed]
    out = k.empty(batch + (m, n), DType.F32, "matmul")
    params = k.constant(gemv.params_bytes(
        m, n, inner, math.prod(batch), op_a.batch_stride, op_b.batch_stride, m * n,
        layout=layout, lda=op_a.ld, ldb=op_b.ld, off_a=op_a.offset, off_b=op_b.offset),
        uniform=True)
    bindings = [views[0].block.buffer, views[1].block.buffer, out.block.buffer, params]
    extra: tuple[object, ...] = ()
    if epilogue is not None:
        bindings += epilogue.bindings(k)
        extra = epilogue.key()
    key = KernelKey(kernel, "", (DType.F32,) * 3, 0, (*shape_key, *extra))
    pipeline = k.cached(key)
    if pipeline is None:  # the epilogue's source is generated on a miss only
        pipeline = k.pipeline(key, source(
            "" if epilogue is None else BITS_FN + epilogue.source(EPILOGUE_BINDING)))
    k.launch(pipeline, bindings, grid)
    return out


def splits_k(m: int, n: int, inner: int, count: int) -> bool:
    """Whether the tiled product splits K: even the smallest tile gives fewer than
    SPLIT_BELOW workgroups, and K holds two slices."""
    x, y, z = matmul_config.CONFIGS[matmul_config.SMALL].dispatch(m, n, count)
    return x * y * z < SPLIT_BELOW and inner >= 2 * MIN_SPLIT


def _tiled(k: Kernels, a: GpuTensor, b: GpuTensor, batch: tuple[int, ...],
           epilogue: DenseEpilogue | None = None) -> GpuTensor | None:
    m, inner, n = a.shape[-2], a.shape[-1], b.shape[-1]
    count = math.prod(batch)
    split = splits_k(m, n, inner, count) and not software.software(k.runtime.adapter)
    found = _operands(k, a, b, batch)
    if found is None:
        return None
    views, op_a, op_b = found
    layout = "nt"[op_a.transposed] + "nt"[op_b.transposed]
    out = k.empty(batch + (m, n), DType.F32, "matmul")

    def params(splits: int = 1) -> Buffer:
        """The kernel's uniform, K in `splits` slices."""
        return k.constant(matmul_config.params_bytes(
            m, n, inner, count, op_a.batch_stride, op_b.batch_stride, m * n, layout=layout,
            lda=op_a.ld, ldb=op_b.ld, off_a=op_a.offset, off_b=op_b.offset, splits=splits,
            k_split=matmul_config.split_length(inner, splits) if splits > 1 else 0),
            uniform=True)

    bindings = [views[0].block.buffer, views[1].block.buffer, out.block.buffer, params()]
    extra: tuple[object, ...] = ()
    if epilogue is not None:
        bindings += epilogue.bindings(k)
        extra = epilogue.key()

    wg_bytes = k.runtime.limits.max_compute_workgroup_storage_size

    def launch(cfg: matmul_config.TileConfig, vec4: bool, splits: int) -> None:
        # no bound compares where every workgroup is interior (natively); never on an edge
        cfg = matmul_config.for_shape(cfg, m, n, inner, wg_bytes)
        # K split: the partial products take no epilogue; the sum of them runs it
        ep = epilogue if splits == 1 else None
        key = KernelKey("matmul_tiled", cfg.name, (DType.F32,) * 3, 0,
                        (*cfg.cache_key(vec4, layout), *(extra if ep is not None else ())))
        pipeline = k.cached(key)
        if pipeline is None:  # the epilogue's source is generated on a miss only
            code = "" if ep is None else BITS_FN + ep.source(EPILOGUE_BINDING)
            pipeline = k.pipeline(key, matmul_config.render(cfg, vec4, code, layout),
                                  checks=cfg.checks)
        if splits == 1:
            k.launch(pipeline, bindings, cfg.dispatch(m, n, count))
            return
        parts = k.empty((count, splits, m, n), DType.F32, "matmul")  # 4 bindings
        k.launch(pipeline, [bindings[0], bindings[1], parts.block.buffer, params(splits)],
                 cfg.dispatch(m, n, count * splits))
        matmul_variants.add_partials(k, parts, out, count, splits, epilogue)

    # the tile: timed on first use per shape bucket (autotune.py), else choose_config's
    aligned = matmul_config.is_aligned(
        n, inner, (op_a.batch_stride, op_b.batch_stride, m * n, op_a.ld, op_b.ld, op_a.offset,
                   op_b.offset), m=m, layout=layout)
    cfg, vec4, slices = k.autotune.matmul(m, n, inner, count, aligned, launch,
                                          subgroup=lambda: matmul_variants.subgroups_usable(k),
                                          split=True)
    if split and slices == 1:  # few outputs, long K: split even the chosen tile
        slices = matmul_config.split_k(cfg, m, n, inner, count, min_split=MIN_SPLIT)[0]
    launch(cfg, vec4, slices)
    return out


def _naive(k: Kernels, a: GpuTensor, b: GpuTensor,
           epilogue: DenseEpilogue | None = None) -> GpuTensor:
    """a (batch..., m, k) @ b (batch..., k, n), both already expanded to the batch shape."""
    batch = a.shape[:-2]
    m, inner, n = a.shape[-2], a.shape[-1], b.shape[-1]
    out = k.empty(batch + (m, n), a.dtype, "matmul")
    acc = DType.F32 if a.dtype.is_float else a.dtype
    extra = epilogue.key() if epilogue is not None else ()
    key = KernelKey("matmul_naive", "matmul", (a.dtype, b.dtype, a.dtype), 0, extra)
    pipeline = k.cached(key)
    if pipeline is None:  # the epilogue's source is generated on a miss only
        enable, value = header((a.dtype,)), "acc"
        if epilogue is not None:
            enable += epilogue.source(EPILOGUE_BINDING)
            value = "pyrite_out(acc, (batch * m + row) * n + col)"
        pipeline = k.pipeline(key, render(
            "matmul_naive.wgsl", enable=enable, io_type=storage_type(a.dtype),
            acc_type=compute_type(acc), zero="0.0" if acc.is_float else "0",
            load_a=load("a[ia]", a.dtype), load_b=load("b[ib]", b.dtype),
            store=store(value, a.dtype)))
    tail = epilogue.bindings(k) if epilogue is not None else []
    rank = len(batch)
    count = out.numel // (m * n)
    most = k.runtime.limits.max_compute_workgroups_per_dimension
    for start in range(0, count, most):
        words = [m, n, inner, rank, a.offset, b.offset, a.strides[-2], a.strides[-1],
                 b.strides[-2], b.strides[-1], start, *batch, *a.strides[:-2], *b.strides[:-2]]
        groups = (-(-n // 16), -(-m // 16), min(most, count - start))
        k.launch(pipeline, [k.meta(words), a.block.buffer, b.block.buffer, out.block.buffer,
                            *tail], groups)
    return out
