"""MultiHeadAttention (Burn's), its config, input and output.

The heads' scaled dot-product attention goes through `pyrite.nn.functional.attention`, the
backend's `attention` op, so a backend with a fused kernel serves this layer unchanged. The
weights are not part of that op: `MhaOutput.weights` computes them when first read (the encoder
and decoder never read them, so they cost nothing there). While training with dropout the
layer computes the weights itself, drops some and multiplies by the values, so the weights it
returns are those before dropout.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import KW_ONLY
from functools import partial
from typing import Any, Self

from ...backend.base import Backend
from ...errors import ConfigError, KindError, ShapeError
from ...module import Config, Module
from ...tensor import Tensor
from .. import functional as F
from ..dropout import Dropout, DropoutConfig
from ..init import DEFAULT_GAIN, Initializer, KaimingUniform
from ..linear import Linear, LinearConfig
from .cache import MhaCache
from .mask import additive_mask, check_mask

Device = Backend | str | None


class MultiHeadAttentionConfig(Config):
    """`MultiHeadAttentionConfig(d_model, n_heads).init(device)`; Burn's defaults: dropout 0.1
    (on the attention weights, only on autodiff devices), masked scores pushed down by
    `min_float` = -1e4, regular softmax, KaimingUniform(1/sqrt(3)) for the four Linears.

    >>> from pyrite import zeros
    >>> mha = MultiHeadAttentionConfig(16, 4).init()
    >>> out = mha(MhaInput.self_attn(zeros((2, 5, 16))))
    >>> out.context.shape, out.weights.shape
    ((2, 5, 16), (2, 4, 5, 5))
    """

    d_model: int
    n_heads: int
    _: KW_ONLY
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False
    initializer: Initializer = KaimingUniform(gain=DEFAULT_GAIN, fan_out_only=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_heads(self, self.d_model, self.n_heads, self.dropout)

    def init(self, device: Device = None) -> MultiHeadAttention:
        def linear() -> Linear:
            return LinearConfig(self.d_model, self.d_model,
                                initializer=self.initializer).init(device)

        return MultiHeadAttention(linear(), linear(), linear(), linear(),
                                  DropoutConfig(self.dropout).init(), n_heads=self.n_heads,
                                  min_float=self.min_float, quiet_softmax=self.quiet_softmax)


def check_heads(cfg: Config, d_model: int, n_heads: int, dropout: float) -> None:
    """The size checks every attention config shares."""
    name = type(cfg).__name__
    for field, value in (("d_model", d_model), ("n_heads", n_heads)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{name}: {field} must be an int >= 1, got {value!r}")
    if d_model % n_heads:
        fits = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ConfigError(f"{name}: n_heads={n_heads} must divide d_model={d_model} (each head "
                          f"gets d_model / n_heads features); use n_heads in {fits}")
    if not 0.0 <= dropout < 1.0:
        raise ConfigError(f"{name}: dropout must be in [0, 1), got {dropout}")


class _Builder:
    """Inputs with Burn's builder methods: `x.mask_pad(m)` returns a copy holding m."""

    def _with(self, name: str, value: Tensor) -> Self:
        out = copy.copy(self)
        setattr(out, "_" + name, value)
        return out


class _MaskedInput(_Builder):
    """An input with a padding mask, an attention mask and the causal flag, each set by a
    builder (`.mask_pad(m)`, `.mask_attn(m)`, `.causal()`) and read back as `.pad_mask`,
    `.attn_mask`, `.is_causal` (MhaInput and TransformerEncoderInput)."""

    _mask_pad: Tensor | None
    _mask_attn: Tensor | None
    _causal: bool

    def mask_pad(self, mask: Tensor) -> Self:
        return self._with("mask_pad", mask)

    def mask_attn(self, mask: Tensor) -> Self:
        return self._with("mask_attn", mask)

    def causal(self) -> Self:
        out = copy.copy(self)
        out._causal = True
        return out

    @property
    def is_causal(self) -> bool:
        return self._causal

    @property
    def pad_mask(self) -> Tensor | None:
        return self._mask_pad

    @property
    def attn_mask(self) -> Tensor | None:
        return self._mask_attn


class MhaInput(_MaskedInput):
    """Query (batch, seq_q, d_model), key and value (batch, seq_k, d_model), and optional Bool
    masks, True where attention is not allowed: `mask_pad` (batch, seq_k) for padded keys,
    `mask_attn` (batch, seq_q, seq_k) per query (e.g. `generate_autoregressive_mask`).

    Build with `MhaInput.self_attn(x)` or `MhaInput.cross_attn(q, k, v)` and add masks with the
    builders `.mask_pad(m)` / `.mask_attn(m)`; read them back as `.pad_mask` / `.attn_mask`.
    `.causal()` lets query i see keys up to i + seq_k - seq_q only, the causal mask without a
    mask tensor (the attention op's causal flag: a fused kernel skips the hidden tiles); read
    back as `.is_causal`.
    """

    def __init__(self, query: Tensor, key: Tensor, value: Tensor,
                 mask_pad: Tensor | None = None, mask_attn: Tensor | None = None,
                 causal: bool = False) -> None:
        self.query, self.key, self.value = query, key, value
        self._mask_pad, self._mask_attn = mask_pad, mask_attn
        self._causal = causal

    @classmethod
    def self_attn(cls, tensor: Tensor) -> MhaInput:
        return cls(tensor, tensor, tensor)

    @classmethod
    def cross_attn(cls, query: Tensor, key: Tensor, value: Tensor) -> MhaInput:
        return cls(query, key, value)

    new = cross_attn  # Burn's `MhaInput::new(query, key, value)`



class MhaOutput:
    """`context` (batch, seq_q, d_model) and `weights` (batch, n_heads, seq_q, seq_k), the
    latter computed on first read when the layer did not need it."""

    def __init__(self, context: Tensor, weights: Tensor | Callable[[], Tensor]) -> None:
        self.context = context
        self._weights = weights

    @property
    def weights(self) -> Tensor:
        if not isinstance(self._weights, Tensor):
            self._weights = self._weights()
        return self._weights


class MultiHeadAttention(Module):
    """Multi-head attention: query, key, value and output Linears (d_model -> d_model, weights
    (d_in, d_out) as Burn stores them) around `n_heads` heads of scaled dot-product attention,
    each on d_k = d_model / n_heads features, scaled by 1 / sqrt(d_k).

    Shapes: query (batch, seq_q, d_model), key/value (batch, seq_k, d_model) -> context
    (batch, seq_q, d_model), weights (batch, n_heads, seq_q, seq_k).
    """

    def __init__(self, query: Linear, key: Linear, value: Linear, output: Linear,
                 dropout: Dropout, *, n_heads: int, min_float: float = -1.0e4,
                 quiet_softmax: bool = False) -> None:
        self.query, self.key, self.value, self.output = query, key, value, output
        self.dropout = dropout
        self.d_model = query.weight.shape[0]
        self.n_heads = n_heads
        self.d_k = self.d_model // n_heads
        self.min_float = min_float
        self.quiet_softmax = quiet_softmax

    def settings(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "n_heads": self.n_heads, "d_k": self.d_k,
                "min_float": self.min_float, "quiet_softmax": self.quiet_softmax}

    def forward(self, input: MhaInput) -> MhaOutput:  # noqa: A002 - Burn's name
        batch, seq_q = self._check(input.query, "query")
        _, seq_k = self._check(input.key, "key", batch)
        self._check(input.value, "value", batch, seq_k)
        q = self._heads(self.query(input.query))
        k = self._heads(self.key(input.key))
        v = self._heads(self.value(input.value))
        mask = self._mask(input, batch, seq_q, seq_k, q)
        return self._attend(q, k, v, mask, batch, seq_q, input.is_causal)

    def forward_cache(self, input: MhaInput, cache: MhaCache) -> MhaOutput:  # noqa: A002
        """Attention for new positions only, with the others' keys and values from `cache`.

        Self-attention cache: `input` holds the new positions (batch, new, d_model) as query,
        key and value; their keys and values are appended to the cache and the new queries
        attend over every cached position. Without `mask_attn`, new position i sees the
        earlier positions and the new ones up to itself (causal); `mask_pad`, if given,
        covers all keys, (batch, cached + new). Cross-attention cache: key and value are the
        memory, projected on the first call and reused after (pass the same memory).

        Unlike Burn, which takes the whole prefix and returns every position, this takes and
        returns only the new positions: nothing is computed twice.
        """
        batch, new = self._check(input.query, "query")
        q = self._heads(self.query(input.query))
        if cache.cross and cache.key is not None and cache.value is not None:
            k, v = cache.key, cache.value
        else:
            self._check(input.key, "key", batch, None if cache.cross else new)
            self._check(input.value, "value", batch, input.key.shape[1])
            k_new = self._heads(self.key(input.key))
            v_new = self._heads(self.value(input.value))
            k, v = cache.append(k_new, v_new)
        seq_k = k.shape[2]
        mask = self._mask(input, batch, new, seq_k, q)
        causal = not cache.cross and input.attn_mask is None and new > 1
        return self._attend(q, k, v, mask, batch, new, causal or input.is_causal)

    # ---- parts -------------------------------------------------------------------------------
    def _check(self, x: Tensor, name: str, batch: int | None = None,
               seq: int | None = None) -> tuple[int, int]:
        op = "MultiHeadAttention"
        if not isinstance(x, Tensor):
            raise KindError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")
        if x.ndim != 3 or x.shape[2] != self.d_model:
            raise ShapeError(f"{op}: {name} must have shape (batch, seq, d_model={self.d_model}),"
                             f" got {x.shape}; the layer was built for d_model={self.d_model}")
        if batch is not None and x.shape[0] != batch:
            raise ShapeError(f"{op}: {name} has batch {x.shape[0]}, the query {batch}; they "
                             f"must be equal")
        if seq is not None and x.shape[1] != seq:
            raise ShapeError(f"{op}: {name} has {x.shape[1]} positions, expected {seq} (key and "
                             f"value must have the same length)")
        return x.shape[0], x.shape[1]

    def _mask(self, input: MhaInput, batch: int, seq_q: int, seq_k: int,  # noqa: A002
              like: Tensor) -> Tensor | None:
        op = "MultiHeadAttention"
        if input.pad_mask is not None:
            check_mask(op, "mask_pad", input.pad_mask, (batch, seq_k),
                       "(batch, seq_k), True at padded keys")
        if input.attn_mask is not None:
            check_mask(op, "mask_attn", input.attn_mask, (batch, seq_q, seq_k),
                       "(batch, seq_q, seq_k), True where a query may not see a key")
        return additive_mask(input.pad_mask, input.attn_mask, self.min_float, like)

    def _heads(self, x: Tensor) -> Tensor:
        """(batch, seq, d_model) -> (batch, n_heads, seq, d_k)."""
        b, s, _ = x.shape
        return x.reshape([b, s, self.n_heads, self.d_k]).swap_dims(1, 2)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, batch: int,
                seq_q: int, causal: bool) -> MhaOutput:
        scale = 1.0 / math.sqrt(self.d_k)
        quiet = self.quiet_softmax
        weights: Tensor | Callable[[], Tensor]
        if q.device.is_autodiff and self.dropout.prob > 0.0:
            weights = F.attention_weights(q, k, mask, scale=scale, quiet=quiet, causal=causal)
            context = self.dropout(weights) @ v
        else:
            context = F.attention(q, k, v, mask, scale=scale, quiet=quiet, causal=causal)
            weights = partial(F.attention_weights, q, k, mask, scale=scale, quiet=quiet,
                              causal=causal)

        context = context.swap_dims(1, 2).reshape([batch, seq_q, self.d_model])
        return MhaOutput(self.output(context), weights)
