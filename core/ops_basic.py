# mypy: disable-error-code="misc"
# (mixin methods annotate `self: Tensor`, the class they are mixed into; mypy calls that
# 'misc' because Tensor is not a base of the mixin)
"""Burn's basic ops, available on every kind: movement, slicing, joining, comparison, any/all."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .backend import binary as B
from .dtype import DType, Kind
from .dtype import dtype as to_dtype
from .errors import DeviceError, DimError, KindError, ShapeError
from .shape import norm_dim, range_len, resolve_range, resolve_reshape

if TYPE_CHECKING:
    from .tensor import Tensor


class BasicOps:
    """Mixin of `Tensor`: ops of Burn's "basic" table."""

    __slots__ = ()

    # ---- reshaping ---------------------------------------------------------------------------
    def reshape(self: Tensor, shape: Sequence[int]) -> Tensor:
        """Same values, new shape; -1 infers one size and 0 keeps that dim's size.

        >>> from pyrite import arange
        >>> arange(0, 6).reshape([2, -1]).shape
        (2, 3)
        """
        new = resolve_reshape("reshape", self.shape, list(shape))
        if new == self.shape:
            return self
        return self._new(self._backend.reshape(self._prim, new))

    def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge dims start_dim..end_dim (inclusive) into one."""
        shape = self.shape
        s = norm_dim("flatten", start_dim, len(shape))
        e = norm_dim("flatten", end_dim, len(shape))
        if e < s:
            raise DimError(f"flatten: end_dim {end_dim} comes before start_dim {start_dim}")
        return self.reshape(shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])

    def squeeze(self: Tensor, dim: int | None = None) -> Tensor:
        """Remove a dim of size 1 (all of them when dim is None)."""
        shape = self.shape
        if dim is None:
            return self.reshape([s for s in shape if s != 1])
        d = norm_dim("squeeze", dim, len(shape))
        if shape[d] != 1:
            raise ShapeError(f"squeeze: dim {dim} has size {shape[d]}, not 1 (shape {shape})")
        return self.reshape(shape[:d] + shape[d + 1:])

    def squeeze_dims(self: Tensor, dims: Sequence[int]) -> Tensor:
        """Remove several dims of size 1."""
        shape = self.shape
        drop = {norm_dim("squeeze_dims", d, len(shape)) for d in dims}
        for d in drop:
            if shape[d] != 1:
                raise ShapeError(f"squeeze_dims: dim {d} has size {shape[d]}, not 1")
        return self.reshape([s for i, s in enumerate(shape) if i not in drop])

    def unsqueeze(self: Tensor, ndim: int | None = None) -> Tensor:
        """Add leading dims of size 1: one, or as many as reach rank `ndim` (Burn's unsqueeze)."""
        shape = self.shape
        target = len(shape) + 1 if ndim is None else ndim
        if target < len(shape):
            raise DimError(f"unsqueeze: rank {target} is below the tensor's rank {len(shape)}")
        return self.reshape((1,) * (target - len(shape)) + shape)

    def unsqueeze_dim(self: Tensor, dim: int) -> Tensor:
        """Insert a dim of size 1 at `dim` (negative counts from the new rank's end)."""
        shape = self.shape
        d = norm_dim("unsqueeze_dim", dim, len(shape), extra=1)
        return self.reshape(shape[:d] + (1,) + shape[d:])

    def permute(self: Tensor, axes: Sequence[int]) -> Tensor:
        """Reorder dims: out.shape[i] = shape[axes[i]]."""
        rank = self.ndim
        norm = tuple(norm_dim("permute", a, rank) for a in axes)
        if sorted(norm) != list(range(rank)):
            raise DimError(f"permute: axes {tuple(axes)} are not a permutation of 0..{rank - 1}")
        if norm == tuple(range(rank)):
            return self
        return self._new(self._backend.permute(self._prim, norm))

    def movedim(self: Tensor, src: int | Sequence[int], dst: int | Sequence[int]) -> Tensor:
        """Move dims from `src` positions to `dst` positions, keeping the others in order."""
        rank = self.ndim
        s = [src] if isinstance(src, int) else list(src)
        d = [dst] if isinstance(dst, int) else list(dst)
        if len(s) != len(d):
            raise DimError(f"movedim: {len(s)} source dims but {len(d)} destinations")
        s = [norm_dim("movedim", x, rank) for x in s]
        d = [norm_dim("movedim", x, rank) for x in d]
        if len(set(s)) != len(s) or len(set(d)) != len(d):
            raise DimError(f"movedim: repeated dims in {src} -> {dst}")
        rest = iter(i for i in range(rank) if i not in s)
        placed = dict(zip(d, s, strict=True))
        return self.permute([placed[i] if i in placed else next(rest) for i in range(rank)])

    def swap_dims(self: Tensor, dim1: int, dim2: int) -> Tensor:
        """Exchange two dims."""
        rank = self.ndim
        a, b = norm_dim("swap_dims", dim1, rank), norm_dim("swap_dims", dim2, rank)
        axes = list(range(rank))
        axes[a], axes[b] = axes[b], axes[a]
        return self.permute(axes)

    def transpose(self: Tensor) -> Tensor:
        """Swap the last two dims (a no-op on rank 1)."""
        if self.ndim < 2:
            return self
        return self.swap_dims(-1, -2)

    @property
    def T(self: Tensor) -> Tensor:  # noqa: N802 - numpy's name
        return self.transpose()

    def expand(self: Tensor, shape: Sequence[int]) -> Tensor:
        """Broadcast to `shape` without copying; -1 keeps a size; new leading dims allowed."""
        old = self.shape
        new = list(shape)
        if len(new) < len(old):
            raise ShapeError(f"expand: cannot expand shape {old} to fewer dims {tuple(shape)}")
        lead = len(new) - len(old)
        for i, s in enumerate(new):
            if s == -1:
                if i < lead:
                    raise ShapeError(f"expand: -1 is not allowed in a new leading dim: {shape}")
                new[i] = old[i - lead]
            elif i >= lead and old[i - lead] not in (1, s):
                raise ShapeError(f"expand: cannot expand shape {old} to {tuple(shape)}: dim "
                                 f"{i} is {old[i - lead]}, which is neither 1 nor {s}")
        target = tuple(new)
        if target == old:
            return self
        x = self.reshape((1,) * lead + old) if lead else self
        return self._new(self._backend.expand(x._prim, target))

    def repeat_dim(self: Tensor, dim: int, times: int) -> Tensor:
        """Tile the tensor `times` times along `dim`."""
        d = norm_dim("repeat_dim", dim, self.ndim)
        if times < 1:
            raise ShapeError(f"repeat_dim: times must be >= 1, got {times}")
        from .tensor import Tensor
        return Tensor.cat([self] * times, d) if times > 1 else self

    def repeat(self: Tensor, sizes: Sequence[int]) -> Tensor:
        """Tile along every dim: `sizes[i]` copies along dim i (like torch's repeat)."""
        if len(sizes) < self.ndim:
            raise ShapeError(f"repeat: {len(sizes)} sizes for a tensor of rank {self.ndim}")
        x = self.unsqueeze(len(sizes))
        for d, times in enumerate(sizes):
            x = x.repeat_dim(d, times)
        return x

    # ---- slicing -----------------------------------------------------------------------------
    def _ranges(self: Tensor, op: str, ranges: Sequence[Any]) -> list[tuple[int, int, int]]:
        shape = self.shape
        if isinstance(ranges, (slice, range, int)):
            ranges = [ranges]
        if len(ranges) > len(shape):
            raise DimError(f"{op}: {len(ranges)} ranges for a tensor of rank {len(shape)}")
        out = [resolve_range(op, d, shape[d], r) for d, r in enumerate(ranges)]
        return out + [(0, s, 1) for s in shape[len(out):]]

    def slice(self: Tensor, ranges: Sequence[Any]) -> Tensor:
        """A view of the given ranges (one per leading dim; missing dims are whole).

        Ranges are `slice`s, `range`s, `(start, stop)` tuples, ints (kept as size 1) or None.

        >>> from pyrite import arange
        >>> arange(0, 12).reshape([3, 4]).slice([(1, 3), slice(None, None, 2)]).to_list()
        [[4, 6], [8, 10]]
        """
        rs = self._ranges("slice", ranges)
        if all(r == (0, s, 1) for r, s in zip(rs, self.shape, strict=True)):
            return self
        return self._new(self._backend.slice(self._prim, rs))

    def slice_assign(self: Tensor, ranges: Sequence[Any], values: Tensor) -> Tensor:
        """A copy with the given region replaced by `values` (broadcast to the region)."""
        rs = self._ranges("slice_assign", ranges)
        region = tuple(range_len(r) for r in rs)
        values = self._coerce("slice_assign", values)
        if values.shape != region:
            try:
                values = values.expand(region)
            except ShapeError:
                raise ShapeError(f"slice_assign: values of shape {values.shape} do not fit the "
                                 f"region {region}") from None
        return self._new(self._backend.slice_assign(self._prim, rs, values._prim))

    def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
        """`length` entries from `start` along `dim`."""
        d = norm_dim("narrow", dim, self.ndim)
        size = self.shape[d]
        if start < 0:
            start += size
        if not (0 <= start and length >= 0 and start + length <= size):
            raise DimError(f"narrow: start {start} + length {length} exceeds size {size} "
                           f"of dim {dim}")
        return self.slice([None] * d + [(start, start + length)])

    def chunk(self: Tensor, num_chunks: int, dim: int = 0) -> list[Tensor]:
        """Split into at most `num_chunks` pieces of ceil(size / num_chunks) along `dim`."""
        d = norm_dim("chunk", dim, self.ndim)
        if num_chunks < 1:
            raise ShapeError(f"chunk: num_chunks must be >= 1, got {num_chunks}")
        size = self.shape[d]
        step = max(1, -(-size // num_chunks))
        return [self.narrow(d, s, min(step, size - s)) for s in range(0, size, step)]

    def split(self: Tensor, split_size: int, dim: int = 0) -> list[Tensor]:
        """Pieces of `split_size` along `dim` (the last may be smaller)."""
        d = norm_dim("split", dim, self.ndim)
        size = self.shape[d]
        return [self.narrow(d, s, min(split_size, size - s)) for s in range(0, size, split_size)]

    def flip(self: Tensor, axes: Sequence[int]) -> Tensor:
        """Reverse the order of entries along each of `axes`."""
        rank = self.ndim
        norm = tuple(sorted({norm_dim("flip", a, rank) for a in axes}))
        if not norm:
            return self
        return self._new(self._backend.flip(self._prim, norm))

    # ---- Python indexing -----------------------------------------------------------------------
    def _index_plan(self: Tensor, key: Any) -> tuple[list[Any], list[int], list[int]]:
        """Turn `t[key]` into slice ranges, dims to squeeze (int keys) and dims to insert."""
        if not isinstance(key, tuple):
            key = (key,)
        shape = self.shape
        if sum(k is Ellipsis for k in key) > 1:
            raise DimError("index: only one ... is allowed")
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        if used > len(shape):
            raise DimError(f"index: {used} indices for a tensor of rank {len(shape)}")
        ranges: list[Any] = []
        squeeze: list[int] = []
        insert: list[int] = []
        out_pos = 0
        for k in key:
            if k is Ellipsis:
                fill = len(shape) - used
                ranges += [None] * fill
                out_pos += fill
            elif k is None:
                insert.append(out_pos)
                out_pos += 1
            elif isinstance(k, int) and not isinstance(k, bool):
                squeeze.append(len(ranges))
                ranges.append(k)
            elif isinstance(k, (slice, range)):
                ranges.append(k)
                out_pos += 1
            else:
                raise KindError(f"index: unsupported index {k!r}; use ints, slices, ..., None, "
                                f"or select()/gather()/mask_where() for tensor indices")
        return ranges, squeeze, insert

    def index(self: Tensor, key: Any) -> Tensor:
        """numpy-style basic indexing: ints drop their dim, slices keep it (`t[0, 1:3, ::2]`).

        A 1-D Int tensor or list of ints as the only key selects rows (`select(0, idx)`).
        """
        from .tensor import Tensor
        if isinstance(key, Tensor) or (isinstance(key, list) and all(
                isinstance(i, int) for i in key)):
            idx = key if isinstance(key, Tensor) else Tensor(key, device=self._backend)
            return self.select(0, idx)
        ranges, squeeze, insert = self._index_plan(key)
        out = self.slice(ranges)
        if squeeze:
            out = out.squeeze_dims(squeeze)
        for pos in insert:
            out = out.unsqueeze_dim(pos)
        return out

    def index_assign(self: Tensor, key: Any, value: Any) -> Tensor:
        """A copy with `t[key]` replaced by `value` (what `t[key] = value` stores)."""
        ranges, squeeze, insert = self._index_plan(key)
        if insert:
            raise DimError("index assignment: None (new axis) is not allowed on the left side")
        values = self._coerce("index assignment", value)
        region = tuple(range_len(r) for r in self._ranges("index assignment", ranges))
        # values broadcast to t[key]'s shape, where int keys have dropped their dims (numpy)
        view = tuple(s for d, s in enumerate(region) if d not in squeeze)
        if values.shape != view:
            extra = values.ndim - len(view)
            if extra > 0 and all(s == 1 for s in values.shape[:extra]):
                values = values.reshape(values.shape[extra:])
            try:
                values = values.expand(view)
            except ShapeError:
                raise ShapeError(f"index assignment: values of shape {values.shape} do not "
                                 f"broadcast to t[key] of shape {view}") from None
        return self.slice_assign(ranges, values.reshape(region))

    def _coerce(self: Tensor, op: str, value: Any) -> Tensor:
        """A value as a tensor on this device and of this dtype (scalars become one element)."""
        from .tensor import Tensor
        if isinstance(value, Tensor):
            self._same_device(op, value)
            if value._kind is not self._kind:
                raise KindError(f"{op}: {value._kind.value} values for a {self._kind.value} "
                                f"tensor; convert them first")
            return value if value.dtype is self.dtype else value.cast(self.dtype)
        if isinstance(value, (int, float, bool)):
            scalar = self._scalar_for(op, value)
            return self._new(self._backend.full((1,) * max(self.ndim, 1), scalar, self.dtype))
        return Tensor(value, device=self._backend, dtype=self.dtype)

    # ---- joining -----------------------------------------------------------------------------
    @staticmethod
    def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
        """Concatenate along an existing dim; all other sizes must match."""
        if not tensors:
            raise ShapeError("cat: needs at least one tensor")
        first = tensors[0]
        d = norm_dim("cat", dim, first.ndim)
        shape = first.shape
        for i, t in enumerate(tensors[1:], 1):
            if t._backend != first._backend:
                raise DeviceError(f"cat: tensor 0 is on {first._backend.name}, tensor {i} on "
                                  f"{t._backend.name}; move them with .to_device(...)")
            if t._kind is not first._kind:
                raise KindError(f"cat: tensor 0 is {first._kind.value}, tensor {i} is "
                                f"{t._kind.value}")
            s = t.shape
            if len(s) != len(shape) or any(a != b for j, (a, b) in enumerate(
                    zip(s, shape, strict=True)) if j != d):
                raise ShapeError(f"cat: tensor {i} has shape {s}, tensor 0 has {shape}; all "
                                 f"sizes but dim {dim} must match")
        if len(tensors) == 1:
            return first
        dt = first.dtype
        prims = [t._prim if t.dtype is dt else t.cast(dt)._prim for t in tensors]
        return first._new(first._backend.cat(prims, d))

    @staticmethod
    def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
        """Join along a new dim; all shapes must match."""
        if not tensors:
            raise ShapeError("stack: needs at least one tensor")
        shape = tensors[0].shape
        for i, t in enumerate(tensors):
            if t.shape != shape:
                raise ShapeError(f"stack: tensor {i} has shape {t.shape}, tensor 0 has {shape}")
        d = norm_dim("stack", dim, len(shape), extra=1)
        from .tensor import Tensor
        return Tensor.cat([t.unsqueeze_dim(d) for t in tensors], d)

    # ---- comparison and logic ----------------------------------------------------------------
    def equal(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ==, as a Bool tensor."""
        return self._binary(B.EQUAL, other)

    def not_equal(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise !=, as a Bool tensor."""
        return self._binary(B.NOT_EQUAL, other)

    def _as_bool(self: Tensor) -> Tensor:
        return self if self._kind is Kind.BOOL else self.bool()

    def any(self: Tensor) -> Tensor:
        """Whether any element is true / non-zero: a Bool tensor of shape (1,)."""
        return self._as_bool().int().reshape([-1]).sum_dim(0).greater_elem(0)

    def all(self: Tensor) -> Tensor:
        """Whether every element is true / non-zero: a Bool tensor of shape (1,)."""
        return self._as_bool().bool_not().any().bool_not()

    def any_dim(self: Tensor, dim: int) -> Tensor:
        """`any` along dim, keeping it with size 1."""
        return self._as_bool().int().sum_dim(dim).greater_elem(0)

    def all_dim(self: Tensor, dim: int) -> Tensor:
        """`all` along dim, keeping it with size 1."""
        return self._as_bool().bool_not().any_dim(dim).bool_not()

    # ---- dtype -------------------------------------------------------------------------------
    def cast(self: Tensor, dtype: DType | str) -> Tensor:
        """The values in another dtype (kind follows the dtype). Float -> int truncates."""
        target = to_dtype(dtype)
        if target is self.dtype:
            return self
        if not self._backend.supports(target):
            raise KindError(f"cast: {self._backend.name} does not support {target}")
        return self._new(self._backend.cast(self._prim, target), target.kind)

    def clone(self: Tensor) -> Tensor:
        """The same tensor (tensors are immutable: clones share storage safely)."""
        return self._new(self._prim)

