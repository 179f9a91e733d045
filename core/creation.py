"""Functions that make tensors: from data, constants, ranges, random, masks, grids.

Each takes `device=` (a name such as "numpy" or "autodiff<numpy>", a Backend, or None for the
default from PYRITE_BACKEND) and, where it makes sense, `dtype=`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .backend.base import Backend
from .distribution import Bernoulli, Default, Distribution, Normal, Uniform
from .dtype import DType, Kind
from .dtype import dtype as to_dtype
from .errors import DimError, KindError, ShapeError
from .tensor import Tensor, _supported, from_data

Device = Backend | str | None


def _shape(op: str, shape: Sequence[int] | int) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if any((not isinstance(s, int)) or s < 0 for s in dims):
        raise ShapeError(f"{op}: sizes must be non-negative ints, got {shape!r}")
    return dims


def _target(device: Device, dtype: DType | str | None, kind: Kind) -> tuple[Backend, DType]:
    from .device import device as resolve
    backend = resolve(device)
    if dtype is None:
        return backend, backend.default_dtype(kind)
    return backend, _supported(backend, to_dtype(dtype), "create")


def tensor(data: Any, *, device: Device = None, dtype: DType | str | None = None) -> Tensor:
    """A tensor from nested lists, numbers, TensorData, `array.array` or numpy arrays.

    >>> tensor([[1.0, 2.0], [3.0, 4.0]]).shape
    (2, 2)
    """
    return from_data(data, device=device, dtype=dtype)


def from_floats(values: Any, *, device: Device = None) -> Tensor:
    """A Float tensor (the device's float dtype) from numbers or nested lists."""
    return from_data(values, device=device, kind=Kind.FLOAT)


def from_ints(values: Any, *, device: Device = None) -> Tensor:
    """An Int tensor (the device's int dtype) from ints or nested lists."""
    return from_data(values, device=device, kind=Kind.INT)


def full(shape: Sequence[int] | int, fill_value: float | int | bool, *, device: Device = None,
         dtype: DType | str | None = None) -> Tensor:
    """A tensor filled with one value; the kind follows the value unless dtype says otherwise."""
    kind = Kind.BOOL if isinstance(fill_value, bool) else (
        Kind.INT if isinstance(fill_value, int) else Kind.FLOAT)
    backend, dt = _target(device, dtype, kind)
    dims = _shape("full", shape)
    value = fill_value if dt.kind is not Kind.INT else int(fill_value)
    lo, hi = dt.bounds
    if dt.kind is not Kind.BOOL and not lo <= value <= hi and not math.isinf(value):
        from .errors import ConversionOverflow
        raise ConversionOverflow(f"full: value {fill_value} does not fit {dt}")
    return Tensor._wrap(backend.full(dims, value, dt), backend, dt.kind)


def zeros(shape: Sequence[int] | int, *, device: Device = None,
          dtype: DType | str | None = None) -> Tensor:
    """A Float (or `dtype`) tensor of zeros."""
    backend, dt = _target(device, dtype, Kind.FLOAT)
    return Tensor._wrap(backend.full(_shape("zeros", shape), 0, dt), backend, dt.kind)


def ones(shape: Sequence[int] | int, *, device: Device = None,
         dtype: DType | str | None = None) -> Tensor:
    """A Float (or `dtype`) tensor of ones."""
    backend, dt = _target(device, dtype, Kind.FLOAT)
    return Tensor._wrap(backend.full(_shape("ones", shape), 1, dt), backend, dt.kind)


def empty(shape: Sequence[int] | int, *, device: Device = None,
          dtype: DType | str | None = None) -> Tensor:
    """An uninitialised tensor; pyrite fills it with zeros so results never depend on garbage."""
    return zeros(shape, device=device, dtype=dtype)


def uninitialized(shape: Sequence[int] | int, *, device: Device = None,
                  dtype: DType | str | None = None) -> Tensor:
    """A Float (or `dtype`) tensor whose values are undefined (no kernel, no upload on webgpu):
    only for values that are written before anything reads them, as the params of a model that
    `pyrite.module.init_from_record` builds. Use `empty` (zeros) anywhere else."""
    backend, dt = _target(device, dtype, Kind.FLOAT)
    return Tensor._wrap(backend.uninitialized(_shape("uninitialized", shape), dt), backend,
                        dt.kind)


def eye(size: int, *, device: Device = None, dtype: DType | str | None = None) -> Tensor:
    """The (size, size) identity matrix."""
    backend, dt = _target(device, dtype, Kind.FLOAT)
    idx = arange(0, size, device=backend)
    return (idx.unsqueeze_dim(1) == idx.unsqueeze_dim(0)).cast(dt)


def arange(start: int, end: int | None = None, *, device: Device = None,
           dtype: DType | str | None = None) -> Tensor:
    """Int tensor start, start+1, ..., end-1 (`arange(n)` is 0..n-1)."""
    return arange_step(start, end, 1, device=device, dtype=dtype)


def arange_step(start: int, end: int | None, step: int, *, device: Device = None,
                dtype: DType | str | None = None) -> Tensor:
    """Int tensor from start to end (exclusive) by step (step may be negative, not 0)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ShapeError("arange_step: step must not be 0")
    backend, dt = _target(device, dtype, Kind.INT)
    return Tensor._wrap(backend.arange(int(start), int(end), int(step), dt), backend, dt.kind)


def random(shape: Sequence[int] | int, distribution: Distribution = Default, *,
           device: Device = None, dtype: DType | str | None = None) -> Tensor:
    """A Float (or `dtype`) tensor of random values; reproducible after `seed(n)`.

    >>> from pyrite import seed, Normal
    >>> seed(0); a = random((2,), Normal(0, 1)).to_list()
    >>> seed(0); a == random((2,), Normal(0, 1)).to_list()
    True
    """
    if not isinstance(distribution, (Uniform, Normal, Bernoulli)):
        raise TypeError(f"random: distribution must be Uniform, Normal or Bernoulli, "
                        f"got {distribution!r}")
    if isinstance(distribution, Normal) and distribution.std < 0:
        raise ValueError(f"random: Normal std must be >= 0, got {distribution.std}")
    if isinstance(distribution, Bernoulli) and not 0 <= distribution.prob <= 1:
        raise ValueError(f"random: Bernoulli prob must be in [0, 1], got {distribution.prob}")
    backend, dt = _target(device, dtype, Kind.FLOAT)
    return Tensor._wrap(backend.random(_shape("random", shape), distribution, dt), backend, dt.kind)


def int_random(shape: Sequence[int] | int, distribution: Distribution, *,
               device: Device = None, dtype: DType | str | None = None) -> Tensor:
    """An Int tensor of random values: Uniform(low, high) gives integers low..high-1."""
    backend, dt = _target(device, dtype, Kind.INT)
    if dt.kind is not Kind.INT:
        raise KindError(f"int_random: dtype {dt} is not an integer dtype")
    if isinstance(distribution, Uniform):
        if int(distribution.high) <= int(distribution.low):
            raise ValueError(f"int_random: empty range {distribution}")
        return Tensor._wrap(backend.random(_shape("int_random", shape), distribution, dt),
                            backend, Kind.INT)
    return random(shape, distribution, device=backend, dtype=backend.float_dtype).round().cast(dt)


def one_hot(index: int, num_classes: int, *, device: Device = None,
            dtype: DType | str | None = None) -> Tensor:
    """Float vector of num_classes zeros with a one at `index`."""
    if not 0 <= index < num_classes:
        raise DimError(f"one_hot: index {index} is out of range for {num_classes} classes")
    backend, dt = _target(device, dtype, Kind.FLOAT)
    return (arange(0, num_classes, device=backend) == index).cast(dt)


def cartesian_grid(shape: Sequence[int], *, device: Device = None) -> Tensor:
    """Int tensor of shape (*shape, len(shape)) holding each position's own index."""
    dims = _shape("cartesian_grid", shape)
    from .device import device as resolve
    backend = resolve(device)
    parts = []
    for d, size in enumerate(dims):
        view = [1] * len(dims)
        view[d] = size
        parts.append(arange(0, size, device=backend).reshape(view).expand(dims))
    return Tensor.stack(parts, len(dims))


def _tri(op: str, shape: Sequence[int], diagonal: int,
         device: Device) -> tuple[Tensor, tuple[int, ...]]:
    dims = _shape(op, shape)
    if len(dims) < 2:
        raise DimError(f"{op}: needs a shape of rank >= 2, got {dims}")
    from .device import device as resolve
    backend = resolve(device)
    rows = arange(0, dims[-2], device=backend).unsqueeze_dim(1)
    cols = arange(0, dims[-1], device=backend).unsqueeze_dim(0)
    return cols - rows, dims


def tril_mask(shape: Sequence[int], diagonal: int = 0, *, device: Device = None) -> Tensor:
    """Bool mask, true *outside* the lower triangle (col - row > diagonal): what `tril` zeroes."""
    offset, dims = _tri("tril_mask", shape, diagonal, device)
    return offset.greater_elem(diagonal).expand(dims)


def triu_mask(shape: Sequence[int], diagonal: int = 0, *, device: Device = None) -> Tensor:
    """Bool mask, true *outside* the upper triangle (col - row < diagonal): what `triu` zeroes."""
    offset, dims = _tri("triu_mask", shape, diagonal, device)
    return offset.lower_elem(diagonal).expand(dims)


def diag_mask(shape: Sequence[int], diagonal: int = 0, *, device: Device = None) -> Tensor:
    """Bool mask, false on the diagonal (col - row == diagonal), true elsewhere (as Burn)."""
    offset, dims = _tri("diag_mask", shape, diagonal, device)
    return offset.not_equal_elem(diagonal).expand(dims)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing dim."""
    return Tensor.cat(tensors, dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join along a new dim."""
    return Tensor.stack(tensors, dim)


def seed(value: int, *, device: Device = None) -> None:
    """Seed a device's random generator (the default device when none is named)."""
    from .device import device as resolve
    resolve(device).seed(int(value))
