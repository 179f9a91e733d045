"""PositionalEncoding (Burn's): fixed sinusoids added to the input, interleaved sin/cos."""

from __future__ import annotations

import math
from dataclasses import KW_ONLY
from typing import Any

from ...backend.base import Backend
from ...creation import arange, stack
from ...data import TensorData
from ...errors import ConfigError, ShapeError
from ...module import Config, Module
from ...tensor import Tensor, from_data

Device = Backend | str | None


def _frequencies(d_model: int, timescale: float, device: Device) -> Tensor:
    """(d_model / 2,) rates timescale^(-2i / d_model), computed on the host in double."""
    rates = [math.exp(-k * math.log(timescale) / d_model) for k in range(0, d_model, 2)]
    return from_data(TensorData(rates, shape=(len(rates),), dtype="f32"), device=device)


def _angles(length: int, d_model: int, timescale: float, device: Device) -> Tensor:
    """(length, d_model / 2): position * rate."""
    rates = _frequencies(d_model, timescale, device)
    positions = arange(0, length, device=rates.device).float().cast(rates.dtype)
    return positions.unsqueeze_dim(1) * rates.unsqueeze_dim(0)


def generate_sinusoids(length: int, d_model: int, max_timescale: float = 10_000,
                       device: Device = None) -> Tensor:
    """(length, d_model): row p holds sin(p * w_i) at column 2i and cos(p * w_i) at 2i + 1,
    w_i = max_timescale^(-2i / d_model) (Burn's and PyTorch's tutorial layout).

    >>> generate_sinusoids(2, 4).numpy().astype(float).round(3).tolist()
    [[0.0, 1.0, 0.0, 1.0], [0.841, 0.54, 0.01, 1.0]]
    """
    if d_model % 2:
        raise ConfigError(f"generate_sinusoids: d_model must be even, got {d_model}")
    angles = _angles(length, d_model, max_timescale, device)
    return stack([angles.sin(), angles.cos()], 2).reshape([length, d_model])


class PositionalEncodingConfig(Config):
    """`PositionalEncodingConfig(d_model).init(device)`: tables for up to `max_sequence_size`
    positions (Burn's default 5000), timescale 10000.

    >>> from pyrite import zeros
    >>> pe = PositionalEncodingConfig(6, max_sequence_size=16).init()
    >>> pe(zeros((2, 3, 6))).numpy()[0, 1].astype(float).round(5).tolist()
    [0.84147, 0.5403, 0.0464, 0.99892, 0.00215, 1.0]
    """

    d_model: int
    _: KW_ONLY
    max_sequence_size: int = 5_000
    max_timescale: int = 10_000

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("d_model", "max_sequence_size", "max_timescale"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"PositionalEncodingConfig: {name} must be an int >= 1, got "
                                  f"{value!r}")
        if self.d_model % 2:
            raise ConfigError(f"PositionalEncodingConfig: d_model must be even (sin and cos "
                              f"pairs), got {self.d_model}")

    def init(self, device: Device = None) -> PositionalEncoding:
        table = generate_sinusoids(self.max_sequence_size, self.d_model, self.max_timescale,
                                   device)
        return PositionalEncoding(table.unsqueeze_dim(0), max_timescale=self.max_timescale)


class PositionalEncoding(Module):
    """x + sinusoids[start : start + seq]. Shapes: (batch, seq, d_model) -> same.

    The table (1, max_sequence_size, d_model) is a constant: it moves with the module and is
    not saved in records (the config recreates it).
    """

    def __init__(self, sinusoids: Tensor, *, max_timescale: int = 10_000) -> None:
        self.sinusoids = sinusoids
        self.max_sequence_size, self.d_model = sinusoids.shape[1:]
        self.max_timescale = max_timescale

    def settings(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "max_sequence_size": self.max_sequence_size,
                "max_timescale": self.max_timescale}

    def forward(self, x: Tensor) -> Tensor:
        return self.apply(x, 0)

    def apply(self, x: Tensor, start: int) -> Tensor:
        """The encoding of positions start, start + 1, ...: for decoding with a cache, where
        x holds only the new positions."""
        op = "PositionalEncoding"
        if x.ndim != 3 or x.shape[2] != self.d_model:
            raise ShapeError(f"{op}: input must have shape (batch, seq, d_model={self.d_model}),"
                             f" got {x.shape}")
        seq = x.shape[1]
        if start < 0 or start + seq > self.max_sequence_size:
            raise ShapeError(f"{op}: positions {start}..{start + seq - 1} exceed "
                             f"max_sequence_size={self.max_sequence_size}; build the config "
                             f"with a larger max_sequence_size")
        table = self.sinusoids.narrow(1, start, seq)
        return x + (table if table.dtype is x.dtype else table.cast(x.dtype))
