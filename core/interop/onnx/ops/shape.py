"""Operators that move, reshape, join or split data, and the ones that make shapes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ....backend.base import Backend
from ....creation import arange, arange_step, cat, full, zeros
from ....data import TensorData
from ....device import device as resolve_device
from ....dtype import DType, Kind
from ....shape import broadcast_shapes
from ....tensor import Tensor, from_data
from ..registry import op
from ._util import axes as norm_axes
from ._util import axis as norm
from ._util import dtype_of, ints, scalar

# ---- helpers the index operators share ---------------------------------------------------------


def backend(device: Backend | str | None) -> Backend:
    """The Backend a `device` context keyword names (None: the default device)."""
    return resolve_device(device)


def fit(dtype: DType, dev: Backend) -> DType:
    """`dtype`, or the device's default of its kind where the device lacks it (webgpu: i64)."""
    return dtype if dev.supports(dtype) else dev.default_dtype(dtype.kind)


def on_device(data: TensorData, device: Backend | str | None) -> Tensor:
    """`data` as a tensor on `device`, narrowed to a dtype it has."""
    dev = backend(device)
    return from_data(data.convert(fit(data.dtype, dev)), device=dev)


def int64(values: Sequence[int], shape: Sequence[int], device: Backend | str | None) -> Tensor:
    """An i64 tensor of host ints (0-d when `shape` is empty)."""
    return on_device(TensorData(list(values), shape=tuple(shape), dtype=DType.I64), device)


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """`x` with explicit sizes, where 0 means an empty dim (Tensor.reshape reads 0 as 'keep')."""
    sizes = tuple(int(s) for s in shape)
    if 0 in sizes:
        return zeros(sizes, device=x.device, dtype=x.dtype)
    return x.reshape(sizes)


def take(x: Tensor, d: int, idx: Sequence[int]) -> Tensor:
    """The entries at host-known positions `idx` along dim d, as slices joined (no readback)."""
    if not idx:
        return x.narrow(d, 0, 0)
    parts, i = [], 0
    while i < len(idx):
        j = i + 1
        step = idx[j] - idx[i] if j < len(idx) else 1
        while j < len(idx) and step in (-1, 0, 1) and idx[j] - idx[j - 1] == step:
            j += 1
        lo, hi = min(idx[i:j]), max(idx[i:j])
        piece = x.narrow(d, lo, hi - lo + 1)
        if step == -1 and j - i > 1:
            piece = piece.flip([d])
        elif step == 0 and j - i > 1:
            piece = piece.expand(x.shape[:d] + (j - i,) + x.shape[d + 1:])
        parts.append(piece)
        i = j
    return parts[0] if len(parts) == 1 else cat(parts, d)


# ---- reshaping ---------------------------------------------------------------------------------


@op("Reshape", host=(1,), attr_inputs=(5, ("shape",)))
def reshape_op(data: Tensor, shape: Any, *, allowzero: int = 0) -> Tensor:
    """New shape: 0 copies the input's size (unless allowzero), -1 takes what is left."""
    sizes = ints(shape) or []
    sizes = [data.shape[i] if s == 0 and not allowzero else s for i, s in enumerate(sizes)]
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        sizes[sizes.index(-1)] = data.numel() // known if known else 0
    return reshape(data, sizes)


@op("Flatten")
def flatten(x: Tensor, *, axis: int = 1) -> Tensor:
    """2-d: dims before `axis` make the rows, the rest the columns."""
    a = axis + x.ndim if axis < 0 else axis
    return reshape(x, (math.prod(x.shape[:a]), math.prod(x.shape[a:])))


@op("Squeeze", host=(1,), attr_inputs=(13, ("axes",)))
def squeeze(data: Tensor, axes: Any = None) -> Tensor:
    """Drop the given size-1 dims (all size-1 dims when no axes are given)."""
    listed = ints(axes)
    drop = norm_axes(listed, data.ndim) if listed else [
        d for d, s in enumerate(data.shape) if s == 1]
    return reshape(data, [s for d, s in enumerate(data.shape) if d not in drop])


@op("Unsqueeze", host=(1,), attr_inputs=(13, ("axes",)))
def unsqueeze(data: Tensor, axes: Any) -> Tensor:
    """Insert size-1 dims at `axes`, positions in the output's rank."""
    rank = data.ndim + len(ints(axes) or [])
    new = norm_axes(ints(axes), rank)
    sizes = iter(data.shape)
    return reshape(data, [1 if d in new else next(sizes) for d in range(rank)])


@op("Transpose")
def transpose(data: Tensor, *, perm: Sequence[int] | None = None) -> Tensor:
    """Permute dims (default: reverse them)."""
    order = list(perm) if perm is not None else list(range(data.ndim))[::-1]
    return data.permute(order)


@op("Expand", host=(1,))
def expand(x: Tensor, shape: Any) -> Tensor:
    """Broadcast `x` and `shape` against each other (either may have the larger sizes)."""
    out = broadcast_shapes("Expand", x.shape, tuple(ints(shape) or []))
    if 0 in out:
        return zeros(out, device=x.device, dtype=x.dtype)
    lead = len(out) - x.ndim
    return reshape(x, (1,) * lead + x.shape).expand(out)


@op("Tile", host=(1,))
def tile(x: Tensor, repeats: Any) -> Tensor:
    """Repeat the whole tensor `repeats[d]` times along each dim d."""
    reps = ints(repeats) or []
    out = [r * s for r, s in zip(reps, x.shape, strict=True)]
    if 0 in out:
        return zeros(out, device=x.device, dtype=x.dtype)
    pairs = [v for s in x.shape for v in (1, s)]
    wide = [v for r, s in zip(reps, x.shape, strict=True) for v in (r, s)]
    return x.reshape(pairs).expand(wide).reshape(out)


@op("Identity")
def identity(x: Tensor) -> Tensor:
    """The input unchanged."""
    return x


# ---- joining and splitting ---------------------------------------------------------------------


@op("Concat")
def concat(*xs: Tensor, axis: int) -> Tensor:
    """Join along `axis` (empty inputs are skipped)."""
    parts = [x for x in xs if x is not None]
    d = norm(axis, parts[0].ndim)
    parts = [p for p in parts if p.shape[d] != 0] or parts[:1]
    return parts[0] if len(parts) == 1 else cat(parts, d)


def split_sizes(size: int, parts: int) -> list[int]:
    """Sizes of `parts` chunks of `size`: equal, or ceil-sized with a smaller last one."""
    if size % parts == 0:
        return [size // parts] * parts
    step = size // parts + 1
    return [step] * (parts - 1) + [max(0, size - step * (parts - 1))]


@op("Split", host=(1,), attr_inputs=(13, ("split",)))
def split(x: Tensor, split: Any = None, *, axis: int = 0, num_outputs: int | None = None,
          outputs: int | None = None) -> tuple[Tensor, ...]:
    """Cut along `axis` into the given sizes, or into `num_outputs` (or as many as the node
    has outputs) nearly equal parts."""
    d = norm(axis, x.ndim)
    sizes = ints(split)
    if sizes is None:
        count = num_outputs or outputs
        if not count:
            raise ValueError("Split without `split` needs num_outputs or the node's output "
                             "count")
        sizes = split_sizes(x.shape[d], count)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return tuple(x.narrow(d, s, n) for s, n in zip(starts, sizes, strict=True))


def slice_range(start: int, end: int, step: int, size: int) -> tuple[int, int, int, bool]:
    """ONNX's clamping of one Slice dim: (start, stop, positive step, flipped first)."""
    if step == 0:
        raise ValueError("Slice: steps must not be 0")
    start += size if start < 0 else 0
    end += size if end < 0 else 0
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        return start, max(start, end), step, False
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    count = max(0, -(-(start - end) // -step))
    if count == 0:
        return 0, 0, 1, False
    first = size - 1 - start  # the same entries, counted on the flipped dim
    return first, first + (count - 1) * -step + 1, -step, True


@op("Slice", host=(1, 2, 3, 4), attr_inputs=(10, ("starts", "ends", "axes")))
def slice_op(data: Tensor, starts: Any, ends: Any, axes: Any = None,
             steps: Any = None) -> Tensor:
    """Strided slices of some dims; negative steps walk backwards, bounds are clamped."""
    begin, stop = ints(starts) or [], ints(ends) or []
    dims = ints(axes) or list(range(len(begin)))
    stride = ints(steps) or [1] * len(begin)
    ranges: list[Any] = [None] * data.ndim
    flips = []
    for a, s, e, st in zip(dims, begin, stop, stride, strict=True):
        d = norm(a, data.ndim)
        lo, hi, step, flipped = slice_range(s, e, st, data.shape[d])
        ranges[d] = (lo, hi, step)
        if flipped:
            flips.append(d)
    x = data.flip(flips) if flips else data
    return x.slice(ranges)


# ---- shapes as values --------------------------------------------------------------------------


@op("Shape")
def shape(data: Tensor, *, start: int = 0, end: int | None = None,
          device: Backend | None = None) -> Tensor:
    """The input's dims (those from `start` to `end`) as i64."""
    dims = list(data.shape)[start:end]
    return int64(dims, [len(dims)], device or data.device)


@op("Size")
def size(data: Tensor, *, device: Backend | None = None) -> Tensor:
    """The number of elements, as an i64 scalar."""
    return int64([data.numel()], [], device or data.device)


def _attr_data(value: Any, dtype: DType | None = None) -> TensorData:
    """An attribute value (TensorData, or plain numbers from generated code) as TensorData."""
    if isinstance(value, TensorData):
        return value
    if dtype is None and isinstance(value, (int, float, bool)):
        kind = type(value)
        dtype = {bool: DType.BOOL, int: DType.I64}.get(kind, DType.F32)
    elif dtype is None:
        flat = TensorData(value)
        dtype = {Kind.INT: DType.I64, Kind.FLOAT: DType.F32}.get(flat.kind, DType.BOOL)
    if isinstance(value, (int, float, bool)):
        return TensorData([value], shape=(), dtype=dtype)
    return TensorData(value, dtype=dtype)


@op("Constant")
def constant(*, value: Any = None, value_float: float | None = None,
             value_floats: Sequence[float] | None = None, value_int: int | None = None,
             value_ints: Sequence[int] | None = None, device: Backend | None = None) -> Tensor:
    """The tensor an attribute holds."""
    if value is not None:
        return on_device(_attr_data(value), device)
    for given, dt in ((value_float, DType.F32), (value_floats, DType.F32),
                      (value_int, DType.I64), (value_ints, DType.I64)):
        if given is not None:
            return on_device(_attr_data(given if not isinstance(given, tuple) else
                                        list(given), dt), device)
    raise ValueError("Constant without a value attribute")


@op("ConstantOfShape", host=(0,))
def constant_of_shape(shape: Any, *, value: Any = None,
                      device: Backend | None = None) -> Tensor:
    """A tensor of the given shape filled with the one value of `value` (default f32 0)."""
    data = _attr_data(value) if value is not None else TensorData([0.0], dtype=DType.F32)
    dev = backend(device)
    return full(ints(shape) or [], data.values()[0], device=dev, dtype=fit(data.dtype, dev))


@op("Range", host=(0, 1, 2))
def range_op(start: Any, limit: Any, delta: Any, *, device: Backend | None = None) -> Tensor:
    """start, start + delta, ... up to `limit` (exclusive), in the inputs' dtype."""
    first, last, step = scalar(start), scalar(limit), scalar(delta)
    assert first is not None and last is not None and step is not None
    dev = backend(device)
    dt = fit(_host_dtype(start, first), dev)
    if dt.kind is Kind.INT:
        return arange_step(int(first), int(last), int(step), device=dev, dtype=dt)
    count = max(0, math.ceil((last - first) / step))
    wide = DType.F64 if dt is DType.F64 else DType.F32
    steps = arange(0, count, device=dev).cast(wide)
    return (steps * float(step) + float(first)).cast(dt)


def _host_dtype(value: Any, number: Any) -> DType:
    """The dtype of a host value (a Python number: i64 or f32)."""
    if isinstance(value, (Tensor, TensorData)):
        return value.dtype
    return DType.F32 if isinstance(number, float) else DType.I64


# ---- padding -----------------------------------------------------------------------------------


def _source(i: int, n: int, mode: str) -> int:
    """Where position i (may lie outside 0..n-1) reads from, for a non-constant Pad mode."""
    if mode == "edge":
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    if n == 1:
        return 0
    j = i % (2 * (n - 1))
    return j if j < n else 2 * (n - 1) - j


def _pad_pairs(x: Tensor, pads: Any, axes: Any) -> list[tuple[int, int]]:
    """Per dim (before, after) from ONNX pads [b1, b2, ..., e1, e2, ...] over `axes`."""
    values = ints(pads) or []
    listed = ints(axes) or list(range(x.ndim))
    half = len(values) // 2
    pairs = [(0, 0)] * x.ndim
    for k, a in enumerate(listed):
        pairs[norm(a, x.ndim)] = (values[k], values[k + half])
    return pairs


def crop(x: Tensor, pairs: Sequence[tuple[int, int]]) -> Tensor:
    """Remove the entries that negative pads cut off."""
    ranges: list[Any] = [(max(0, -b), s - max(0, -e)) for (b, e), s in zip(pairs, x.shape,
                                                                            strict=True)]
    return x.slice(ranges)


def padded(data: Tensor, pairs: Sequence[tuple[int, int]], mode: str = "constant",
           fill: Any = None) -> Tensor:
    """`data` with (before, after) entries added per dim; negative counts crop."""
    x = crop(data, pairs)
    grow = [(max(0, b), max(0, e)) for b, e in pairs]
    if mode == "constant":
        flat = [v for b, e in reversed(grow) for v in (b, e)]
        return x.pad(flat, fill if fill is not None else 0)
    if mode not in ("reflect", "edge", "wrap"):
        raise ValueError(f"Pad mode {mode!r} is not one of constant, reflect, edge, wrap")
    for d, (b, e) in enumerate(grow):
        n = x.shape[d]
        if (b or e) and n == 0:
            raise ValueError(f"Pad mode {mode!r} cannot pad dim {d}, which is empty")
        if b or e:
            x = take(x, d, [_source(i, n, mode) for i in range(-b, n + e)])
    return x


@op("Pad", host=(1, 2, 3), attr_inputs=(11, ("pads", "value")))
def pad(data: Tensor, pads: Any, constant_value: Any = None, axes: Any = None, *,
        mode: str = "constant") -> Tensor:
    """Pad (or, with negative pads, crop) with a constant, a reflection, the edge or a wrap."""
    return padded(data, _pad_pairs(data, pads, axes), mode, scalar(constant_value))


@op("CenterCropPad", host=(1,))
def center_crop_pad(data: Tensor, shape: Any, *, axes: Sequence[int] | None = None) -> Tensor:
    """Crop or zero-pad the given axes to `shape`, keeping the content centred."""
    dims = [norm(a, data.ndim) for a in (axes if axes is not None else range(data.ndim))]
    pairs = [(0, 0)] * data.ndim
    for d, want in zip(dims, ints(shape) or [], strict=True):
        diff = want - data.shape[d]
        half = abs(diff) // 2  # the extra entry of an odd difference goes on the right
        pairs[d] = (half, diff - half) if diff > 0 else (-half, diff + half)
    return padded(data, pairs)


# ---- blocks, triangles, identity ---------------------------------------------------------------


@op("DepthToSpace")
def depth_to_space(x: Tensor, *, blocksize: int, mode: str = "DCR") -> Tensor:
    """Move channel blocks into (blocksize x blocksize) spatial tiles."""
    b, c, h, w = x.shape
    k = blocksize
    if mode == "DCR":
        t = reshape(x, (b, k, k, c // (k * k), h, w)).permute([0, 3, 4, 1, 5, 2])
    else:
        t = reshape(x, (b, c // (k * k), k, k, h, w)).permute([0, 1, 4, 2, 5, 3])
    return reshape(t, (b, c // (k * k), h * k, w * k))


@op("SpaceToDepth")
def space_to_depth(x: Tensor, *, blocksize: int, mode: str = "DCR") -> Tensor:
    """Move (blocksize x blocksize) spatial tiles into channels (DepthToSpace's inverse)."""
    b, c, h, w = x.shape
    k = blocksize
    t = reshape(x, (b, c, h // k, k, w // k, k))
    order = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    return reshape(t.permute(order), (b, c * k * k, h // k, w // k))


@op("Trilu", host=(1,))
def trilu(x: Tensor, k: Any = None, *, upper: int = 1) -> Tensor:
    """Keep the upper (or lower) triangle from diagonal k of the last two dims."""
    diag = int(scalar(k) or 0)
    if x.numel() == 0:
        return x
    return x.triu(diag) if upper else x.tril(diag)


@op("EyeLike")
def eye_like(x: Tensor, *, dtype: int | None = None, k: int = 0) -> Tensor:
    """Ones on diagonal k of a matrix shaped like `x`, zeros elsewhere."""
    rows, cols = x.shape
    dt = fit(dtype_of(dtype), x.device) if dtype is not None else x.dtype
    if rows == 0 or cols == 0:
        return zeros((rows, cols), device=x.device, dtype=dt)
    r = arange(0, rows, device=x.device).unsqueeze_dim(1)
    c = arange(0, cols, device=x.device).unsqueeze_dim(0)
    return (c - r).equal_elem(k).cast(dt)
