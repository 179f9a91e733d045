"""pyrite.nn: layers, losses and initializers, each built from a Config (`XConfig(...).init()`),
plus `pyrite.nn.functional` for the module ops on tensors. See docs/modules.md.

The layers an inference page rarely needs (3-D and deformable convolution, embeddings,
interpolation, losses, recurrent and transformer layers) are imported on first use: each
config is a dataclass whose methods `dataclasses` compiles when the class is made, which is
slow in a browser's Python (a first visit's MNIST load spent 0.23 s making 63 of them).
"""

import importlib
from typing import TYPE_CHECKING, Any

from . import functional, init
from .activation import (
    Gelu,
    HardSigmoid,
    HardSigmoidConfig,
    LeakyRelu,
    LeakyReluConfig,
    Prelu,
    PreluConfig,
    Relu,
    Sigmoid,
    SwiGlu,
    SwiGluConfig,
    Tanh,
)
from .conv import (
    Conv1d,
    Conv1dConfig,
    Conv2d,
    Conv2dConfig,
    ConvTranspose1d,
    ConvTranspose1dConfig,
    ConvTranspose2d,
    ConvTranspose2dConfig,
)
from .dropout import Dropout, DropoutConfig
from .init import (
    Constant,
    Initializer,
    KaimingNormal,
    KaimingUniform,
    Normal,
    Ones,
    Uniform,
    XavierNormal,
    XavierUniform,
    Zeros,
)
from .linear import Linear, LinearConfig
from .norm import (
    BatchNorm,
    BatchNormConfig,
    GroupNorm,
    GroupNormConfig,
    InstanceNorm,
    InstanceNormConfig,
    LayerNorm,
    LayerNormConfig,
    RmsNorm,
    RmsNormConfig,
)
from .pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool1dConfig,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool2dConfig,
    AvgPool1d,
    AvgPool1dConfig,
    AvgPool2d,
    AvgPool2dConfig,
    MaxPool1d,
    MaxPool1dConfig,
    MaxPool2d,
    MaxPool2dConfig,
)

if TYPE_CHECKING:
    from .conv3d import Conv3d, Conv3dConfig, ConvTranspose3d, ConvTranspose3dConfig
    from .deform_conv import DeformConv2d, DeformConv2dConfig
    from .embedding import Embedding, EmbeddingConfig
    from .interpolate import Interpolate1d, Interpolate1dConfig, Interpolate2d, Interpolate2dConfig
    from .loss import (
        BinaryCrossEntropyLoss,
        BinaryCrossEntropyLossConfig,
        CrossEntropyLoss,
        CrossEntropyLossConfig,
        HuberLoss,
        HuberLossConfig,
        MseLoss,
        MseLossConfig,
    )
    from .rnn import (
        BiLstm,
        BiLstmConfig,
        GateController,
        GateControllerConfig,
        Gru,
        GruConfig,
        Lstm,
        LstmConfig,
        LstmState,
    )
    from .transformer import (
        MhaCache,
        MhaInput,
        MhaOutput,
        MultiHeadAttention,
        MultiHeadAttentionConfig,
        PositionalEncoding,
        PositionalEncodingConfig,
        PositionWiseFeedForward,
        PositionWiseFeedForwardConfig,
        RotaryEncoding,
        RotaryEncodingConfig,
        TransformerDecoder,
        TransformerDecoderConfig,
        TransformerDecoderInput,
        TransformerEncoder,
        TransformerEncoderConfig,
        TransformerEncoderInput,
        generate_autoregressive_mask,
        generate_padding_mask,
    )

#: submodules imported when one of their names is first asked for (`__getattr__`)
_LAZY = ("conv3d", "deform_conv", "embedding", "interpolate", "loss", "rnn", "transformer")


def __getattr__(name: str) -> Any:
    """A lazily imported layer (or submodule): imported now, then kept as an attribute."""
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    if name in __all__:
        for sub in _LAZY:
            module = importlib.import_module(f"{__name__}.{sub}")
            if hasattr(module, name):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "BatchNorm",
    "BatchNormConfig",
    "BiLstm",
    "BiLstmConfig",
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "Constant",
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "Conv3d",
    "Conv3dConfig",
    "ConvTranspose1d",
    "ConvTranspose1dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "ConvTranspose3d",
    "ConvTranspose3dConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "DeformConv2d",
    "DeformConv2dConfig",
    "Dropout",
    "DropoutConfig",
    "Embedding",
    "EmbeddingConfig",
    "GateController",
    "GateControllerConfig",
    "Gelu",
    "GroupNorm",
    "GroupNormConfig",
    "Gru",
    "GruConfig",
    "HardSigmoid",
    "HardSigmoidConfig",
    "HuberLoss",
    "HuberLossConfig",
    "Initializer",
    "InstanceNorm",
    "InstanceNormConfig",
    "Interpolate1d",
    "Interpolate1dConfig",
    "Interpolate2d",
    "Interpolate2dConfig",
    "KaimingNormal",
    "KaimingUniform",
    "LayerNorm",
    "LayerNormConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "Linear",
    "LinearConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "MaxPool1d",
    "MaxPool1dConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
    "MseLoss",
    "MseLossConfig",
    "Normal",
    "Ones",
    "Prelu",
    "PreluConfig",
    "Relu",
    "RmsNorm",
    "RmsNormConfig",
    "Sigmoid",
    "SwiGlu",
    "SwiGluConfig",
    "Tanh",
    "Uniform",
    "XavierNormal",
    "XavierUniform",
    "Zeros",
    "MhaCache",
    "MhaInput",
    "MhaOutput",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "PositionalEncoding",
    "PositionalEncodingConfig",
    "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "RotaryEncoding",
    "RotaryEncodingConfig",
    "TransformerDecoder",
    "TransformerDecoderConfig",
    "TransformerDecoderInput",
    "TransformerEncoder",
    "TransformerEncoderConfig",
    "TransformerEncoderInput",
    "generate_autoregressive_mask",
    "generate_padding_mask",
    "functional",
    "init",
]
