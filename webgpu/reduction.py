"""Reductions along one dim (sum, prod, max, min, argmax, argmin) and softmax/log_softmax.

Each runs one workgroup per output element over a strided view (no copy of the input first),
from the templates `shaders/reduce.wgsl`, `argreduce.wgsl` and `softmax.wgsl`. The combine
expression and identity come from the registry entry (`core/backend/reduce.py`).
"""

from __future__ import annotations

from ..backend.reduce import MAX, MIN, Reduction
from ..dtype import DType, Kind
from .codegen import (
    KernelKey,
    compute_type,
    convert,
    header,
    identity,
    load,
    nan_test,
    render,
    storage_type,
    store,
)
from .kernels import Kernels
from .tensor import GpuTensor, contiguous_strides


def _workgroup(length: int) -> int:
    # short rows waste most of a wide workgroup; long rows want the parallelism
    return 32 if length <= 256 else 256


def _row_meta(x: GpuTensor, dim: int) -> list[int]:
    """[n_out, rank, len, step, offset, shape (dim 1), strides] of reduce.wgsl."""
    out_shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape))
    n_out = 1
    for n in out_shape:
        n_out *= n
    return [n_out, x.rank, x.shape[dim], x.strides[dim], x.offset, *out_shape, *x.strides]


#: elements one workgroup folds: a longer row is split into segments reduced by workgroups of
#: their own, then their partial results are reduced (one workgroup folding millions gave
#: wrong sums on lavapipe from about 2-4M elements a row, and leaves a GPU idle)
SEGMENT = 1 << 16


def reduce(k: Kernels, op: Reduction, x: GpuTensor, dim: int) -> GpuTensor:
    """Reduce `dim` of x, keeping it with size 1."""
    if x.shape[dim] > SEGMENT and x.dtype is not DType.BOOL:
        return _arg_split(k, op, x, dim) if op.returns_index else _reduce_split(k, op, x, dim)
    out_shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape))
    acc = DType.I32 if x.dtype is DType.BOOL else (DType.F32 if x.dtype.is_float else x.dtype)
    wg = k.autotune.reduction("argreduce" if op.returns_index else "reduce", x, dim,
                              _workgroup(x.shape[dim]), lambda: reduce(k, op, x, dim))
    if op.returns_index:
        out = k.empty(out_shape, DType.I32, op.name)
        key = KernelKey("argreduce", op.name, (x.dtype, DType.I32), 0, (wg,))
        pipeline = k.cached(key) or k.pipeline(key, render(
            "argreduce.wgsl", enable=header((x.dtype,)), in_type=storage_type(x.dtype),
            acc_type=compute_type(acc), load=convert(load("src[i]", x.dtype), x.dtype, acc),
            identity=identity(op.wgsl_identity, acc),
            order=">" if op.name == "argmax" else "<", nan_test=nan_test("v", acc), workgroup=wg))
    else:
        out = k.empty(out_shape, x.dtype, op.name)
        combine = op.wgsl_combine.replace("{acc}", "acc").replace("{x}", "x")
        key = KernelKey("reduce", op.name, (x.dtype, x.dtype), 0, (wg,))
        pipeline = k.cached(key) or k.pipeline(key, render(
            "reduce.wgsl", enable=header((x.dtype,)), in_type=storage_type(x.dtype),
            out_type=storage_type(x.dtype), acc_type=compute_type(acc), combine=combine,
            identity=identity(op.wgsl_identity, acc),
            load=convert(load("src[i]", x.dtype), x.dtype, acc),
            store=store(convert("acc_out", acc, x.dtype), x.dtype), workgroup=wg))
    if out.numel:
        meta = k.meta(_row_meta(x, dim))
        k.launch(pipeline, [meta, x.block.buffer, out.block.buffer], k.grid(out.numel))
    return out


def _reduce_split(k: Kernels, op: Reduction, x: GpuTensor, dim: int) -> GpuTensor:
    """A long row as `count` segments of SEGMENT (a view: the dim becomes two) reduced to
    `count` partials, those reduced again; a tail shorter than a segment is reduced apart and
    combined with the registry's expression. The reductions split are associative."""
    n, stride = x.shape[dim], x.strides[dim]
    count = n // SEGMENT
    shape = x.shape[:dim] + (count, SEGMENT) + x.shape[dim + 1:]
    strides = x.strides[:dim] + (stride * SEGMENT, stride) + x.strides[dim + 1:]
    parts = reduce(k, op, x.view(shape, strides, x.offset), dim + 1)
    out = reduce(k, op, parts.reshaped(x.shape[:dim] + (count,) + x.shape[dim + 1:]), dim)
    if n == count * SEGMENT:
        return out
    ranges = [(0, m, 1) if d != dim else (count * SEGMENT, n, 1)
              for d, m in enumerate(x.shape)]
    tail = reduce(k, op, x.sliced(ranges), dim)
    combined = k.empty(out.shape, out.dtype, op.name)
    expr = op.wgsl_combine.replace("{acc}", "v0").replace("{x}", "v1")
    return k.map("reduce_combine", op.name, [out, tail], combined, expr)


def _arg_split(k: Kernels, op: Reduction, x: GpuTensor, dim: int) -> GpuTensor:
    """argmax/argmin of a long row: its max (min), split as `_reduce_split` does, then the
    first position holding it: every position's index where it holds it, else the row's
    length, and the smallest of those. (A row holding NaN: the first NaN is numpy's answer;
    here max ignores NaN, so the first maximum is found instead.)"""
    n = x.shape[dim]
    best = reduce(k, MAX if op.name == "argmax" else MIN, x, dim)
    inner = 1
    for m in x.shape[dim + 1:]:
        inner *= m
    where = k.empty(x.shape, DType.I32, op.name)
    expr = f"select({n}, (idx / {inner}) % {n}, v0 == v1)"
    k.map("arg_position", op.name, [x, best.expanded(x.shape)], where, expr)
    return reduce(k, MIN, where, dim)


def softmax(k: Kernels, x: GpuTensor, dim: int, log: bool) -> GpuTensor:
    """softmax (or log_softmax) of a float tensor along dim, into a dense tensor."""
    out = k.empty(x.shape, x.dtype, "log_softmax" if log else "softmax")
    wg = k.autotune.reduction("softmax", x, dim, _workgroup(x.shape[dim]),
                              lambda: softmax(k, x, dim, log))
    key = KernelKey("softmax", "log_softmax" if log else "softmax", (x.dtype, x.dtype), 0, (wg,))
    pipeline = k.cached(key) or k.pipeline(key, render(
        "softmax.wgsl", enable=header((x.dtype,)), io_type=storage_type(x.dtype),
        result="x - m - log(s)" if log else "exp(x - m) / s", workgroup=wg))
    if out.numel:
        rows = _row_meta(x, dim)
        out_strides = list(contiguous_strides(x.shape))
        out_strides[dim] = 0
        meta = rows[:5] + [contiguous_strides(x.shape)[dim]] + rows[5:] + out_strides
        k.launch(pipeline, [k.meta(meta), x.block.buffer, out.block.buffer], k.grid(rows[0]))
    return out


def supports_softmax(x: GpuTensor) -> bool:
    return x.dtype.kind is Kind.FLOAT
