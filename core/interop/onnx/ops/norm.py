"""Normalisations: batch, layer, instance, group, RMS, Lp, mean-variance and LRN."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ....tensor import Tensor
from ..registry import op
from ._util import axes as norm_axes
from ._util import axis as norm
from ._util import dtype_of


def _moments(x: Tensor, dims: Sequence[int]) -> tuple[Tensor, Tensor]:
    """Mean and biased variance over `dims`, kept as size 1."""
    count = float(math.prod(x.shape[d] for d in dims))
    total = x
    for d in dims:
        total = total.sum_dim(d)
    mean = total / count
    diff = x - mean
    sq = diff * diff
    for d in dims:
        sq = sq.sum_dim(d)
    return mean, sq / count


def _per_channel(p: Tensor, x: Tensor) -> Tensor:
    """A per-channel (C,) parameter shaped to broadcast over x (N, C, ...)."""
    if p.ndim == 1 and x.ndim > 2:
        p = p.reshape([-1] + [1] * (x.ndim - 2))
    return p.cast(x.dtype)


def _stash(x: Tensor, stash_type: int) -> Tensor:
    """x in the precision the statistics are computed in (float32 unless stated)."""
    want = dtype_of(stash_type)
    if want.itemsize > x.dtype.itemsize and x.device.supports(want):
        return x.cast(want)
    return x


@op("BatchNormalization")
def batch_normalization(x: Tensor, scale: Tensor, b: Tensor, mean: Tensor, var: Tensor, *,
                        epsilon: float = 1e-5, momentum: float = 0.9, training_mode: int = 0,
                        spatial: int = 1, is_test: int = 0, consumed_inputs: object = None,
                        opset: int = 15) -> tuple[Tensor, ...]:
    """Per-channel normalisation; training mode uses batch statistics, updates running ones."""
    if not (training_mode and opset >= 14):
        gain = _per_channel(scale, x) / (_per_channel(var, x) + epsilon).sqrt()
        return (x * gain + (_per_channel(b, x) - _per_channel(mean, x) * gain),)
    dims = [d for d in range(x.ndim) if d != 1]
    m, v = _moments(x, dims)
    y = (x - m) / (v + epsilon).sqrt() * _per_channel(scale, x) + _per_channel(b, x)
    m, v = m.reshape([-1]), v.reshape([-1])
    run_m = mean.cast(x.dtype) * momentum + m * (1 - momentum)
    run_v = var.cast(x.dtype) * momentum + v * (1 - momentum)
    return y, run_m, run_v


@op("LayerNormalization")
def layer_normalization(x: Tensor, scale: Tensor, b: Tensor | None = None, *, axis: int = -1,
                        epsilon: float = 1e-5, stash_type: int = 1
                        ) -> tuple[Tensor, Tensor, Tensor]:
    """Normalise over the dims from `axis` on, then scale and shift: (Y, Mean, InvStdDev)."""
    a = norm(axis, x.ndim)
    xs = _stash(x, stash_type)
    mean, var = _moments(xs, list(range(a, x.ndim)))
    inv = (var + epsilon).sqrt().recip()
    y = ((xs - mean) * inv).cast(x.dtype) * scale.cast(x.dtype)
    if b is not None:
        y = y + b.cast(x.dtype)
    return y, mean, inv


@op("InstanceNormalization")
def instance_normalization(x: Tensor, scale: Tensor, b: Tensor, *,
                           epsilon: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims, then scale and shift."""
    mean, var = _moments(x, list(range(2, x.ndim)))
    y = (x - mean) / (var + epsilon).sqrt()
    return y * _per_channel(scale, x) + _per_channel(b, x)


@op("GroupNormalization")
def group_normalization(x: Tensor, scale: Tensor, bias: Tensor, *, epsilon: float = 1e-5,
                        num_groups: int, stash_type: int = 1) -> Tensor:
    """Normalise each group of channels; scale and bias per channel (21) or per group (18)."""
    n, c = x.shape[:2]
    grouped = _stash(x, stash_type).reshape((n, num_groups, -1))
    mean, var = _moments(grouped, [2])
    y = ((grouped - mean) / (var + epsilon).sqrt()).reshape(x.shape).cast(x.dtype)
    return y * _channels(scale, c, num_groups, x) + _channels(bias, c, num_groups, x)


def _channels(p: Tensor, c: int, groups: int, x: Tensor) -> Tensor:
    """A per-group or per-channel parameter as a per-channel one, shaped for x."""
    if p.numel() == groups and groups != c:
        p = p.reshape((groups, 1)).expand((groups, c // groups)).reshape([c])
    return _per_channel(p, x)


@op("RMSNormalization")
def rms_normalization(x: Tensor, scale: Tensor, *, axis: int = -1, epsilon: float = 1e-5,
                      stash_type: int = 1) -> Tensor:
    """x / sqrt(mean(x^2) + epsilon) over the dims from `axis` on, times scale."""
    a = norm(axis, x.ndim)
    xs = _stash(x, stash_type)
    sq = xs * xs
    for d in range(a, x.ndim):
        sq = sq.sum_dim(d)
    ms = sq / float(math.prod(x.shape[a:]))
    return (xs / (ms + epsilon).sqrt()).cast(x.dtype) * scale.cast(x.dtype)


@op("LpNormalization")
def lp_normalization(x: Tensor, *, axis: int = -1, p: int = 2) -> Tensor:
    """x divided by its L1 or L2 norm along `axis` (0 where the norm is 0)."""
    d = norm(axis, x.ndim)
    size = (x.abs() if p == 1 else x * x).sum_dim(d)
    if p != 1:
        size = size.sqrt()
    zero = size.equal_elem(0)
    return (x / size.mask_fill(zero, 1.0)).mask_fill(zero.expand(x.shape), 0.0)


@op("MeanVarianceNormalization")
def mean_variance_normalization(x: Tensor, *, axes: Sequence[int] = (0, 2, 3)) -> Tensor:
    """(x - mean) / sqrt(variance) over `axes`."""
    mean, var = _moments(x, norm_axes(list(axes), x.ndim))
    return (x - mean) / (var.sqrt() + 1e-9)


@op("LRN")
def lrn(x: Tensor, *, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0,
        size: int) -> Tensor:
    """x / (bias + alpha / size * sum of squares over `size` neighbouring channels)^beta."""
    before = (size - 1) // 2
    sq = x * x
    pads = [0] * (2 * (x.ndim - 1))
    pads[-2:] = [before, size - 1 - before]
    padded = sq.pad(pads, 0.0)
    total = sq.zeros_like()
    for t in range(size):
        total = total + padded.narrow(1, t, x.shape[1])
    return x / (total * (alpha / size) + bias).powf(beta)

