"""Reductions, softmax, arg-reductions, cumulative sums, top-k and the two losses."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ....creation import arange, full
from ....dtype import DType, Kind
from ....tensor import Tensor
from ..registry import op
from ._util import as_i64, floated, ints
from ._util import axes as norm_axes
from ._util import axis as norm

Step = Callable[[Tensor, int], Tensor]


# ---- reductions ---------------------------------------------------------------------------------
def _dims(x: Tensor, axes: Any, noop_with_empty_axes: int) -> list[int]:
    """The dims to reduce: given axes, or every dim when none are given (unless noop)."""
    given = ints(axes)
    if not given:
        return [] if noop_with_empty_axes else list(range(x.ndim))
    return norm_axes(given, x.ndim)


def _fold(x: Tensor, dims: list[int], keepdims: int, step: Step, empty: float | None = None
          ) -> Tensor:
    """`step` (keep-dim) along each of `dims`; `empty` fills a reduction over nothing."""
    if empty is not None and any(x.shape[d] == 0 for d in dims):
        shape = [1 if d in dims else s for d, s in enumerate(x.shape)]
        x = full(shape, _fit(empty, x.dtype), device=x.device, dtype=x.dtype)
    else:
        for d in dims:
            x = step(x, d)
    return x if keepdims or not dims else x.squeeze_dims(dims)


def _fit(value: float, dtype: DType) -> float | int | bool:
    """An identity value as the nearest one an int `dtype` holds (-inf: the smallest)."""
    if dtype.kind is Kind.FLOAT:
        return value
    lo, hi = dtype.bounds
    return int(max(lo, min(hi, value)))


def _sum(x: Tensor, d: int) -> Tensor:
    """Sum along d, kept."""
    return x.sum_dim(d)


def _numeric(x: Tensor) -> Tensor:
    """Bool values as ints, so that they can be compared and summed."""
    return x.int() if x.kind is Kind.BOOL else x


def _back(y: Tensor, like: Tensor) -> Tensor:
    """y as Bool again when `like` was."""
    return y.bool() if like.kind is Kind.BOOL else y


def _floating(fn: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """`fn` of x computed in floats, cast back to x's dtype (for int inputs)."""
    if x.kind is Kind.FLOAT:
        return fn(x)
    return fn(floated(x)).cast(x.dtype)


_OLD = (18, ("axes",))


@op("ReduceSum", host=(1,), attr_inputs=(13, ("axes",)))
def reduce_sum(data: Tensor, axes: Any = None, *, keepdims: int = 1,
               noop_with_empty_axes: int = 0) -> Tensor:
    """Sum over `axes` (all when none are given)."""
    return _fold(data, _dims(data, axes, noop_with_empty_axes), keepdims, _sum)


@op("ReduceMean", host=(1,), attr_inputs=_OLD)
def reduce_mean(data: Tensor, axes: Any = None, *, keepdims: int = 1,
                noop_with_empty_axes: int = 0) -> Tensor:
    """Mean over `axes`."""
    dims = _dims(data, axes, noop_with_empty_axes)
    count = math.prod(data.shape[d] for d in dims)
    total = _fold(data, dims, keepdims, _sum)
    if data.kind is Kind.FLOAT:
        return total / float(count) if count else total / 0.0
    return _floating(lambda t: t / float(count), total)  # truncated, as numpy's astype


@op("ReduceMax", host=(1,), attr_inputs=_OLD)
def reduce_max(data: Tensor, axes: Any = None, *, keepdims: int = 1,
               noop_with_empty_axes: int = 0) -> Tensor:
    """Max over `axes` (-inf, the smallest int or False over no elements)."""
    dims = _dims(data, axes, noop_with_empty_axes)
    empty = 0.0 if data.kind is Kind.BOOL else -math.inf
    y = _fold(_numeric(data), dims, keepdims, lambda t, d: t.max_dim(d), empty)
    return _back(y, data)


@op("ReduceMin", host=(1,), attr_inputs=_OLD)
def reduce_min(data: Tensor, axes: Any = None, *, keepdims: int = 1,
               noop_with_empty_axes: int = 0) -> Tensor:
    """Min over `axes` (inf, the largest int or True over no elements)."""
    dims = _dims(data, axes, noop_with_empty_axes)
    empty = 1.0 if data.kind is Kind.BOOL else math.inf
    y = _fold(_numeric(data), dims, keepdims, lambda t, d: t.min_dim(d), empty)
    return _back(y, data)


@op("ReduceProd", host=(1,), attr_inputs=_OLD)
def reduce_prod(data: Tensor, axes: Any = None, *, keepdims: int = 1,
                noop_with_empty_axes: int = 0) -> Tensor:
    """Product over `axes`."""
    dims = _dims(data, axes, noop_with_empty_axes)
    return _fold(data, dims, keepdims, lambda t, d: t.prod_dim(d))


@op("ReduceL1", host=(1,), attr_inputs=_OLD)
def reduce_l1(data: Tensor, axes: Any = None, *, keepdims: int = 1,
              noop_with_empty_axes: int = 0) -> Tensor:
    """Sum of absolute values over `axes`."""
    return _fold(data.abs(), _dims(data, axes, noop_with_empty_axes), keepdims, _sum)


@op("ReduceL2", host=(1,), attr_inputs=_OLD)
def reduce_l2(data: Tensor, axes: Any = None, *, keepdims: int = 1,
              noop_with_empty_axes: int = 0) -> Tensor:
    """Euclidean norm over `axes`."""
    dims = _dims(data, axes, noop_with_empty_axes)
    return _floating(lambda t: _fold(t * t, dims, keepdims, _sum).sqrt(), data)


@op("ReduceSumSquare", host=(1,), attr_inputs=_OLD)
def reduce_sum_square(data: Tensor, axes: Any = None, *, keepdims: int = 1,
                      noop_with_empty_axes: int = 0) -> Tensor:
    """Sum of squares over `axes`."""
    return _fold(data * data, _dims(data, axes, noop_with_empty_axes), keepdims, _sum)


@op("ReduceLogSum", host=(1,), attr_inputs=_OLD)
def reduce_log_sum(data: Tensor, axes: Any = None, *, keepdims: int = 1,
                   noop_with_empty_axes: int = 0) -> Tensor:
    """log of the sum over `axes`."""
    dims = _dims(data, axes, noop_with_empty_axes)
    return _floating(lambda t: _fold(t, dims, keepdims, _sum).log(), data)


@op("ReduceLogSumExp", host=(1,), attr_inputs=_OLD)
def reduce_log_sum_exp(data: Tensor, axes: Any = None, *, keepdims: int = 1,
                       noop_with_empty_axes: int = 0) -> Tensor:
    """log(sum(exp)) over `axes`, shifted by the max for stability."""
    dims = _dims(data, axes, noop_with_empty_axes)
    return _floating(lambda t: _log_sum_exp(t, dims, keepdims), data)


def _log_sum_exp(x: Tensor, dims: list[int], keepdims: int) -> Tensor:
    """log(sum(exp(x))) over dims, shifted by the (finite) max."""
    if any(x.shape[d] == 0 for d in dims):
        return _fold(x.exp(), dims, keepdims, _sum).log()
    top = _fold(x, dims, 1, lambda t, d: t.max_dim(d))
    top = top.mask_fill(top.is_nan().bool_or(top.abs().equal_elem(math.inf)), 0.0)
    out = _fold((x - top).exp(), dims, 1, _sum).log() + top
    return out if keepdims or not dims else out.squeeze_dims(dims)


# ---- arg-reductions -----------------------------------------------------------------------------
def _arg(x: Tensor, axis: int, keepdims: int, last: int, largest: bool) -> Tensor:
    """Index of the max (or min) along axis, the first or the last one on ties."""
    d = norm(axis, x.ndim)
    x = _numeric(x)
    if last:
        x = x.flip([d])
    idx = x.argmax(d) if largest else x.argmin(d)
    if last:
        idx = (x.shape[d] - 1) - idx
    idx = as_i64(idx)
    return idx if keepdims else idx.squeeze_dims([d])


@op("ArgMax")
def arg_max(data: Tensor, *, axis: int = 0, keepdims: int = 1,
            select_last_index: int = 0) -> Tensor:
    """Index of the largest value along `axis` (first, or last, on ties): int64."""
    return _arg(data, axis, keepdims, select_last_index, largest=True)


@op("ArgMin")
def arg_min(data: Tensor, *, axis: int = 0, keepdims: int = 1,
            select_last_index: int = 0) -> Tensor:
    """Index of the smallest value along `axis`: int64."""
    return _arg(data, axis, keepdims, select_last_index, largest=False)


# ---- cumulative ---------------------------------------------------------------------------------
def _shifted(x: Tensor, d: int, k: int, fill: float) -> Tensor:
    """x moved k places along dim d (towards higher indices), `fill` coming in."""
    n = x.shape[d]
    if k >= n:
        return x.full_like(fill)
    pads = [0] * (2 * (x.ndim - d))
    pads[-2] = k
    return x.narrow(d, 0, n - k).pad(pads, fill)


def _scan(x: Tensor, axis: Any, exclusive: int, reverse: int, product: bool) -> Tensor:
    """Inclusive (or exclusive) running sum or product along `axis`, in log2(n) steps."""
    d = norm((ints(axis) or [0])[0], x.ndim)
    ident = 1 if product else 0
    y = x.flip([d]) if reverse else x
    if exclusive:
        y = _shifted(y, d, 1, ident)
    k = 1
    while k < y.shape[d]:
        moved = _shifted(y, d, k, ident)
        y = y * moved if product else y + moved
        k *= 2
    return y.flip([d]) if reverse else y


@op("CumSum", host=(1,))
def cum_sum(x: Tensor, axis: Any, *, exclusive: int = 0, reverse: int = 0) -> Tensor:
    """Running sum along `axis`."""
    return _scan(x, axis, exclusive, reverse, product=False)


@op("CumProd", host=(1,))
def cum_prod(x: Tensor, axis: Any, *, exclusive: int = 0, reverse: int = 0) -> Tensor:
    """Running product along `axis`."""
    return _scan(x, axis, exclusive, reverse, product=True)


# ---- top-k --------------------------------------------------------------------------------------
@op("TopK", host=(1,), attr_inputs=(10, ("k",)))
def top_k(x: Tensor, k: Any, *, axis: int = -1, largest: int = 1,
          sorted: int = 1) -> tuple[Tensor, Tensor]:  # noqa: A002 - the ONNX name
    """The k largest (or smallest) values along `axis`, sorted, and their int64 indices."""
    d = norm(axis, x.ndim)
    n = (ints(k) or [0])[0]
    values, index = _numeric(x).sort_with_indices(d, descending=bool(largest))
    return _back(values.narrow(d, 0, n), x), as_i64(index.narrow(d, 0, n))


# ---- softmax family -----------------------------------------------------------------------------
def _rows(x: Tensor, axis: int, opset: int, fn: Step) -> Tensor:
    """`fn` along `axis`; before opset 13, over x flattened to 2-d at `axis`."""
    if opset >= 13:
        return fn(x, norm(axis, x.ndim))
    a = norm(axis, x.ndim) if axis != x.ndim else x.ndim
    shape = x.shape
    flat = x.reshape((math.prod(shape[:a]), math.prod(shape[a:])))
    return fn(flat, 1).reshape(shape)


def _default_axis(axis: int | None, opset: int) -> int:
    """Softmax's default axis: -1 from opset 13, 1 before."""
    return (-1 if opset >= 13 else 1) if axis is None else axis


@op("Softmax")
def softmax(x: Tensor, *, axis: int | None = None, opset: int = 13) -> Tensor:
    """Softmax along `axis` (default -1 from opset 13, 1 with 2-d coercion before)."""
    return _rows(x, _default_axis(axis, opset), opset, lambda t, d: t.softmax(d))


@op("LogSoftmax")
def log_softmax(x: Tensor, *, axis: int | None = None, opset: int = 13) -> Tensor:
    """Log-softmax, with Softmax's axis rules."""
    return _rows(x, _default_axis(axis, opset), opset, lambda t, d: t.log_softmax(d))


def _one_hot_max(x: Tensor, d: int) -> Tensor:
    """1 at the first largest value along d, 0 elsewhere."""
    idx = x.argmax(d)
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    pos = arange(0, x.shape[d], device=x.device).cast(idx.dtype).reshape(shape)
    return pos.equal(idx).cast(x.dtype)


@op("Hardmax")
def hardmax(x: Tensor, *, axis: int | None = None, opset: int = 13) -> Tensor:
    """1 at the first maximum along `axis`, 0 elsewhere (Softmax's axis rules)."""
    return _rows(x, _default_axis(axis, opset), opset, _one_hot_max)


# ---- losses -------------------------------------------------------------------------------------
def _nll(logp: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
         ignore_index: int | None) -> Tensor:
    """Negative log-likelihood of `target` classes under log-probabilities (N, C, ...)."""
    t = target if target.dtype is target.device.int_dtype else target.cast(
        target.device.int_dtype)
    keep = None if ignore_index is None else t.not_equal_elem(ignore_index)
    if keep is not None:
        t = t.mask_fill(keep.bool_not(), 0)
    picked = logp.gather(1, t.unsqueeze_dim(1)).squeeze_dims([1])
    w = (weight.select(0, t.reshape([-1])).reshape(t.shape) if weight is not None
         else picked.ones_like())
    if keep is not None:
        w = w.mask_fill(keep.bool_not(), 0.0)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum().reshape([])
    if reduction != "mean":
        raise ValueError(f"reduction {reduction!r} is not one of none, sum, mean")
    return (loss.sum() / w.sum()).reshape([])


@op("NegativeLogLikelihoodLoss")
def negative_log_likelihood_loss(x: Tensor, target: Tensor, weight: Tensor | None = None, *,
                                 ignore_index: int | None = None,
                                 reduction: str = "mean") -> Tensor:
    """-x[n, target[n, ...], ...] per element, weighted, then reduced (none, sum, mean)."""
    return _nll(x, target, weight, reduction, ignore_index)


@op("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(scores: Tensor, labels: Tensor, weights: Tensor | None = None,
                               *, ignore_index: int | None = None, reduction: str = "mean"
                               ) -> tuple[Tensor, Tensor]:
    """Cross-entropy of `labels` under softmax(scores) over dim 1; also the log-probabilities."""
    logp = scores.log_softmax(1)
    return _nll(logp, labels, weights, reduction, ignore_index), logp
