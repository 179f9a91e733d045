"""Operators of no larger family: rotary embeddings, SwiGLU, TensorScatter, linear attention,
the causal state convolution, Unique, the random generators, Dropout and the tensor forms of
the Optional operators."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ....backend.base import Backend
from ....creation import arange, cat, full, random, stack, zeros
from ....creation import seed as reseed
from ....distribution import Distribution, Normal, Uniform
from ....dtype import DType, Kind
from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm
from ._util import dtype_of, floated, floats, ints, scalar
from .activation import swish
from .shape import backend, fit, int64

# ---- transformer pieces -------------------------------------------------------------------------


def _halves(x: Tensor, interleaved: int) -> tuple[Tensor, Tensor]:
    """The two halves RoPE rotates against each other: even/odd entries or first/second half."""
    lead = [None] * (x.ndim - 1)
    if interleaved:
        return x.slice(lead + [slice(0, None, 2)]), x.slice(lead + [slice(1, None, 2)])
    half = x.shape[-1] // 2
    return x.narrow(-1, 0, half), x.narrow(-1, half, half)


def _rope_cache(cache: Tensor, position_ids: Tensor | None, batch: int, seq: int) -> Tensor:
    """The cos or sin rows for each (batch, position): looked up by id, or given as is."""
    if position_ids is None:
        return cache
    rows = cache.select(0, position_ids.reshape([-1]))
    return rows.reshape([batch, seq, cache.shape[-1]])


@op("RotaryEmbedding", since=23)
def rotary_embedding(x: Tensor, cos_cache: Tensor, sin_cache: Tensor,
                     position_ids: Tensor | None = None, *, interleaved: int = 0,
                     num_heads: int = 0, rotary_embedding_dim: int = 0) -> Tensor:
    """Rotary position embedding of x (B, heads, S, D) or (B, S, heads * D)."""
    shape = x.shape
    if x.ndim == 3:
        if not num_heads:
            raise ValueError("RotaryEmbedding with a 3-d input needs num_heads")
        x = x.reshape([shape[0], shape[1], num_heads, shape[2] // num_heads]).swap_dims(1, 2)
    batch, seq, head = x.shape[0], x.shape[2], x.shape[3]
    dim = rotary_embedding_dim or head
    cos = _rope_cache(cos_cache, position_ids, batch, seq).unsqueeze_dim(1)
    sin = _rope_cache(sin_cache, position_ids, batch, seq).unsqueeze_dim(1)
    turn = x.narrow(-1, 0, dim)
    a, b = _halves(turn, interleaved)
    real, imag = cos * a - sin * b, sin * a + cos * b
    turned = stack([real, imag], -1).reshape(turn.shape) if interleaved else cat([real, imag], -1)
    y = cat([turned, x.narrow(-1, dim, head - dim)], -1) if dim < head else turned
    return y.swap_dims(1, 2).reshape(shape) if len(shape) == 3 else y


@op("SwiGLU", since=28)
def swiglu(a: Tensor, b: Tensor, *, alpha: float = 1.0) -> Tensor:
    """Swish(a) * b: a gates the linear input b."""
    gate: Tensor = swish(a, alpha=alpha)
    return gate * b


@op("TensorScatter", since=24)
def tensor_scatter(past_cache: Tensor, update: Tensor, write_indices: Tensor | None = None, *,
                   axis: int = -2, mode: str = "linear") -> Tensor:
    """The cache with `update` written along `axis` from each batch entry's write index."""
    d = norm(axis, past_cache.ndim)
    size, count, batch = past_cache.shape[d], update.shape[d], past_cache.shape[0]
    at = arange(0, size, device=past_cache.device).reshape([1, size])
    start = (at.zeros_like().narrow(1, 0, 1).expand([batch, 1]) if write_indices is None
             else write_indices.cast(at.dtype).reshape([batch, 1]))
    src = at - start  # (batch, size): which update entry lands on each cache position
    if mode == "circular":
        src = src.rem_scalar(size).add_scalar(size).rem_scalar(size)
    elif mode != "linear":
        raise ValueError(f"TensorScatter mode {mode!r} is not 'linear' or 'circular'")
    hit = src.greater_equal_elem(0).bool_and(src.lower_elem(count))
    view = [batch] + [1] * (d - 1) + [size] + [1] * (past_cache.ndim - d - 1)
    hit = hit.reshape(view).expand(past_cache.shape)
    idx = src.clamp(0, max(count - 1, 0)).reshape(view)
    idx = idx.expand(past_cache.shape[:d] + (size,) + update.shape[d + 1:])
    if count == 0:
        return past_cache
    return past_cache.mask_where(hit, update.gather(d, idx))


@op("CausalConvWithState", since=27)
def causal_conv_with_state(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                           past_state: Tensor | None = None, *, activation: str = "none",
                           outputs: int = 2) -> tuple[Tensor, ...]:
    """Depthwise causal 1-d convolution over (B, C, L) after the carried state; the output
    (SiLU when asked) and the last k-1 positions as the new state."""
    batch, chans, length = x.shape
    k = weight.shape[2]
    past = (past_state if past_state is not None
            else zeros([batch, chans, k - 1], device=x.device, dtype=x.dtype))
    padded = cat([past, x], 2) if k > 1 else x
    work = _wide_float(x)
    wide, taps = padded.cast(work), weight.reshape([1, chans, k]).cast(work)
    y = wide.narrow(2, 0, length) * taps.narrow(2, 0, 1)
    for j in range(1, k):
        y = y + wide.narrow(2, j, length) * taps.narrow(2, j, 1)
    if bias is not None:
        y = y + bias.reshape([1, chans, 1]).cast(work)
    y = y.cast(x.dtype)
    if activation in ("silu", "swish"):
        y = swish(y)
    elif activation != "none":
        raise ValueError(f"CausalConvWithState activation {activation!r} is not supported")
    state = padded.narrow(2, padded.shape[2] - (k - 1), k - 1)
    return (y, state)[:max(outputs, 1)]


def _heads(x: Tensor, heads: int) -> Tensor:
    """(B, T, H * D) as (B, H, T, D)."""
    b, t, hd = x.shape
    return x.reshape([b, t, heads, hd // heads]).swap_dims(1, 2)


def _step_of(x: Tensor | None, t: int) -> Tensor | None:
    """Time step t of a (B, H, T, D) tensor, as (B, H, D, 1) to scale the state's rows."""
    return None if x is None else x.narrow(2, t, 1).swap_dims(2, 3)


def _heads_of(x: Tensor, heads: int) -> Tensor:
    """A decay or beta input (B, T, heads * w) or (B, T, 1) as (B, heads | 1, T, w)."""
    b, t, last = x.shape
    n = heads if last % heads == 0 else 1
    return x.reshape([b, t, n, last // n]).swap_dims(1, 2)


def _wide_float(x: Tensor) -> DType:
    """The type linear attention accumulates in: f64 for f64 inputs, else f32."""
    return DType.F64 if x.dtype is DType.F64 else DType.F32


@op("LinearAttention", since=27)
def linear_attention(query: Tensor, key: Tensor, value: Tensor,
                     past_state: Tensor | None = None, decay: Tensor | None = None,
                     beta: Tensor | None = None, *, chunk_size: int = 64, kv_num_heads: int,
                     q_num_heads: int, scale: float = 0.0, update_rule: str = "gated_delta",
                     outputs: int = 2) -> tuple[Tensor, ...]:
    """Recurrent linear attention (linear, gated, delta or gated delta), one step per token;
    the output (B, T, Hq * dv) and the final state (B, Hkv, dk, dv)."""
    if update_rule not in ("linear", "gated", "delta", "gated_delta"):
        raise ValueError(f"LinearAttention update_rule {update_rule!r} is not supported")
    work = _wide_float(query)
    q = _heads(query, q_num_heads).cast(work)
    k = _heads(key, kv_num_heads).cast(work)
    v = _heads(value, kv_num_heads).cast(work)
    b, steps, dk, dv = q.shape[0], q.shape[2], q.shape[3], v.shape[3]
    group = q_num_heads // kv_num_heads
    g = None if decay is None else _heads_of(decay, kv_num_heads).cast(work).exp()
    rate = None if beta is None else _heads_of(beta, kv_num_heads).cast(work)
    state = (past_state.cast(work) if past_state is not None
             else zeros([b, kv_num_heads, dk, dv], device=q.device, dtype=work))
    mult = scale or 1.0 / math.sqrt(dk)
    outs = []
    for t in range(steps):
        kt, vt = k.narrow(2, t, 1), v.narrow(2, t, 1)  # (B, H, 1, d)
        gt = _step_of(g, t)
        if gt is not None:
            state = state * gt
        if rate is not None:
            vt = (vt - kt.matmul(state)) * rate.narrow(2, t, 1)
        state = state + kt.swap_dims(2, 3).matmul(vt)
        qt = q.narrow(2, t, 1).reshape([b, kv_num_heads, group, dk])
        outs.append(qt.matmul(state).reshape([b, q_num_heads, 1, dv]))
    y = (cat(outs, 2) * mult).swap_dims(1, 2).reshape([b, steps, q_num_heads * dv])
    keep = past_state.dtype if past_state is not None else query.dtype
    return (y.cast(query.dtype), state.cast(keep))[:max(outputs, 1)]


# ---- Unique -------------------------------------------------------------------------------------


def _first_seen(keys: list[Any], sort: bool) -> list[int]:
    """The position of each distinct key's first occurrence, by key order or by appearance."""
    first: dict[Any, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    order = list(first.values())
    return sorted(order, key=lambda i: keys[i]) if sort else order


@op("Unique", since=11)
def unique(x: Tensor, *, axis: int | None = None, sorted: int = 1,  # noqa: A002 - ONNX's name
           outputs: int = 4) -> tuple[Tensor, ...]:
    """Distinct values (or slices along axis) with first indices, inverse map and counts.

    The output sizes depend on the values, so x is read back to the host."""
    d = None if axis is None else norm(axis, x.ndim)
    rows = x.reshape([-1, 1]) if d is None else x.movedim(d, 0).reshape([x.shape[d], -1])
    flat = rows.to_data().values()
    width = rows.shape[1] if rows.shape[0] else 0
    keys = [tuple(flat[i * width:(i + 1) * width]) for i in range(rows.shape[0])]
    first = _first_seen(keys, bool(sorted))
    slot = {keys[i]: n for n, i in enumerate(first)}
    inverse = [slot[k] for k in keys]
    counts = [0] * len(first)
    for s in inverse:
        counts[s] += 1
    picked = rows.select(0, int64(first, [len(first)], x.device)) if first else rows.narrow(0, 0, 0)
    if d is None:
        y = picked.reshape([len(first)])
    else:
        moved = x.movedim(d, 0).shape
        y = picked.reshape([len(first)] + list(moved[1:])).movedim(0, d)
    dev = x.device
    extra = [int64(v, [len(v)], dev) for v in (first, inverse, counts)]
    return tuple([y] + extra)[:max(outputs, 1)]


# ---- random -------------------------------------------------------------------------------------


def _random(shape: Sequence[int], dist: Distribution, dtype: DType, dev: Backend,
            seed: float | None) -> Tensor:
    """Random values of `dist` (reseeding the device first when the node names a seed)."""
    if seed is not None:
        reseed(int(seed), device=dev)
    want = fit(dtype, dev)
    if want.kind is Kind.FLOAT:
        return random(list(shape), dist, device=dev, dtype=want)
    return random(list(shape), dist, device=dev).cast(want)


def _like_dtype(x: Tensor, dtype: int | None) -> DType:
    """The output type of a *Like generator: the attribute's, else x's."""
    return x.dtype if dtype is None else dtype_of(dtype)


@op("RandomUniform")
def random_uniform(*, shape: Sequence[int], dtype: int = 1, high: float = 1.0,
                   low: float = 0.0, seed: float | None = None,
                   device: Backend | None = None) -> Tensor:
    """Values drawn uniformly from [low, high)."""
    return _random(shape, Uniform(low, high), dtype_of(dtype), backend(device), seed)


@op("RandomNormal")
def random_normal(*, shape: Sequence[int], dtype: int = 1, mean: float = 0.0,
                  scale: float = 1.0, seed: float | None = None,
                  device: Backend | None = None) -> Tensor:
    """Values drawn from a normal distribution."""
    return _random(shape, Normal(mean, scale), dtype_of(dtype), backend(device), seed)


@op("RandomUniformLike")
def random_uniform_like(x: Tensor, *, dtype: int | None = None, high: float = 1.0,
                        low: float = 0.0, seed: float | None = None) -> Tensor:
    """Uniform values in [low, high) of x's shape."""
    return _random(x.shape, Uniform(low, high), _like_dtype(x, dtype), x.device, seed)


@op("RandomNormalLike")
def random_normal_like(x: Tensor, *, dtype: int | None = None, mean: float = 0.0,
                       scale: float = 1.0, seed: float | None = None) -> Tensor:
    """Normal values of x's shape."""
    return _random(x.shape, Normal(mean, scale), _like_dtype(x, dtype), x.device, seed)


@op("Bernoulli", since=15)
def bernoulli(x: Tensor, *, dtype: int | None = None, seed: float | None = None) -> Tensor:
    """1 with the probability each entry of x gives, else 0."""
    p = x if x.kind is Kind.FLOAT else x.float()
    draw = _random(x.shape, Uniform(0.0, 1.0), p.dtype, x.device, seed)
    want = fit(_like_dtype(x, dtype), x.device)
    return draw.lower(p).cast(want)


# ---- optional values (tensor forms only) -------------------------------------------------------


@op("OptionalHasElement", since=15)
def optional_has_element(x: Tensor | None = None, *, device: Backend | None = None) -> Tensor:
    """Whether an input was given: a bool scalar."""
    return full([], x is not None, device=backend(device), dtype=DType.BOOL)


@op("OptionalGetElement", since=15)
def optional_get_element(x: Tensor) -> Tensor:
    """The tensor itself (a plain tensor is a present optional)."""
    return x


@op("Dropout", host=(1, 2), attr_inputs=(12, ("ratio",)))
def dropout(data: Tensor, ratio: Any = None, training_mode: Any = None, *,
            seed: int | None = None, is_test: int = 0, opset: int = 13
            ) -> tuple[Tensor, Tensor]:
    """Identity and an all-true mask; in training mode, random drop and 1/(1-ratio) scaling."""
    rate = 0.5 if ratio is None else float(scalar(floats(ratio)) or 0.0)
    training = opset >= 12 and bool(scalar(ints(training_mode)) or 0)
    keep = full(data.shape, True, device=data.device)
    if training and rate > 0:
        if seed is not None:
            reseed(int(seed), device=data.device)
        keep = floated(data).random_like(Uniform(0.0, 1.0)).greater_equal(rate)
        data = data * keep.cast(data.dtype) * (1.0 / (1.0 - rate))
    return data, keep if opset >= 10 else keep.cast(data.dtype)


__all__ = ["bernoulli", "dropout", "optional_get_element", "optional_has_element",
           "random_normal", "random_normal_like", "random_uniform", "random_uniform_like",
           "rotary_embedding", "swiglu", "tensor_scatter", "unique"]
