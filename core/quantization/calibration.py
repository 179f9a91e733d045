"""Calibration: measuring the float range a scheme's params must cover.

Weights are calibrated once, from their own values. Activations are calibrated over data: an
`Observer` folds the range of each batch into a running range (min of mins and max of maxes for
`MinMaxCalibration`, the mean of the batches' percentiles for `PercentileCalibration`).

>>> from pyrite import tensor
>>> rng = MinMaxCalibration().compute_range(tensor([-1.0, 0.5, 3.0]))
>>> rng.min.to_list(), rng.max.to_list()
([-1.0], [3.0])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import QuantizationError
from ..tensor import Tensor
from .scheme import CalibrationRange, Granularity, QuantizationScheme, QuantizationType

_PER_TENSOR = QuantizationScheme.PerTensorSymmetric(QuantizationType.QInt8)


def blocked(x: Tensor, scheme: QuantizationScheme) -> Tensor:
    """x padded with zeros along the block axis and split there into (blocks, block_size):
    shape[:a] + (nb, bs) + shape[a+1:]. Zeros are harmless: every range includes zero."""
    axis = scheme.resolved_axis(x.shape)
    size, bs = x.shape[axis], scheme.block_size
    blocks = math.ceil(size / bs) if size else 0
    pads = [0] * (2 * x.ndim)
    pads[2 * (x.ndim - 1 - axis) + 1] = blocks * bs - size
    padded = x.pad(pads) if blocks * bs != size else x
    return padded.reshape(x.shape[:axis] + (blocks, bs) + x.shape[axis + 1:])


def unblocked(x: Tensor, shape: tuple[int, ...], scheme: QuantizationScheme) -> Tensor:
    """The inverse of `blocked`: merge (nb, bs) back and cut the padding."""
    axis = scheme.resolved_axis(shape)
    merged = x.reshape(shape[:axis] + (x.shape[axis] * x.shape[axis + 1],) + shape[axis + 1:])
    if merged.shape[axis] == shape[axis]:
        return merged
    return merged.narrow(axis, 0, shape[axis])


def params_view(shape: tuple[int, ...], scheme: QuantizationScheme) -> tuple[int, ...]:
    """The shape params take to broadcast against `x` (or against `blocked(x)` per block)."""
    if scheme.granularity is not Granularity.Block:
        return scheme.params_shape(shape) if scheme.granularity is Granularity.Channel \
            else (1,) * max(len(shape), 1)
    axis = scheme.resolved_axis(shape)
    params = scheme.params_shape(shape)
    return params[:axis + 1] + (1,) + params[axis + 1:]


def reduce_to_params(x: Tensor, scheme: QuantizationScheme, largest: bool) -> Tensor:
    """The max (or min) of x over each group of values sharing params: `params_shape`."""
    if scheme.granularity is Granularity.Tensor:
        return x.max() if largest else x.min()
    shape = x.shape
    axis = scheme.resolved_axis(shape)
    if scheme.granularity is Granularity.Channel:
        rows = x.movedim(axis, 0).reshape((shape[axis], -1))
        found = rows.max_dim(1) if largest else rows.min_dim(1)
    else:
        found = blocked(x, scheme)
        found = found.max_dim(axis + 1) if largest else found.min_dim(axis + 1)
    return found.reshape(scheme.params_shape(shape))


class Calibration:
    """Computes the range a scheme must represent; subclasses say how."""

    def compute_range(self, tensor: Tensor,
                      scheme: QuantizationScheme = _PER_TENSOR) -> CalibrationRange:
        """The range of `tensor` at the scheme's granularity."""
        raise NotImplementedError

    def merge(self, seen: CalibrationRange, new: CalibrationRange,
              count: int) -> CalibrationRange:
        """`seen` (the running range over `count` batches) with the range of one more."""
        raise NotImplementedError

    def observer(self, scheme: QuantizationScheme = _PER_TENSOR) -> Observer:
        """A running range over batches (for activations)."""
        return Observer(self, scheme)


@dataclass(frozen=True)
class MinMaxCalibration(Calibration):
    """The range from the smallest to the largest value seen (Burn's MinMaxCalibration)."""

    def compute_range(self, tensor: Tensor,
                      scheme: QuantizationScheme = _PER_TENSOR) -> CalibrationRange:
        _check_float("MinMaxCalibration", tensor)
        return CalibrationRange(reduce_to_params(tensor, scheme, largest=False),
                                reduce_to_params(tensor, scheme, largest=True))

    def merge(self, seen: CalibrationRange, new: CalibrationRange,
              count: int) -> CalibrationRange:
        return CalibrationRange(seen.min.min_pair(new.min), seen.max.max_pair(new.max))


@dataclass(frozen=True)
class PercentileCalibration(Calibration):
    """The range from the (100 - percentile)th to the percentile-th percentile of the values:
    a few outliers in an activation no longer stretch the scale for everything else. Per
    tensor only; over batches the running range is the mean of the batches' ranges."""

    percentile: float = 99.99

    def __post_init__(self) -> None:
        if not 50.0 < self.percentile <= 100.0:
            raise QuantizationError(f"PercentileCalibration: percentile must be in (50, 100], "
                                    f"got {self.percentile}")

    def compute_range(self, tensor: Tensor,
                      scheme: QuantizationScheme = _PER_TENSOR) -> CalibrationRange:
        _check_float("PercentileCalibration", tensor)
        if scheme.granularity is not Granularity.Tensor:
            raise QuantizationError(f"PercentileCalibration: per-tensor schemes only, got "
                                    f"{scheme!r}; use MinMaxCalibration for per-channel and "
                                    f"per-block params")
        flat = tensor.reshape((-1,)).sort()
        n = flat.shape[0]
        if n == 0:
            zero = tensor.full_like(0.0).reshape((-1,)).pad([0, 1])
            return CalibrationRange(zero, zero)
        hi = min(n - 1, math.ceil(self.percentile / 100.0 * n) - 1)
        lo = n - 1 - hi
        return CalibrationRange(flat.narrow(0, lo, 1), flat.narrow(0, hi, 1))

    def merge(self, seen: CalibrationRange, new: CalibrationRange,
              count: int) -> CalibrationRange:
        w = 1.0 / (count + 1)
        return CalibrationRange(seen.min * (1.0 - w) + new.min * w,
                                seen.max * (1.0 - w) + new.max * w)


class Observer:
    """A running range over the batches passed to `update` (static activation quantization)."""

    def __init__(self, calibration: Calibration, scheme: QuantizationScheme) -> None:
        self.calibration = calibration
        self.scheme = scheme
        self.count = 0
        self._range: CalibrationRange | None = None

    def update(self, x: Tensor) -> None:
        new = self.calibration.compute_range(x.inner().detach(), self.scheme)
        seen = self._range
        self._range = new if seen is None else self.calibration.merge(seen, new, self.count)
        self.count += 1

    def range(self) -> CalibrationRange:
        if self._range is None:
            raise QuantizationError("calibration: no batch was observed; run the model on at "
                                    "least one batch of calibration data first")
        return self._range


def _check_float(op: str, x: Tensor) -> None:
    from ..dtype import Kind
    if x.kind is not Kind.FLOAT:
        raise QuantizationError(f"{op}: needs a Float tensor, got {x.kind.value} (dtype "
                                f"{x.dtype}); convert with .float()")
