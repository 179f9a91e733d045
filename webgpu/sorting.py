"""Stable sort along a dim (values and indices) with the bitonic network of
`shaders/sort_bitonic.wgsl`: rows padded to a power of two P, log2(P)(log2(P)+1)/2 passes.

The result is written with the sorted dim last and handed back as a permuted view.
"""

from __future__ import annotations

from ..dtype import DType
from .codegen import (
    WORKGROUP,
    KernelKey,
    compute_type,
    convert,
    header,
    load,
    nan_test,
    render,
    storage_type,
    store,
)
from .kernels import Kernels
from .tensor import GpuTensor


def sort(k: Kernels, x: GpuTensor, dim: int, descending: bool) -> tuple[GpuTensor, GpuTensor]:
    moved, back = x.moved_last(dim)
    length = moved.shape[-1]
    values = k.empty(moved.shape, x.dtype, "sort")
    indices = k.empty(moved.shape, DType.I32, "sort")
    rows = values.numel // length if length else 0
    if rows == 0:
        return values.permuted(back), indices.permuted(back)
    acc = DType.I32 if x.dtype is DType.BOOL else (DType.F32 if x.dtype.is_float else x.dtype)
    pow2 = 1 << max(0, (length - 1).bit_length())
    keys = k.empty((rows * pow2,), acc, "sort")
    idx = k.empty((rows * pow2,), DType.I32, "sort")
    key = KernelKey("sort_bitonic", "sort", (x.dtype, x.dtype))
    source = render("sort_bitonic.wgsl", enable=header((x.dtype,)),
                    in_type=storage_type(x.dtype), acc_type=compute_type(acc),
                    zero="0.0" if acc.is_float else "0",
                    load=convert(load("src[s]", x.dtype), x.dtype, acc),
                    store=store(convert("v", acc, x.dtype), x.dtype), nan_test=nan_test("v", acc),
                    workgroup=WORKGROUP)
    init, exchange, finish = (k.cached(key, e) or k.pipeline(key, source, e)
                              for e in ("init", "exchange", "finish"))
    row_dims = [moved.rank - 1, moved.offset, moved.strides[-1], *moved.shape[:-1],
                *moved.strides[:-1]]
    head = [rows, length, pow2, int(descending)]
    grid = k.grid(-(-rows * pow2 // WORKGROUP))
    k.launch(init, {0: k.meta(head + [0, 0] + row_dims), 1: x.block.buffer,
                    2: keys.block.buffer, 3: idx.block.buffer}, grid)
    size = 2
    while size <= pow2:
        stride = size // 2
        while stride > 0:
            k.launch(exchange, {0: k.meta(head + [size, stride]),
                                2: keys.block.buffer, 3: idx.block.buffer}, grid)
            stride //= 2
        size *= 2
    k.launch(finish, {0: k.meta(head + [0, 0]), 2: keys.block.buffer, 3: idx.block.buffer,
                      4: values.block.buffer, 5: indices.block.buffer},
             k.grid(-(-rows * length // WORKGROUP)))
    return values.permuted(back), indices.permuted(back)
