"""Helpers the operator functions share: host numbers out of values, axes, dtypes, padding
along a dim, and the float detour integer inputs take."""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ....backend.base import Backend
from ....data import TensorData
from ....dtype import DType, Kind
from ....tensor import Tensor

Legacy = Sequence[int] | None  # the opset-1 `consumed_inputs` attribute, which changes nothing
F = TypeVar("F", bound=Callable[..., Tensor])


def _host(value: Any) -> Any:
    """A tensor or TensorData as its flat list of values; anything else as it is. A device
    tensor is read back, which the runtime avoids by keeping such values on the host."""
    if isinstance(value, Tensor):
        value = value.to_data()
    if isinstance(value, TensorData):
        return value.values()
    return value


def ints(value: Any) -> list[int] | None:
    """A host value (list, tuple, int, TensorData or a tensor) as a list of ints; None stays
    None."""
    value = _host(value)
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return [int(value)]
    return [int(v) for v in value]


def floats(value: Any) -> list[float] | None:
    """Like `ints`, as floats."""
    value = _host(value)
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return [float(value)]
    return [float(v) for v in value]


def scalar(value: Any) -> float | int | bool | None:
    """A one-element host value as a Python number (None stays None)."""
    if isinstance(value, (Tensor, TensorData)):
        shape = list(value.shape)
        vals = _host(value)
        if len(vals) != 1:
            raise ValueError(f"expected a single value, got shape {shape}")
        return vals[0]  # type: ignore[no-any-return]
    if value is None:
        return None
    if isinstance(value, Sequence):
        return scalar(value[0]) if len(value) == 1 else None
    return value  # type: ignore[no-any-return]


def axis(a: int, rank: int) -> int:
    """An ONNX axis (negative counts from the end) as a dim in 0..rank-1."""
    if not -rank <= a < max(rank, 1):
        raise ValueError(f"axis {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def axes(values: Sequence[int] | None, rank: int) -> list[int]:
    """Normalised, sorted, distinct axes (None: every axis)."""
    if values is None:
        return list(range(rank))
    return sorted({axis(a, rank) for a in values})


def dtype_of(onnx_code: int) -> DType:
    from ..graph import onnx_dtype, type_name
    dt = onnx_dtype(onnx_code)
    if dt is None:
        raise ValueError(f"element type {type_name(onnx_code)} is not supported")
    return dt


def via_f32(fn: F) -> F:
    """fn computed in f32 for f16 inputs: one rounding at the end instead of one per step (and
    no overflow where a formula squares its input)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not any(isinstance(a, Tensor) and a.dtype is DType.F16 for a in args):
            return fn(*args, **kwargs)
        up = [a.cast(DType.F32) if isinstance(a, Tensor) and a.dtype is DType.F16 else a
              for a in args]
        return fn(*up, **kwargs).cast(DType.F16)

    return typing.cast(F, run)


def wide_dtype(device: Backend) -> DType:
    """f64 where the device has it, else f32: the float dtype int values stay exact in."""
    return DType.F64 if device.supports(DType.F64) else DType.F32


def as_i64(idx: Tensor) -> Tensor:
    """Indices as int64 where the device has it (ONNX's index type)."""
    return idx.cast(DType.I64) if idx.device.supports(DType.I64) else idx


def to_2d(x: Tensor) -> Tensor:
    """(N, C, L) as (N, C, 1, L), so 1-d work can use the 2-d ops."""
    return x.unsqueeze_dim(2)  # (N, C, L) -> (N, C, 1, L)


def pad_dim(x: Tensor, d: int, before: int, after: int, value: float = 0.0) -> Tensor:
    """x with `before`/`after` entries of `value` added along dim d (negative: cropped)."""
    cut_lo, cut_hi = max(0, -before), max(0, -after)
    if cut_lo or cut_hi:
        x = x.narrow(d, cut_lo, x.shape[d] - cut_lo - cut_hi)
    pads = [0] * (2 * (x.ndim - d))
    pads[-2:] = [max(0, before), max(0, after)]
    return x.pad(pads, value)


def floated(x: Tensor) -> Tensor:
    """x as floats (f64 where the device has it, so int values stay exact)."""
    if x.kind is Kind.FLOAT:
        return x
    return x.cast(DType.F64) if x.device.supports(DType.F64) else x.float()


def restore(y: Tensor, like: Tensor) -> Tensor:
    """A float result back in `like`'s dtype (rounded and clamped for integers)."""
    if y.dtype is like.dtype:
        return y
    if like.kind is Kind.FLOAT:
        return y.cast(like.dtype)
    lo, hi = like.dtype.bounds
    return y.round().clamp(lo, hi).cast(like.dtype)


__all__ = ["Legacy", "as_i64", "axes", "axis", "dtype_of", "floated", "floats", "ints",
           "pad_dim", "restore", "scalar", "to_2d", "via_f32", "wide_dtype"]
