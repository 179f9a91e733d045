"""Embedding: a lookup table of learned vectors, one row per token id."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..backend.base import Backend
from ..errors import ConfigError
from ..module import Config, Module, Param
from ..tensor import Tensor
from . import functional as F
from .init import Initializer, Normal

Device = Backend | str | None


class EmbeddingConfig(Config):
    """`EmbeddingConfig(10000, 512).init(device)`; weights N(0, 1) as in Burn."""

    n_embedding: int
    d_model: int
    _: KW_ONLY
    initializer: Initializer = Normal(mean=0.0, std=1.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_embedding < 1 or self.d_model < 1:
            raise ConfigError(f"EmbeddingConfig: sizes must be >= 1, got n_embedding="
                              f"{self.n_embedding}, d_model={self.d_model}")

    def init(self, device: Device = None) -> Embedding:
        return Embedding(self.initializer.init_param(
            (self.n_embedding, self.d_model), fan_in=self.n_embedding, fan_out=self.d_model,
            device=device))


class Embedding(Module):
    """Shapes: Int indices (...) -> (..., d_model)."""

    def __init__(self, weight: Param) -> None:
        self.weight = weight

    def settings(self) -> dict[str, int]:
        n, d = self.weight.shape
        return {"n_embedding": n, "d_model": d}

    def forward(self, indices: Tensor) -> Tensor:
        return F.embedding(self.weight.val, indices)
