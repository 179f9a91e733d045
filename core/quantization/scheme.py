"""Quantization schemes: the integer type, the range mapping and the granularity of the params.

A `QuantizationScheme` says how float values become integers: which `QuantizationType` holds
them (QInt8, or QInt4 for weights), whether the mapping is symmetric around zero (a scale) or
affine (a scale and an integer offset, the zero point), and how many values share one pair of
params: the whole tensor, one channel along an axis, or one block of `block_size` consecutive
values along an axis. The variants are spelled as Burn spells them:

>>> QuantizationScheme.PerTensorSymmetric(QuantizationType.QInt8)
PerTensorSymmetric(QInt8)
>>> QuantizationScheme.PerBlock(QuantizationType.QInt4, 32).params_shape((100, 10))
(4, 10)

This module owns the schemes and the arithmetic that turns a range into params; applying them
to tensors is `tensor.py`, measuring ranges is `calibration.py`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ..errors import QuantizationError

if TYPE_CHECKING:
    from ..tensor import Tensor


class QuantizationType(Enum):
    """The integer type of the quantized values: (name, bits)."""

    QInt8 = ("QInt8", 8)
    QInt4 = ("QInt4", 4)

    def __init__(self, label: str, bits: int) -> None:
        self.label = label
        self.bits = bits

    def __repr__(self) -> str:
        return self.label

    __str__ = __repr__

    @property
    def bounds(self) -> tuple[int, int]:
        """The full signed range: (-128, 127) for QInt8, (-8, 7) for QInt4."""
        half = 1 << (self.bits - 1)
        return -half, half - 1


class QuantizationMode(Enum):
    """How a range maps onto the integers: a scale only, or a scale and a zero point."""

    Symmetric = "Symmetric"
    Affine = "Affine"


class Granularity(Enum):
    """How many values share one scale (and zero point)."""

    Tensor = "Tensor"
    Channel = "Channel"
    Block = "Block"


@dataclass(frozen=True)
class QuantizationParameters:
    """The params of a quantized tensor: `scale` (float) and, for affine schemes, `offset`
    (the integer zero point). Both have the scheme's `params_shape` (`(1,)` per tensor)."""

    scale: Tensor
    offset: Tensor | None = None


@dataclass(frozen=True)
class CalibrationRange:
    """The float range to represent, as tensors of the scheme's `params_shape`."""

    min: Tensor
    max: Tensor


@dataclass(frozen=True)
class QuantizationScheme:
    """A quantization scheme; build one with the variant constructors (PerTensorSymmetric, ...).

    `axis` is the channel axis (PerChannel) or the axis cut into blocks (PerBlock). A channel
    axis of None means the output axis of a weight: axis 0 for a tensor of rank >= 3 (a
    convolution's (out, in, kh, kw)) and the last axis otherwise (a linear weight, stored
    (d_input, d_output) as Burn stores it).
    """

    qtype: QuantizationType
    mode: QuantizationMode
    granularity: Granularity = Granularity.Tensor
    axis: int | None = None
    block_size: int = 0

    def __post_init__(self) -> None:
        if self.granularity is Granularity.Block and self.block_size < 1:
            raise QuantizationError(f"PerBlock: block_size must be >= 1, got {self.block_size}")

    # ---- Burn's variants (and pyrite's per-channel and per-block ones) ----------------------
    @staticmethod
    def PerTensorSymmetric(qtype: QuantizationType) -> QuantizationScheme:  # noqa: N802 - Burn
        """One scale for the whole tensor, zero maps to zero."""
        return QuantizationScheme(qtype, QuantizationMode.Symmetric)

    @staticmethod
    def PerTensorAffine(qtype: QuantizationType) -> QuantizationScheme:  # noqa: N802 - Burn
        """One scale and zero point for the whole tensor: the range [min, max] fills the type."""
        return QuantizationScheme(qtype, QuantizationMode.Affine)

    @staticmethod
    def PerChannelSymmetric(qtype: QuantizationType,  # noqa: N802 - Burn's spelling
                            axis: int | None = None) -> QuantizationScheme:
        """One scale per index of `axis` (see the class docstring for axis=None)."""
        return QuantizationScheme(qtype, QuantizationMode.Symmetric, Granularity.Channel, axis)

    @staticmethod
    def PerChannelAffine(qtype: QuantizationType,  # noqa: N802 - Burn's spelling
                         axis: int | None = None) -> QuantizationScheme:
        """One scale and zero point per index of `axis`."""
        return QuantizationScheme(qtype, QuantizationMode.Affine, Granularity.Channel, axis)

    @staticmethod
    def PerBlockSymmetric(qtype: QuantizationType, block_size: int,  # noqa: N802 - Burn
                          axis: int = 0) -> QuantizationScheme:
        """One scale per `block_size` consecutive values along `axis` (the last block may be
        shorter). Axis 0 of a linear weight (d_input, d_output) is its reduction axis."""
        return QuantizationScheme(qtype, QuantizationMode.Symmetric, Granularity.Block, axis,
                                  block_size)

    @staticmethod
    def PerBlockAffine(qtype: QuantizationType, block_size: int,  # noqa: N802 - Burn
                       axis: int = 0) -> QuantizationScheme:
        """One scale and zero point per block of `block_size` values along `axis`."""
        return QuantizationScheme(qtype, QuantizationMode.Affine, Granularity.Block, axis,
                                  block_size)

    PerChannel = PerChannelSymmetric
    PerBlock = PerBlockSymmetric

    def __repr__(self) -> str:
        name = f"Per{self.granularity.value}{self.mode.value}"
        extra = ""
        if self.granularity is Granularity.Block:
            extra = f", block_size={self.block_size}, axis={self.axis}"
        elif self.granularity is Granularity.Channel and self.axis is not None:
            extra = f", axis={self.axis}"
        return f"{name}({self.qtype}{extra})"

    # ---- the integer range ------------------------------------------------------------------
    @property
    def is_symmetric(self) -> bool:
        return self.mode is QuantizationMode.Symmetric

    @property
    def q_bounds(self) -> tuple[int, int]:
        """The integers used: symmetric schemes drop the most negative one (-127..127), so
        negating a value never overflows and zero sits in the middle."""
        lo, hi = self.qtype.bounds
        return (-hi, hi) if self.is_symmetric else (lo, hi)

    # ---- where the params go ----------------------------------------------------------------
    def resolved_axis(self, shape: tuple[int, ...]) -> int:
        """The channel or block axis for a tensor of `shape`, as a non-negative index."""
        rank = len(shape)
        axis = self.axis
        if axis is None:
            axis = 0 if rank >= 3 else -1
        if not -rank <= axis < rank:
            raise QuantizationError(f"{self!r}: axis {axis} is out of range for a tensor of "
                                    f"shape {shape}; use an axis in [{-rank}, {rank - 1}]")
        return axis % rank

    def params_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of the scale (and offset) for a tensor of `shape`: (1,) per tensor, the
        channel axis kept (others 1) per channel, the block axis counted in blocks per block."""
        if self.granularity is Granularity.Tensor:
            return (1,)
        if not shape:
            raise QuantizationError(f"{self!r}: a rank-0 tensor has no axis; use a per-tensor "
                                    f"scheme")
        axis = self.resolved_axis(shape)
        if self.granularity is Granularity.Channel:
            return tuple(n if d == axis else 1 for d, n in enumerate(shape))
        blocks = math.ceil(shape[axis] / self.block_size)
        return tuple(blocks if d == axis else n for d, n in enumerate(shape))

    # ---- params from a range ----------------------------------------------------------------
    def compute_q_params(self, rng: CalibrationRange) -> QuantizationParameters:
        """The scale (and zero point) that map `rng` onto the type's integers.

        The range is widened to include zero, so zero is exact (padding and ReLU outputs stay
        exact). A range of width zero (an all-zero tensor or channel) gets scale 1.
        """
        lo_q, hi_q = self.q_bounds
        lo = rng.min.clamp_max(0.0)
        hi = rng.max.clamp_min(0.0)
        if self.is_symmetric:
            amax = hi.max_pair(-lo)
            scale = amax / float(hi_q)
            scale = scale.mask_fill(amax <= 0.0, 1.0)
            return QuantizationParameters(scale)
        width = hi - lo
        scale = (width / float(hi_q - lo_q)).mask_fill(width <= 0.0, 1.0)
        offset = (float(lo_q) - lo / scale).round().clamp(lo_q, hi_q).int()
        return QuantizationParameters(scale, offset)

    # ---- records ----------------------------------------------------------------------------
    def to_json(self) -> str:
        """The scheme as a short JSON string (stored in records beside the values)."""
        return json.dumps({"type": self.qtype.label, "mode": self.mode.value,
                           "granularity": self.granularity.value, "axis": self.axis,
                           "block_size": self.block_size}, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> QuantizationScheme:
        """The scheme `to_json` wrote; anything else raises QuantizationError."""
        try:
            found = json.loads(text)
            axis = found["axis"]
            if axis is not None and not isinstance(axis, int):
                raise TypeError("axis")
            return QuantizationScheme(QuantizationType[found["type"]],
                                      QuantizationMode(found["mode"]),
                                      Granularity(found["granularity"]), axis,
                                      int(found["block_size"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise QuantizationError(f"not a quantization scheme: {text!r} ({exc}); records "
                                    f"store QuantizationScheme.to_json()") from exc
