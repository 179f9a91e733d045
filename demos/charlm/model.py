"""The character-level language model: a small decoder-only transformer.

    tokens (batch, seq) -> Embedding -> + PositionalEncoding -> TransformerEncoder (causal
    flag, pre-norm, GELU) -> LayerNorm -> Linear head -> logits (batch, seq, vocab)

`ModelConfig` holds the sizes and the vocabulary (the characters, a token's id is its index),
so the config JSON beside a record is all a page needs to rebuild the model and its tokenizer.
`train_step`/`valid_step` are the Learner's: cross-entropy of each next character.
"""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import TYPE_CHECKING

from pyrite import Backend, Tensor, TensorData, from_data
from pyrite.errors import ConfigError
from pyrite.module import Config, Module
from pyrite.nn.embedding import EmbeddingConfig
from pyrite.nn.linear import LinearConfig
from pyrite.nn.norm import LayerNormConfig
from pyrite.nn.transformer import (
    PositionalEncodingConfig,
    TransformerEncoderAutoregressiveCache,
    TransformerEncoderConfig,
    TransformerEncoderInput,
)

if TYPE_CHECKING:  # the Learner's types: imported where used, so a page never loads pyrite.train
    from pyrite.train import ClassificationOutput, TrainOutput

Device = str | Backend | None


class ModelConfig(Config):
    """`ModelConfig(vocab, d_model=128, n_heads=4, n_layers=4, d_ff=512, context=64)`:
    `context` is the longest sequence the model sees (the positional table's length)."""

    vocab: str
    _: KW_ONLY
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 512
    context: int = 64
    dropout: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(set(self.vocab)) != len(self.vocab) or not self.vocab:
            raise ConfigError(f"charlm ModelConfig: vocab must be distinct characters, got "
                              f"{len(self.vocab)} characters, {len(set(self.vocab))} distinct")

    def init(self, device: Device = None) -> Model:
        return Model(self, device)


class Model(Module):
    """Shapes: Int tokens (batch, seq <= context) -> logits (batch, seq, vocab)."""

    def __init__(self, config: ModelConfig, device: Device = None) -> None:
        d = config.d_model
        # N(0, 1), Burn's default: the same scale as the sinusoids added to it (a small
        # embedding drowns in the positions and the model learns to ignore its input)
        self.embedding = EmbeddingConfig(len(config.vocab), d).init(device)
        self.positional = PositionalEncodingConfig(d, max_sequence_size=config.context).init(
            device)
        self.encoder = TransformerEncoderConfig(d, config.d_ff, config.n_heads, config.n_layers,
                                                dropout=config.dropout, norm_first=True,
                                                activation="gelu").init(device)
        self.norm = LayerNormConfig(d).init(device)
        self.head = LinearConfig(d, len(config.vocab)).init(device)
        self.vocab = config.vocab
        self.context = config.context

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.positional(self.embedding(tokens))
        # causal flag, no mask tensor: the fused attention kernels skip the hidden tiles
        x = self.encoder(TransformerEncoderInput(x).causal())
        logits: Tensor = self.head(self.norm(x))
        return logits

    def new_cache(self) -> TransformerEncoderAutoregressiveCache:
        """An empty key/value cache for `forward_cached`."""
        return self.encoder.new_autoregressive_cache()

    def forward_cached(self, tokens: Tensor,
                       cache: TransformerEncoderAutoregressiveCache) -> Tensor:
        """The logits of the *last* new position, (batch, vocab), given the earlier positions
        through `cache` (updated): `tokens` (batch, new) holds only the new positions, and
        cache.length + new must stay within `context`."""
        batch, new = tokens.shape
        x = self.positional.apply(self.embedding(tokens), cache.length)
        x = self.encoder.forward_autoregressive_inference(TransformerEncoderInput(x), cache)
        last = x.narrow(1, new - 1, 1).reshape((batch, x.shape[2]))
        logits: Tensor = self.head(self.norm(last))
        return logits

    def tokens(self, ids: list[list[int]]) -> Tensor:
        """Token ids (batch, seq) as an Int tensor on the model's device."""
        flat = [i for row in ids for i in row]
        return from_data(TensorData(flat, shape=(len(ids), len(ids[0])), dtype="i32"),
                         device=self.devices()[0])

    def loss(self, tokens: Tensor) -> ClassificationOutput:
        """Next-character cross-entropy over a batch of windows (batch, context + 1)."""
        from pyrite.nn.loss import CrossEntropyLossConfig
        from pyrite.train import ClassificationOutput

        batch, length = tokens.shape
        inputs, targets = tokens.narrow(1, 0, length - 1), tokens.narrow(1, 1, length - 1)
        logits = self.forward(inputs).reshape((batch * (length - 1), len(self.vocab)))
        flat = targets.reshape((batch * (length - 1),))
        loss = CrossEntropyLossConfig().init(logits.device)(logits, flat)
        return ClassificationOutput(loss, logits, flat)

    def train_step(self, batch: Tensor) -> TrainOutput[ClassificationOutput]:
        from pyrite.train import TrainOutput

        item = self.loss(batch)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: Tensor) -> ClassificationOutput:
        return self.loss(batch)


__all__ = ["Model", "ModelConfig"]
