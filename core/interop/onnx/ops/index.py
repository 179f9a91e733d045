"""Operators that read or write entries at computed positions: Gather*, Scatter*, OneHot,
NonZero, Compress and ReverseSequence."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ....creation import arange, zeros
from ....dtype import DType, Kind
from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm
from ._util import scalar
from .shape import fit, reshape, take


def positive(idx: Tensor, size: int) -> Tensor:
    """Indices with the negative ones counted back from `size`."""
    if idx.kind is not Kind.INT:
        idx = idx.cast(idx.device.int_dtype)
    return idx.mask_where(idx.lower_elem(0), idx + size)


def _along(size: int, d: int, rank: int, x: Tensor) -> Tensor:
    """0..size-1 laid along dim d of a rank-`rank` shape of ones (for broadcasting)."""
    view = [1] * rank
    view[d] = size
    return reshape(arange(0, size, device=x.device), view)


# ---- gathering ---------------------------------------------------------------------------------


@op("Gather")
def gather(data: Tensor, indices: Tensor, *, axis: int = 0) -> Tensor:
    """Entries at `indices` along `axis`; the indices' dims replace that axis."""
    d = norm(axis, data.ndim)
    idx = positive(indices, data.shape[d])
    picked = data.select(d, reshape(idx, [idx.numel()]))
    return reshape(picked, data.shape[:d] + idx.shape + data.shape[d + 1:])


@op("GatherElements")
def gather_elements(data: Tensor, indices: Tensor, *, axis: int = 0) -> Tensor:
    """out[..., i, ...] = data[..., indices[..., i, ...], ...] along `axis`."""
    d = norm(axis, data.ndim)
    if indices.numel() == 0:
        return zeros(indices.shape, device=data.device, dtype=data.dtype)
    return data.gather(d, positive(indices, data.shape[d]))


def _flat_rows(indices: Tensor, dims: Sequence[int]) -> Tensor:
    """Each index tuple of `indices` (last dim) as one row number into `dims`, keeping a
    trailing dim of size 1."""
    lead = indices.shape[:-1] + (1,)
    rows = zeros(lead, device=indices.device, dtype=indices.device.int_dtype)
    for k, size in enumerate(dims):
        part = reshape(indices.narrow(indices.ndim - 1, k, 1), lead)
        rows = rows + positive(part, size) * math.prod(dims[k + 1:])
    return rows


@op("GatherND")
def gather_nd(data: Tensor, indices: Tensor, *, batch_dims: int = 0) -> Tensor:
    """Slices of `data` at the index tuples of `indices`, after `batch_dims` shared dims."""
    b, q = batch_dims, indices.shape[-1]
    batch, dims, rest = data.shape[:b], data.shape[b:b + q], data.shape[b + q:]
    rows = _flat_rows(indices, dims)
    if b:
        offset = _along(math.prod(batch), 0, 1, data) * math.prod(dims)
        rows = rows + reshape(offset, batch + (1,) * (rows.ndim - b))
    table = reshape(data, (math.prod(batch) * math.prod(dims), math.prod(rest)))
    picked = table.select(0, reshape(rows, [rows.numel()]))
    return reshape(picked, indices.shape[:-1] + rest)


# ---- scattering --------------------------------------------------------------------------------


def _combine(base: Tensor, placed: Tensor, reduction: str) -> Tensor:
    """What a scattered value makes of the entry it lands on."""
    if reduction == "none":
        return placed
    if reduction == "mul":
        return base * placed
    if reduction == "max":
        return base.max_pair(placed)
    if reduction == "min":
        return base.min_pair(placed)
    raise ValueError(f"scatter reduction {reduction!r} is not one of none, add, mul, max, min")


def _rounds(rows: Tensor) -> tuple[Tensor, int]:
    """For each row number, how many earlier entries share it; and the most of any + 1."""
    n = rows.numel()
    same = rows.unsqueeze_dim(1).equal(rows.unsqueeze_dim(0))
    order = arange(0, n, device=rows.device)
    earlier = order.unsqueeze_dim(1).greater(order.unsqueeze_dim(0))
    rank = (same & earlier).int().sum_dim(1)
    return rank, int(rank.max().into_scalar()) + 1


def scatter_rows(base: Tensor, rows: Tensor, values: Tensor, reduction: str) -> Tensor:
    """`base` (P, C) with the rows `values` (K, C) written at the row numbers `rows` (K,)."""
    if rows.numel() == 0:
        return base
    if reduction == "add":
        return base.select_assign(0, rows, values)
    rank, count = _rounds(rows) if reduction != "none" else (None, 1)
    ones = zeros((rows.numel(), 1), device=base.device, dtype=base.device.int_dtype) + 1
    hits = zeros((base.shape[0], 1), device=base.device, dtype=ones.dtype)
    out = base
    for r in range(count):
        now = ones if rank is None else rank.equal_elem(r).int()
        vals = values if rank is None else values.mask_fill(rank.not_equal_elem(r), 0)
        hit = hits.select_assign(0, rows, now).greater_elem(0)
        placed = base.zeros_like().select_assign(0, rows, vals)
        out = out.mask_where(hit, _combine(out, placed, reduction))
    return out


@op("ScatterND")
def scatter_nd(data: Tensor, indices: Tensor, updates: Tensor, *,
               reduction: str = "none") -> Tensor:
    """A copy of `data` with the slices at the index tuples of `indices` set (or combined)."""
    q = indices.shape[-1]
    dims, rest = data.shape[:q], data.shape[q:]
    rows = _flat_rows(indices, dims)
    width = math.prod(rest)
    table = reshape(data, (math.prod(dims), width))
    vals = reshape(updates, (rows.numel(), width))
    out = scatter_rows(table, reshape(rows, [rows.numel()]), vals, reduction)
    return reshape(out, data.shape)


@op("ScatterElements")
def scatter_elements(data: Tensor, indices: Tensor, updates: Tensor, *, axis: int = 0,
                     reduction: str = "none") -> Tensor:
    """A copy of `data` with out[..., indices[i], ...] = updates[i] along `axis`."""
    return scatter_along(data, indices, updates, axis, reduction)


@op("Scatter")
def scatter(data: Tensor, indices: Tensor, updates: Tensor, *, axis: int = 0) -> Tensor:
    """ScatterElements without a reduction (its name before opset 11)."""
    return scatter_along(data, indices, updates, axis, "none")


def scatter_along(data: Tensor, indices: Tensor, updates: Tensor, axis: int,
                  reduction: str) -> Tensor:
    """ScatterElements: each update lands at its own position with `indices` along `axis`."""
    d = norm(axis, data.ndim)
    if indices.numel() == 0:
        return data
    flat = positive(indices, data.shape[d]) * math.prod(data.shape[d + 1:])
    for k in range(data.ndim):
        if k != d:
            flat = flat + _along(indices.shape[k], k, data.ndim, data) * math.prod(
                data.shape[k + 1:])
    n = indices.numel()
    table = reshape(data, (data.numel(), 1))
    out = scatter_rows(table, reshape(flat, [n]), reshape(updates, (n, 1)), reduction)
    return reshape(out, data.shape)


# ---- masks and encodings -----------------------------------------------------------------------


@op("OneHot", host=(1,))
def one_hot(indices: Tensor, depth: Any, values: Tensor, *, axis: int = -1) -> Tensor:
    """`values[1]` where a new dim at `axis` equals the index, `values[0]` elsewhere."""
    n = int(scalar(depth) or 0)
    rank = indices.ndim + 1
    a = norm(axis, rank)
    idx = positive(indices, n).unsqueeze_dim(a)
    hot = idx.equal(_along(n, a, rank, indices).cast(idx.dtype))
    off = reshape(values.narrow(0, 0, 1), [1] * rank)
    on = reshape(values.narrow(0, 1, 1), [1] * rank)
    if 0 in hot.shape:
        return zeros(hot.shape, device=values.device, dtype=values.dtype)
    return off.expand(hot.shape).mask_where(hot, on)


@op("NonZero")
def non_zero(x: Tensor) -> Tensor:
    """The positions of the non-zero entries: (rank, count), i64."""
    found = x.bool().argwhere()
    dt = fit(DType.I64, x.device)
    if found.numel() == 0:
        return zeros((x.ndim, found.shape[0]), device=x.device, dtype=dt)
    return found.permute([1, 0]).cast(dt)


@op("Compress")
def compress(x: Tensor, condition: Tensor, *, axis: int | None = None) -> Tensor:
    """The slices along `axis` (or the flattened entries) where `condition` is true."""
    flat = x if axis is not None else reshape(x, [x.numel()])
    d = norm(axis, x.ndim) if axis is not None else 0
    flags = condition.to_data().values()
    keep = [i for i, f in enumerate(flags) if f and i < flat.shape[d]]
    return take(flat, d, keep)


@op("ReverseSequence")
def reverse_sequence(x: Tensor, sequence_lens: Tensor, *, batch_axis: int = 1,
                     time_axis: int = 0) -> Tensor:
    """Reverse the first sequence_lens[b] steps along `time_axis` of each batch entry b."""
    if x.numel() == 0:
        return x
    t_ax, b_ax = norm(time_axis, x.ndim), norm(batch_axis, x.ndim)
    steps = _along(x.shape[t_ax], t_ax, x.ndim, x)
    view = [1] * x.ndim
    view[b_ax] = x.shape[b_ax]
    lens = reshape(sequence_lens.cast(steps.dtype), view)
    back = (lens - 1) - steps
    idx = back.mask_where(steps.greater_equal(lens), steps)
    return x.gather(t_ax, idx.expand(x.shape))
