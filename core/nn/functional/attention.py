"""Scaled dot-product attention: the validated front end of the backend's `attention` op."""

from __future__ import annotations

import math

from ...backend.attention_ops import attention_weights as _weights
from ...errors import ShapeError
from ...tensor import Tensor
from ._check import _match_dtype, _rank, _same_device, _tensor

_LAYOUT = "batch, heads, seq, d"


def _check(op: str, q: Tensor, k: Tensor, v: Tensor | None, mask: Tensor | None,
           scale: float | None, causal: bool
           ) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, float]:
    for name, t in (("query", q), ("key", k), ("value", v), ("mask", mask)):
        if t is not None:
            _tensor(op, name, t)
            _rank(op, name, t, 4, _LAYOUT)
    _same_device(op, q, k, v, mask)
    (b, h, sq, d), (kb, kh, sk, kd) = q.shape, k.shape
    if (kb, kh, kd) != (b, h, d):
        raise ShapeError(f"{op}: key {k.shape} does not fit query {q.shape}: batch, heads and "
                         f"the last dim (d_k) must be equal")
    if v is not None and v.shape[:3] != (b, h, sk):
        raise ShapeError(f"{op}: value {v.shape} does not fit key {k.shape}: batch, heads and "
                         f"seq_k must be equal")
    if mask is not None:
        full = (b, h, sq, sk)
        if any(m not in (1, f) for m, f in zip(mask.shape, full, strict=True)):
            raise ShapeError(f"{op}: mask {mask.shape} does not broadcast to the scores "
                             f"(batch, heads, seq_q, seq_k) = {full}; each dim must be that "
                             f"size or 1")
    if causal and sq > sk:
        raise ShapeError(f"{op}: causal attention needs seq_q <= seq_k (query i sees keys up to "
                         f"i + seq_k - seq_q), got seq_q {sq} and seq_k {sk}; pass the keys of "
                         f"every earlier position too, or an explicit mask instead of causal")
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    q, k, v, mask = _match_dtype(q, k, v, mask)  # type: ignore[assignment]
    return q, k, v, mask, float(scale)


def attention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, *,
              scale: float | None = None, quiet: bool = False, causal: bool = False) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value, on the backend's `attention` op.

    Shapes: query (batch, heads, seq_q, d_k), key (batch, heads, seq_k, d_k), value (batch,
    heads, seq_k, d_v) -> (batch, heads, seq_q, d_v). `mask` is *additive* (a float tensor
    broadcastable to (batch, heads, seq_q, seq_k)): a large negative value such as -1e4 hides a
    key, 0 keeps it, anything else is a bias. `scale` defaults to 1 / sqrt(d_k); `quiet` uses
    exp(x) / (1 + sum exp(x)) so a query may attend to nothing. `causal` lets query i see only
    keys j <= i + seq_k - seq_q (self-attention's lower triangle; new positions after cached
    ones) without any mask tensor: a fused kernel skips the hidden tiles (seq_q <= seq_k).

    >>> from pyrite import ones
    >>> attention(ones((2, 4, 5, 8)), ones((2, 4, 7, 8)), ones((2, 4, 7, 3))).shape
    (2, 4, 5, 3)
    """
    op = "attention"
    q, k, v, m, s = _check(op, query, key, value, mask, scale, causal)
    assert v is not None
    prim = q.device.attention(q.into_primitive(), k.into_primitive(), v.into_primitive(),
                              None if m is None else m.into_primitive(), s, bool(quiet),
                              bool(causal))
    return q._new(prim)


def attention_weights(query: Tensor, key: Tensor, mask: Tensor | None = None, *,
                      scale: float | None = None, quiet: bool = False,
                      causal: bool = False) -> Tensor:
    """The weights `attention` multiplies the values by: (batch, heads, seq_q, seq_k), each
    row summing to 1 (to less than 1 with `quiet`). Arguments as `attention`'s.

    >>> from pyrite import zeros
    >>> w = attention_weights(zeros((1, 1, 2, 4)), zeros((1, 1, 3, 4)))
    >>> w.numpy().astype(float).round(3).tolist()
    [[[[0.333, 0.333, 0.333], [0.333, 0.333, 0.333]]]]
    """
    q, k, _, m, s = _check("attention_weights", query, key, None, mask, scale, causal)
    return _weights(q, k, m, s, bool(quiet), bool(causal))
