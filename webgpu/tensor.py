"""The WebGPU tensor primitive: a view (shape, strides, offset, dtype) over a pooled buffer.

Strides and offset count elements and may be negative (flip) or zero (expand). Movement ops that
only re-describe the same elements (reshape of a contiguous view, permute, expand, slice, flip)
return a new view of the same `Block` without touching the device; everything else makes a new
buffer. Kernels read the view's description from a small metadata block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from ..dtype import DType
from .memory import Block


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements: (3, 4) -> (4, 1)."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return tuple(strides)


@dataclass(frozen=True, eq=False)
class GpuTensor:
    """A view of `block`: element (i0, i1, ...) is at offset + sum(i_d * strides[d])."""

    block: Block
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: DType

    @classmethod
    def dense(cls, block: Block, shape: tuple[int, ...], dtype: DType) -> GpuTensor:
        return cls(block, shape, contiguous_strides(shape), 0, dtype)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @cached_property
    def is_contiguous(self) -> bool:
        """Row-major without gaps (sizes-1 dims may have any stride); views are immutable, so
        the answer is kept."""
        want = contiguous_strides(self.shape)
        return all(s == w or n == 1 for s, w, n in zip(self.strides, want, self.shape, strict=True))

    def __repr__(self) -> str:
        return (f"GpuTensor(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype})")

    # ---- views -----------------------------------------------------------------------------
    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> GpuTensor:
        return GpuTensor(self.block, shape, strides, offset, self.dtype)

    def reshaped(self, shape: tuple[int, ...]) -> GpuTensor:
        """A view with another shape; the caller checks `is_contiguous` first."""
        return self.view(shape, contiguous_strides(shape), self.offset)

    def permuted(self, axes: Sequence[int]) -> GpuTensor:
        return self.view(tuple(self.shape[a] for a in axes),
                         tuple(self.strides[a] for a in axes), self.offset)

    def expanded(self, shape: tuple[int, ...]) -> GpuTensor:
        strides = tuple(0 if n != m else s
                        for s, n, m in zip(self.strides, self.shape, shape, strict=True))
        return self.view(shape, strides, self.offset)

    def sliced(self, ranges: Sequence[tuple[int, int, int]]) -> GpuTensor:
        offset = self.offset
        shape, strides = [], []
        for (start, stop, step), stride in zip(ranges, self.strides, strict=True):
            size = max(0, -(-(stop - start) // step)) if step > 0 else max(
                0, -(-(start - stop) // -step))
            offset += start * stride if size else 0
            shape.append(size)
            strides.append(stride * step)
        return self.view(tuple(shape), tuple(strides), offset)

    def flipped(self, axes: Sequence[int]) -> GpuTensor:
        offset = self.offset
        strides = list(self.strides)
        for a in axes:
            if self.shape[a] > 0:
                offset += (self.shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
        return self.view(self.shape, tuple(strides), offset)

    def moved_last(self, dim: int) -> tuple[GpuTensor, tuple[int, ...]]:
        """A view with `dim` moved last, and the axes that move it back."""
        axes = tuple(d for d in range(self.rank) if d != dim) + (dim,)
        back = tuple(axes.index(d) for d in range(self.rank))
        return self.permuted(axes), back
