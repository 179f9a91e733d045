"""Transformer modules as in Burn: MultiHeadAttention, TransformerEncoder/Decoder with their
autoregressive caches, PositionWiseFeedForward, PositionalEncoding, RotaryEncoding and the
mask helpers. See docs/modules.md, "Transformer"."""

from .attention import MhaInput, MhaOutput, MultiHeadAttention, MultiHeadAttentionConfig
from .cache import (
    MhaCache,
    TransformerDecoderAutoregressiveCache,
    TransformerEncoderAutoregressiveCache,
)
from .decoder import (
    TransformerDecoder,
    TransformerDecoderConfig,
    TransformerDecoderInput,
    TransformerDecoderLayer,
)
from .encoder import (
    TransformerEncoder,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    TransformerEncoderLayer,
)
from .feedforward import PositionWiseFeedForward, PositionWiseFeedForwardConfig
from .mask import GeneratePaddingMask, generate_autoregressive_mask, generate_padding_mask
from .positional import PositionalEncoding, PositionalEncodingConfig, generate_sinusoids
from .rotary import RotaryEncoding, RotaryEncodingConfig

__all__ = [
    "GeneratePaddingMask", "MhaCache", "MhaInput", "MhaOutput", "MultiHeadAttention",
    "MultiHeadAttentionConfig", "PositionWiseFeedForward", "PositionWiseFeedForwardConfig",
    "PositionalEncoding", "PositionalEncodingConfig", "RotaryEncoding", "RotaryEncodingConfig",
    "TransformerDecoder", "TransformerDecoderAutoregressiveCache", "TransformerDecoderConfig",
    "TransformerDecoderInput", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderAutoregressiveCache", "TransformerEncoderConfig",
    "TransformerEncoderInput", "TransformerEncoderLayer", "generate_autoregressive_mask",
    "generate_padding_mask", "generate_sinusoids",
]
