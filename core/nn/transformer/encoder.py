"""TransformerEncoder (Burn's): a stack of self-attention + feed-forward layers, post-norm
(`norm_first=False`, the original transformer's and Burn's default) or pre-norm, with an
autoregressive key/value cache for decoding one position at a time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY

from ...backend.base import Backend
from ...errors import ShapeError
from ...module import Config, Module
from ...tensor import Tensor
from ..dropout import Dropout, DropoutConfig
from ..init import DEFAULT_GAIN, Initializer, KaimingUniform
from ..norm import LayerNorm, LayerNormConfig
from .attention import (
    MhaInput,
    MultiHeadAttention,
    MultiHeadAttentionConfig,
    _MaskedInput,
    check_heads,
)
from .cache import MhaCache, TransformerEncoderAutoregressiveCache
from .feedforward import PositionWiseFeedForward, PositionWiseFeedForwardConfig, check_activation
from .mask import check_mask

Device = Backend | str | None


class _StackConfig(Config):
    """What the encoder and decoder configs share: sizes, options (Burn's defaults: dropout
    0.1, post-norm, regular softmax, GELU, KaimingUniform(1/sqrt(3))), validation, and the
    configs of each layer's attention and feed-forward network."""

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    _: KW_ONLY
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: Initializer = KaimingUniform(gain=DEFAULT_GAIN, fan_out_only=False)
    activation: str = "gelu"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_heads(self, self.d_model, self.n_heads, self.dropout)
        check_activation(self, self.activation)
        check_sizes(self, d_ff=self.d_ff, n_layers=self.n_layers)

    def attention(self) -> MultiHeadAttentionConfig:
        return MultiHeadAttentionConfig(self.d_model, self.n_heads, dropout=self.dropout,
                                        quiet_softmax=self.quiet_softmax,
                                        initializer=self.initializer)

    def feedforward(self) -> PositionWiseFeedForwardConfig:
        return PositionWiseFeedForwardConfig(self.d_model, self.d_ff, dropout=self.dropout,
                                             initializer=self.initializer,
                                             activation=self.activation)


class TransformerEncoderConfig(_StackConfig):
    """`TransformerEncoderConfig(d_model, d_ff, n_heads, n_layers).init(device)`; Burn's
    defaults: dropout 0.1, post-norm, regular softmax, GELU, KaimingUniform(1/sqrt(3)).

    >>> from pyrite import zeros
    >>> enc = TransformerEncoderConfig(16, 32, 4, 2).init()
    >>> enc(TransformerEncoderInput(zeros((2, 5, 16)))).shape
    (2, 5, 16)
    """

    def init(self, device: Device = None) -> TransformerEncoder:
        layers = [TransformerEncoderLayer(
            self.attention().init(device), self.feedforward().init(device),
            LayerNormConfig(self.d_model).init(device), LayerNormConfig(self.d_model).init(device),
            DropoutConfig(self.dropout).init(), norm_first=self.norm_first)
            for _ in range(self.n_layers)]
        return TransformerEncoder(layers, self)


def check_sizes(cfg: Config, **sizes: int) -> None:
    from ...errors import ConfigError
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{type(cfg).__name__}: {name} must be an int >= 1, got {value!r}")


class TransformerEncoderInput(_MaskedInput):
    """The input (batch, seq, d_model) and optional Bool masks, True where attention is not
    allowed: `mask_pad` (batch, seq), `mask_attn` (batch, seq, seq). Builders `.mask_pad(m)`,
    `.mask_attn(m)`; read back as `.pad_mask`, `.attn_mask`. `.causal()`: each position sees
    itself and the earlier ones only, with no mask tensor (`generate_autoregressive_mask`'s
    effect; the attention op's causal flag); read back as `.is_causal`."""

    def __init__(self, tensor: Tensor, mask_pad: Tensor | None = None,
                 mask_attn: Tensor | None = None, causal: bool = False) -> None:
        self.tensor = tensor
        self._mask_pad, self._mask_attn = mask_pad, mask_attn
        self._causal = causal


Attend = Callable[[Tensor], Tensor]


class TransformerEncoderLayer(Module):
    """One layer. Post-norm: x = norm_1(x + attn(x)); x = norm_2(x + ffn(x)). Pre-norm:
    x = x + attn(norm_2(x)); x = x + ffn(norm_1(x)). (Burn's names: norm_2 is the one around
    attention in pre-norm.) Dropout after the attention and after the feed-forward."""

    def __init__(self, mha: MultiHeadAttention, pwff: PositionWiseFeedForward, norm_1: LayerNorm,
                 norm_2: LayerNorm, dropout: Dropout, *, norm_first: bool = False) -> None:
        self.mha, self.pwff = mha, pwff
        self.norm_1, self.norm_2 = norm_1, norm_2
        self.dropout = dropout
        self.norm_first = norm_first

    def forward(self, x: Tensor, mask_pad: Tensor | None = None,
                mask_attn: Tensor | None = None, causal: bool = False) -> Tensor:
        return self._run(x, lambda h: self.mha(
            MhaInput(h, h, h, mask_pad, mask_attn, causal)).context)

    def forward_autoregressive_inference(self, x: Tensor, mask_pad: Tensor | None,
                                         cache: MhaCache) -> Tensor:
        """The new positions (batch, new, d_model); `mask_pad` covers every cached key."""
        return self._run(x, lambda h: self.mha.forward_cache(
            MhaInput(h, h, h, mask_pad), cache).context)

    def _run(self, x: Tensor, attend: Attend) -> Tensor:
        h = self.norm_2(x) if self.norm_first else x
        x = x + self.dropout(attend(h))
        if self.norm_first:
            h = self.norm_1(x)
        else:
            x = h = self.norm_1(x)
        x = x + self.dropout(self.pwff(h))
        return x if self.norm_first else self.norm_2(x)


def check_input(op: str, x: Tensor, d_model: int, name: str = "input") -> tuple[int, int]:
    if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[2] != d_model:
        got = x.shape if isinstance(x, Tensor) else type(x).__name__
        raise ShapeError(f"{op}: {name} must have shape (batch, seq, d_model={d_model}), got "
                         f"{got}; the model was built for d_model={d_model}")
    return x.shape[0], x.shape[1]


class TransformerEncoder(Module):
    """A stack of `TransformerEncoderLayer`s. Shapes: (batch, seq, d_model) -> same."""

    def __init__(self, layers: list[TransformerEncoderLayer],
                 config: TransformerEncoderConfig) -> None:
        self.layers = layers
        self.d_model, self.d_ff = config.d_model, config.d_ff
        self.n_heads, self.n_layers = config.n_heads, config.n_layers
        self.dropout = config.dropout
        self.norm_first, self.quiet_softmax = config.norm_first, config.quiet_softmax
        self.activation = config.activation

    def forward(self, input: TransformerEncoderInput) -> Tensor:  # noqa: A002 - Burn's name
        op = "TransformerEncoder"
        batch, seq = check_input(op, input.tensor, self.d_model)
        if input.pad_mask is not None:
            check_mask(op, "mask_pad", input.pad_mask, (batch, seq), "(batch, seq), True at pads")
        if input.attn_mask is not None:
            check_mask(op, "mask_attn", input.attn_mask, (batch, seq, seq),
                       "(batch, seq_q, seq_k), True where a query may not see a key")
        x = input.tensor
        for layer in self.layers:
            x = layer(x, input.pad_mask, input.attn_mask, input.is_causal)
        return x

    def new_autoregressive_cache(self) -> TransformerEncoderAutoregressiveCache:
        """An empty key/value cache for `forward_autoregressive_inference`."""
        return TransformerEncoderAutoregressiveCache(len(self.layers))

    def forward_autoregressive_inference(self, input: TransformerEncoderInput,  # noqa: A002
                                         cache: TransformerEncoderAutoregressiveCache) -> Tensor:
        """The outputs of the *new* positions, (batch, new, d_model), given the earlier ones
        through `cache` (updated in place): equal to the matching rows of `forward` with a
        causal mask over the whole sequence. `mask_pad`, if given, is (batch, new) for the new
        positions (the cache remembers earlier ones); the causal mask is implied, so
        `mask_attn` must be None. Unlike Burn's (whole prefix in, whole output out), each
        position is computed once."""
        op = "TransformerEncoder.forward_autoregressive_inference"
        batch, new = check_input(op, input.tensor, self.d_model)
        if input.attn_mask is not None:
            raise ShapeError(f"{op}: mask_attn must be None: the cache applies the causal mask "
                             f"itself (new positions see the cached ones and themselves)")
        if input.pad_mask is not None:
            check_mask(op, "mask_pad", input.pad_mask, (batch, new),
                       "(batch, new), True at pads among the new positions")
        pad = cache.padding.extend(input.pad_mask, batch, new, input.tensor)
        x = input.tensor
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            x = layer.forward_autoregressive_inference(x, pad, layer_cache)
        return x
