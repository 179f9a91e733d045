"""TransformerDecoder (Burn's): layers of self-attention over the target, cross-attention over
the encoder's memory and a feed-forward network, post- or pre-norm, with an autoregressive
cache (self-attention keys/values appended per step, the memory's projected once)."""

from __future__ import annotations

from collections.abc import Callable

from ...backend.base import Backend
from ...errors import ShapeError
from ...module import Module
from ...tensor import Tensor
from ..dropout import Dropout, DropoutConfig
from ..norm import LayerNorm, LayerNormConfig
from .attention import MhaInput, MultiHeadAttention, _Builder
from .cache import MhaCache, TransformerDecoderAutoregressiveCache
from .encoder import _StackConfig, check_input
from .feedforward import PositionWiseFeedForward
from .mask import check_mask

Device = Backend | str | None
Attend = Callable[[Tensor], Tensor]


class TransformerDecoderConfig(_StackConfig):
    """`TransformerDecoderConfig(d_model, d_ff, n_heads, n_layers).init(device)`; defaults as
    `TransformerEncoderConfig`'s.

    >>> from pyrite import zeros
    >>> dec = TransformerDecoderConfig(16, 32, 4, 2).init()
    >>> dec(TransformerDecoderInput(zeros((2, 5, 16)), zeros((2, 7, 16)))).shape
    (2, 5, 16)
    """

    def init(self, device: Device = None) -> TransformerDecoder:
        def norm() -> LayerNorm:
            return LayerNormConfig(self.d_model).init(device)

        layers = [TransformerDecoderLayer(
            self.attention().init(device), self.attention().init(device),
            self.feedforward().init(device), norm(), norm(), norm(),
            DropoutConfig(self.dropout).init(), norm_first=self.norm_first)
            for _ in range(self.n_layers)]
        return TransformerDecoder(layers, self)


class TransformerDecoderInput(_Builder):
    """`target` (batch, seq_t, d_model), `memory` (batch, seq_m, d_model) and optional Bool
    masks, True where attention is not allowed: `target_mask_pad` (batch, seq_t),
    `target_mask_attn` (batch, seq_t, seq_t), `memory_mask_pad` (batch, seq_m),
    `memory_mask_attn` (batch, seq_t, seq_m). Each has a builder of its name."""

    def __init__(self, target: Tensor, memory: Tensor, target_mask_pad: Tensor | None = None,
                 memory_mask_pad: Tensor | None = None, target_mask_attn: Tensor | None = None,
                 memory_mask_attn: Tensor | None = None) -> None:
        self.target, self.memory = target, memory
        self._target_mask_pad, self._memory_mask_pad = target_mask_pad, memory_mask_pad
        self._target_mask_attn, self._memory_mask_attn = target_mask_attn, memory_mask_attn

    def target_mask_pad(self, mask: Tensor) -> TransformerDecoderInput:
        return self._with("target_mask_pad", mask)

    def memory_mask_pad(self, mask: Tensor) -> TransformerDecoderInput:
        return self._with("memory_mask_pad", mask)

    def target_mask_attn(self, mask: Tensor) -> TransformerDecoderInput:
        return self._with("target_mask_attn", mask)

    def memory_mask_attn(self, mask: Tensor) -> TransformerDecoderInput:
        return self._with("memory_mask_attn", mask)

    def masks(self) -> dict[str, Tensor | None]:
        """The four masks by name (None where not given)."""
        return {name: getattr(self, "_" + name) for name in (
            "target_mask_pad", "memory_mask_pad", "target_mask_attn", "memory_mask_attn")}


class TransformerDecoderLayer(Module):
    """One layer. Post-norm: x = norm_1(x + self_attn(x)); x = norm_2(x + cross_attn(x, m));
    x = norm_3(x + ffn(x)). Pre-norm: x = x + self_attn(norm_3(x)); x = x +
    cross_attn(norm_1(x), m); x = x + ffn(norm_2(x)) (Burn's names)."""

    def __init__(self, cross_attn: MultiHeadAttention, self_attn: MultiHeadAttention,
                 pwff: PositionWiseFeedForward, norm_1: LayerNorm, norm_2: LayerNorm,
                 norm_3: LayerNorm, dropout: Dropout, *, norm_first: bool = False) -> None:
        self.cross_attn, self.self_attn, self.pwff = cross_attn, self_attn, pwff
        self.norm_1, self.norm_2, self.norm_3 = norm_1, norm_2, norm_3
        self.dropout = dropout
        self.norm_first = norm_first

    def forward(self, x: Tensor, memory: Tensor, masks: dict[str, Tensor | None]) -> Tensor:
        return self._run(
            x,
            lambda h: self.self_attn(MhaInput(h, h, h, masks["target_mask_pad"],
                                              masks["target_mask_attn"])).context,
            lambda h: self.cross_attn(MhaInput(h, memory, memory, masks["memory_mask_pad"],
                                               masks["memory_mask_attn"])).context)

    def forward_autoregressive_inference(self, x: Tensor, memory: Tensor,
                                         masks: dict[str, Tensor | None],
                                         self_cache: MhaCache, cross_cache: MhaCache) -> Tensor:
        return self._run(
            x,
            lambda h: self.self_attn.forward_cache(
                MhaInput(h, h, h, masks["target_mask_pad"]), self_cache).context,
            lambda h: self.cross_attn.forward_cache(
                MhaInput(h, memory, memory, masks["memory_mask_pad"],
                         masks["memory_mask_attn"]), cross_cache).context)

    def _run(self, x: Tensor, self_attend: Attend, cross_attend: Attend) -> Tensor:
        h = self.norm_3(x) if self.norm_first else x
        x = x + self.dropout(self_attend(h))
        for norm, part in ((self.norm_1, cross_attend), (self.norm_2, self.pwff)):
            if self.norm_first:
                h = norm(x)
            else:
                x = h = norm(x)
            x = x + self.dropout(part(h))
        return x if self.norm_first else self.norm_3(x)


class TransformerDecoder(Module):
    """A stack of `TransformerDecoderLayer`s. Shapes: target (batch, seq_t, d_model), memory
    (batch, seq_m, d_model) -> (batch, seq_t, d_model)."""

    def __init__(self, layers: list[TransformerDecoderLayer],
                 config: TransformerDecoderConfig) -> None:
        self.layers = layers
        self.d_model, self.d_ff = config.d_model, config.d_ff
        self.n_heads, self.n_layers = config.n_heads, config.n_layers
        self.dropout = config.dropout
        self.norm_first, self.quiet_softmax = config.norm_first, config.quiet_softmax
        self.activation = config.activation

    def _checked(self, op: str,
                 input: TransformerDecoderInput) -> dict[str, Tensor | None]:  # noqa: A002
        batch, seq_t = check_input(op, input.target, self.d_model, "target")
        mem_batch, seq_m = check_input(op, input.memory, self.d_model, "memory")
        if mem_batch != batch:
            raise ShapeError(f"{op}: memory has batch {mem_batch}, the target {batch}; they "
                             f"must be equal")
        masks = input.masks()
        shapes = {"target_mask_pad": ((batch, seq_t), "(batch, seq_t), True at pads"),
                  "memory_mask_pad": ((batch, seq_m), "(batch, seq_m), True at pads"),
                  "target_mask_attn": ((batch, seq_t, seq_t), "(batch, seq_t, seq_t), True "
                                       "where a query may not see a key"),
                  "memory_mask_attn": ((batch, seq_t, seq_m), "(batch, seq_t, seq_m), True "
                                       "where a query may not see a memory position")}
        for name, mask in masks.items():
            if mask is not None:
                check_mask(op, name, mask, *shapes[name])
        return masks

    def forward(self, input: TransformerDecoderInput) -> Tensor:  # noqa: A002 - Burn's name
        masks = self._checked("TransformerDecoder", input)
        x = input.target
        for layer in self.layers:
            x = layer(x, input.memory, masks)
        return x

    def new_autoregressive_cache(self) -> TransformerDecoderAutoregressiveCache:
        """An empty cache for `forward_autoregressive_inference`."""
        return TransformerDecoderAutoregressiveCache(len(self.layers))

    def forward_autoregressive_inference(self, input: TransformerDecoderInput,  # noqa: A002
                                         cache: TransformerDecoderAutoregressiveCache) -> Tensor:
        """The outputs of the *new* target positions, (batch, new, d_model), as
        `TransformerEncoder.forward_autoregressive_inference`: `target_mask_pad` covers the
        new positions, `memory_mask_attn` is (batch, new, seq_m), `target_mask_attn` must be
        None (the causal mask is implied), and `memory` must be the same on every call (its
        keys and values are projected on the first)."""
        op = "TransformerDecoder.forward_autoregressive_inference"
        if input.masks()["target_mask_attn"] is not None:
            raise ShapeError(f"{op}: target_mask_attn must be None: the cache applies the "
                             f"causal mask itself (new positions see the cached ones and "
                             f"themselves)")
        masks = self._checked(op, input)
        batch, new = input.target.shape[:2]
        masks["target_mask_pad"] = cache.padding.extend(masks["target_mask_pad"], batch, new,
                                                        input.target)
        x = input.target
        for layer, own, cross in zip(self.layers, cache.self_attn, cache.cross_attn,
                                     strict=True):
            x = layer.forward_autoregressive_inference(x, input.memory, masks, own, cross)
        return x
