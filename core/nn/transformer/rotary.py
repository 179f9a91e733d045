"""RotaryEncoding (Burn's RoPE): rotate each pair of features by a position-dependent angle."""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

from ...backend.base import Backend
from ...creation import stack
from ...errors import ConfigError, ShapeError
from ...module import Config, Module
from ...tensor import Tensor
from .positional import _angles

Device = Backend | str | None


class RotaryEncodingConfig(Config):
    """`RotaryEncodingConfig(max_sequence_length, d_model).init(device)`, theta 10000.

    >>> from pyrite import tensor
    >>> rope = RotaryEncodingConfig(10, 4).init()
    >>> out = rope(tensor([[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]]))
    >>> out.numpy().astype(float).round(4).tolist()
    [[[1.0, 2.0, 3.0, 4.0], [-2.3473, 7.4492, 6.9197, 8.0696]]]
    """

    max_sequence_length: int
    d_model: int
    _: KW_ONLY
    theta: float = 10_000.0

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("max_sequence_length", "d_model"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"RotaryEncodingConfig: {name} must be an int >= 1, got "
                                  f"{value!r}")
        if self.d_model % 2:
            raise ConfigError(f"RotaryEncodingConfig: d_model must be even (features rotate "
                              f"in pairs), got {self.d_model}")
        if not self.theta > 0:
            raise ConfigError(f"RotaryEncodingConfig: theta must be > 0, got {self.theta}")

    def init(self, device: Device = None) -> RotaryEncoding:
        angles = _angles(self.max_sequence_length, self.d_model, self.theta, device)
        n, d = self.max_sequence_length, self.d_model

        def twice(t: Tensor) -> Tensor:  # each pair's value at both of its features
            return stack([t, t], 2).reshape([n, d])

        return RotaryEncoding(twice(angles.cos()), twice(angles.sin()), theta=self.theta)


class RotaryEncoding(Module):
    """Rotary position encoding. Features pair up *adjacently*, (x[2i], x[2i+1]) (Burn's and
    RoFormer's convention, not the half-split (x[i], x[i + d/2]) of GPT-NeoX/LLaMA ports), and
    the pair at position p turns by p * theta^(-2i / d_model):
    out[2i] = x[2i] cos - x[2i+1] sin, out[2i+1] = x[2i] sin + x[2i+1] cos.

    Shapes: (..., seq, d_model) -> same, e.g. (batch, seq, d) or (batch, heads, seq, d_k).
    The cos/sin tables (max_sequence_length, d_model) are constants, not saved in records.
    """

    def __init__(self, cos: Tensor, sin: Tensor, *, theta: float = 10_000.0) -> None:
        self.cos, self.sin = cos, sin
        self.max_sequence_length, self.d_model = cos.shape
        self.theta = theta

    def settings(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "max_sequence_length": self.max_sequence_length,
                "theta": self.theta}

    def forward(self, x: Tensor) -> Tensor:
        return self.apply(x, 0)

    def apply(self, x: Tensor, start: int) -> Tensor:
        """Encode positions start, start + 1, ... (x holds only the new positions when
        decoding with a cache)."""
        op = "RotaryEncoding"
        if x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ShapeError(f"{op}: input must have shape (..., seq, d_model={self.d_model}), "
                             f"got {x.shape}")
        seq = x.shape[-2]
        if start < 0 or start + seq > self.max_sequence_length:
            raise ShapeError(f"{op}: positions {start}..{start + seq - 1} exceed "
                             f"max_sequence_length={self.max_sequence_length}; build the "
                             f"config with a larger max_sequence_length")
        lead = [1] * (x.ndim - 2)
        cos = self.cos.narrow(0, start, seq).reshape([*lead, seq, self.d_model])
        sin = self.sin.narrow(0, start, seq).reshape([*lead, seq, self.d_model])
        if cos.dtype is not x.dtype:
            cos, sin = cos.cast(x.dtype), sin.cast(x.dtype)
        pairs = x.reshape([*x.shape[:-1], self.d_model // 2, 2])
        even, odd = pairs.narrow(-1, 0, 1), pairs.narrow(-1, 1, 1)
        turned = Tensor.cat([-odd, even], -1).reshape(list(x.shape))  # (-x[2i+1], x[2i])
        return x * cos + turned * sin
