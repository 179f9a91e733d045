"""Shape arithmetic shared by the front end: dims, broadcasting, ranges. Errors name the op."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .errors import DimError, ShapeError


def norm_dim(op: str, dim: int, rank: int, *, extra: int = 0) -> int:
    """A dim in range(-rank - extra, rank + extra), made non-negative."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise DimError(f"{op}: dim must be an int, got {dim!r}")
    size = rank + extra
    if not -size <= dim < size:
        raise DimError(f"{op}: dim {dim} is out of range for a tensor of rank {rank} "
                       f"(valid: {-size}..{size - 1})")
    return dim + size if dim < 0 else dim


def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcasting rule, with an error that shows both shapes and the dim."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + a
    pb = (1,) * (rank - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ShapeError(f"{op}: shapes {a} and {b} cannot broadcast: dim {i - rank} is "
                             f"{x} vs {y}; sizes must be equal or 1")
    return tuple(out)


def resolve_reshape(op: str, old: tuple[int, ...], new: Sequence[int]) -> tuple[int, ...]:
    """Burn's reshape: -1 infers one size, 0 keeps the size of that dim."""
    sizes = [old[i] if s == 0 and i < len(old) else int(s) for i, s in enumerate(new)]
    if sizes.count(-1) > 1:
        raise ShapeError(f"{op}: only one dim can be -1, got {tuple(new)}")
    total = math.prod(old)
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        if known == 0 or total % known:
            raise ShapeError(f"{op}: cannot reshape {old} ({total} elements) to {tuple(new)}")
        sizes[sizes.index(-1)] = total // known
    if any(s < 0 for s in sizes) or math.prod(sizes) != total:
        raise ShapeError(f"{op}: cannot reshape {old} ({total} elements) to {tuple(new)} "
                         f"({math.prod(sizes)} elements)")
    return tuple(sizes)


def resolve_range(op: str, dim: int, size: int, spec: object) -> tuple[int, int, int]:
    """A slice spec for one dim -> (start, stop, step) with step > 0, clamped like Python slices.

    Accepts `slice`, `range`, `(start, stop)` / `(start, stop, step)` tuples (None for open
    ends), an int (one index, kept as size 1) or None (the whole dim).
    """
    if spec is None:
        return (0, size, 1)
    if isinstance(spec, int) and not isinstance(spec, bool):
        i = spec + size if spec < 0 else spec
        if not 0 <= i < size:
            raise DimError(f"{op}: index {spec} is out of range for dim {dim} of size {size}")
        return (i, i + 1, 1)
    if isinstance(spec, range):
        spec = slice(spec.start, spec.stop, spec.step)
    elif isinstance(spec, tuple) and 2 <= len(spec) <= 3:
        spec = slice(*spec)
    if not isinstance(spec, slice):
        raise ShapeError(f"{op}: dim {dim}: expected a slice, range, (start, stop) or int, "
                         f"got {spec!r}")
    if spec.step is not None and spec.step <= 0:
        raise ShapeError(f"{op}: dim {dim}: step must be positive, got {spec.step}; "
                         f"use flip() to reverse")
    start, stop, step = spec.indices(size)
    return (start, max(start, stop), step)


def range_len(r: tuple[int, int, int]) -> int:
    start, stop, step = r
    return max(0, -(-(stop - start) // step))
