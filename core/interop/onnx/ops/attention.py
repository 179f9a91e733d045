"""Attention (opset 23): MHA/GQA/MQA with masks, causal frontier, windows, key padding, past
keys and values; pyrite's `attention` op wherever ONNX's options allow it."""

from __future__ import annotations

import math

from ....creation import arange, full
from ....dtype import DType, Kind
from ....nn import functional as F
from ....tensor import Tensor
from ..registry import op
from ._util import dtype_of, pad_dim


def _heads(x: Tensor, n: int | None) -> Tensor:
    """(B, S, n * D) as (B, n, S, D); 4-d input as given."""
    if x.ndim == 4:
        return x
    if not n:
        raise ValueError("Attention with 3-d inputs needs q_num_heads and kv_num_heads")
    b, s, h = x.shape
    return x.reshape((b, s, n, h // n)).swap_dims(1, 2)


def _neg_inf_where_not(allowed: Tensor, dtype: DType) -> Tensor:
    """0 where allowed, -inf elsewhere, as a `dtype` bias."""
    return full(allowed.shape, 0.0, device=allowed.device, dtype=dtype).mask_fill(
        allowed.bool_not(), -math.inf)


def _positions(q_len: int, past: int, nonpad: Tensor | None, like: Tensor) -> Tensor:
    """Each query's absolute position: (Sq, 1), or (B, 1, Sq, 1) given per-batch lengths."""
    i = arange(0, q_len, device=like.device)
    if nonpad is None:
        return (i + past).reshape((q_len, 1))
    start = nonpad.cast(i.dtype).reshape((-1, 1, 1, 1)) - q_len
    return start + i.reshape((1, 1, q_len, 1))


def _bias_of(q: Tensor, kv_len: int, mask: Tensor | None, past: int, nonpad: Tensor | None,
             causal: int, left: int, right: int) -> Tensor:
    """The additive attention bias: mask, causal frontier, window and key padding."""
    dtype, q_len = q.dtype, q.shape[2]
    bias = full((q_len, kv_len), 0.0, device=q.device, dtype=dtype)
    if mask is not None:
        if mask.shape[-1] < kv_len:
            fill = False if mask.kind is Kind.BOOL else -math.inf
            mask = pad_dim(mask, mask.ndim - 1, 0, kv_len - mask.shape[-1], fill)
        bias = bias + (_neg_inf_where_not(mask, dtype) if mask.kind is Kind.BOOL
                       else mask.cast(dtype))
    if causal or left >= 0 or right >= 0:
        pos = _positions(q_len, past, nonpad if past == 0 else None, q)
        diff = pos - arange(0, kv_len, device=q.device).cast(pos.dtype).reshape((1, kv_len))
        allowed = diff.greater_equal(0) if causal else full(diff.shape, True, device=q.device)
        if left >= 0:
            allowed = allowed.bool_and(diff.lower_equal(left))
        if right >= 0:
            allowed = allowed.bool_and(diff.greater_equal(-right))
        bias = bias + _neg_inf_where_not(allowed, dtype)
    if nonpad is not None:
        j = arange(0, kv_len, device=q.device).cast(nonpad.dtype).reshape((1, kv_len))
        keep = j.lower(nonpad.reshape((-1, 1))).reshape((-1, 1, 1, kv_len))
        bias = bias + _neg_inf_where_not(keep, dtype)
    return bias


def _repeat_heads(x: Tensor, times: int) -> Tensor:
    """Each head repeated `times` times in place (grouped-query attention)."""
    if times == 1:
        return x
    b, h, s, d = x.shape
    return x.unsqueeze_dim(2).expand((b, h, times, s, d)).reshape((b, h * times, s, d))


def _attend(logits: Tensor, bias: Tensor, precision: int | None) -> Tensor:
    """Softmax over keys (in `precision` if given); rows with every key masked give 0."""
    if precision is not None:
        logits = logits.cast(dtype_of(precision))
    dead = bias.max_dim(-1).equal_elem(-math.inf)
    return logits.softmax(-1).mask_fill(dead, 0.0)


@op("Attention")
def attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
              past_key: Tensor | None = None, past_value: Tensor | None = None,
              nonpad_kv_seqlen: Tensor | None = None, *, is_causal: int = 0,
              kv_num_heads: int | None = None, q_num_heads: int | None = None,
              qk_matmul_output_mode: int = 0, scale: float | None = None,
              softcap: float = 0.0, softmax_precision: int | None = None,
              left_window_size: int = -1, right_window_size: int = -1,
              outputs: int = 4) -> tuple[Tensor, ...]:
    """Scaled dot-product attention (MHA/GQA/MQA): Y, present K and V, the QK output.

    Without softcap, f16, a softmax precision other than the inputs' or the QK output, this is
    pyrite's `attention` op (flash attention's kernels on webgpu: the scores never reach
    memory); otherwise the scores are computed here."""
    three_d = q.ndim == 3
    q, k, v = _heads(q, q_num_heads), _heads(k, kv_num_heads), _heads(v, kv_num_heads)
    past = 0 if past_key is None else past_key.shape[2]
    if past_key is not None and past_value is not None:
        k, v = Tensor.cat([past_key, k], 2), Tensor.cat([past_value, v], 2)
    present_k, present_v = k, v
    k, v = _repeat_heads(k, q.shape[1] // k.shape[1]), _repeat_heads(v, q.shape[1] // v.shape[1])
    # f16 keeps the composite below: ONNX's reference rounds its scaled q and k to f16
    if outputs < 4 and softcap <= 0 and q.dtype is not DType.F16 and (
            softmax_precision is None or dtype_of(softmax_precision) is q.dtype):
        # causal alone, with ONNX's frontier the op's (query i at position past + i, as many
        # new keys as queries): the op's causal flag, no bias tensor, the hidden tiles skipped
        if is_causal and k.shape[2] == past + q.shape[2] and attn_mask is None and (
                nonpad_kv_seqlen is None and left_window_size < 0 and right_window_size < 0):
            y = F.attention(q, k, v, scale=scale, causal=True)
            return (_merge_heads(y, three_d), present_k, present_v)[:max(outputs, 1)]
        bias = _bias_of(q, k.shape[2], attn_mask, past, nonpad_kv_seqlen, is_causal,
                        left_window_size, right_window_size)
        bias4 = bias.reshape((1,) * (4 - bias.ndim) + bias.shape)
        y = F.attention(q, k, v, bias4, scale=scale)
        y = y.mask_fill(bias4.max_dim(-1).equal_elem(-math.inf), 0.0)  # every key masked
        return (_merge_heads(y, three_d), present_k, present_v)[:max(outputs, 1)]
    bias = _bias_of(q, k.shape[2], attn_mask, past, nonpad_kv_seqlen, is_causal,
                    left_window_size, right_window_size)
    root = math.sqrt(scale if scale is not None else 1 / math.sqrt(q.shape[3]))
    scores = (q * root).matmul((k * root).swap_dims(-1, -2))
    if softcap > 0:
        scores = (scores / softcap).tanh() * softcap
    biased = scores + bias
    probs = _attend(biased, bias, softmax_precision).cast(q.dtype)
    debug = {0: scores, 1: scores, 2: biased, 3: probs}[qk_matmul_output_mode]
    y = probs.matmul(v)
    return _merge_heads(y, three_d), present_k, present_v, debug.cast(q.dtype)


def _merge_heads(y: Tensor, three_d: bool) -> Tensor:
    """(B, n, S, D) back as (B, S, n * D) for 3-d inputs; 4-d as is."""
    if not three_d:
        return y
    y = y.swap_dims(1, 2)
    return y.reshape(y.shape[:2] + (-1,))


__all__ = ["attention"]
