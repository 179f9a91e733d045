"""Interpolate1d / Interpolate2d: resize the last one or two dims (nearest or linear)."""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..backend.base import Backend
from ..errors import ConfigError
from ..module import Config, Module
from ..tensor import Tensor
from . import functional as F

Device = Backend | str | None


def _check(cfg: Config, output_size: object, scale_factor: object, mode: str,
           modes: tuple[str, ...]) -> None:
    name = type(cfg).__name__
    if (output_size is None) == (scale_factor is None):
        raise ConfigError(f"{name}: give exactly one of output_size and scale_factor")
    if mode not in modes:
        raise ConfigError(f"{name}: mode must be one of {', '.join(modes)}, got {mode!r}")


class Interpolate2dConfig(Config):
    """`Interpolate2dConfig(output_size=(64, 64), mode="bilinear").init()`.

    mode: "nearest" (default) or "bilinear" ("linear" is accepted as Burn names it).
    align_corners defaults to True, as Burn; PyTorch's default is False.
    """

    _: KW_ONLY
    output_size: int | tuple[int, int] | None = None
    scale_factor: float | tuple[float, float] | None = None
    mode: str = "nearest"
    align_corners: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, self.output_size, self.scale_factor, self.mode,
               ("nearest", "linear", "bilinear"))

    def init(self, device: Device = None) -> Interpolate2d:
        return Interpolate2d(output_size=self.output_size, scale_factor=self.scale_factor,
                             mode=self.mode, align_corners=self.align_corners)


class Interpolate2d(Module):
    """Shapes: (N, C, H, W) -> (N, C, OH, OW)."""

    def __init__(self, *, output_size: int | tuple[int, int] | None = None,
                 scale_factor: float | tuple[float, float] | None = None,
                 mode: str = "nearest", align_corners: bool = True) -> None:
        self.output_size, self.scale_factor = output_size, scale_factor
        self.mode = "bilinear" if mode == "linear" else mode
        self.align_corners = align_corners

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate2d(x, self.output_size, scale_factor=self.scale_factor,
                               mode=self.mode, align_corners=self.align_corners)


class Interpolate1dConfig(Config):
    """`Interpolate1dConfig(output_size=100, mode="linear").init()`; modes nearest, linear."""

    _: KW_ONLY
    output_size: int | None = None
    scale_factor: float | None = None
    mode: str = "nearest"
    align_corners: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, self.output_size, self.scale_factor, self.mode, ("nearest", "linear"))

    def init(self, device: Device = None) -> Interpolate1d:
        return Interpolate1d(output_size=self.output_size, scale_factor=self.scale_factor,
                             mode=self.mode, align_corners=self.align_corners)


class Interpolate1d(Module):
    """Shapes: (N, C, L) -> (N, C, OL)."""

    def __init__(self, *, output_size: int | None = None, scale_factor: float | None = None,
                 mode: str = "nearest", align_corners: bool = True) -> None:
        self.output_size, self.scale_factor = output_size, scale_factor
        self.mode, self.align_corners = mode, align_corners

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate1d(x, self.output_size, scale_factor=self.scale_factor,
                               mode=self.mode, align_corners=self.align_corners)
