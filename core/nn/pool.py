"""Pooling layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d and their configs.

They hold no params; `init(device=None)` takes the device only so every config builds the same
way. As in Burn (and PyTorch), `stride` defaults to the kernel size.
"""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

from ..backend.base import Backend
from ..errors import ConfigError
from ..module import Config, Module
from ..tensor import Tensor
from . import functional as F
from .conv import PaddingSpec, padding_name

Device = Backend | str | None


def _check(cfg: Config, dims: int, **sizes: Any) -> None:
    for name, value in sizes.items():
        if value is None:
            continue
        try:
            F.tuple_of(type(cfg).__name__, name, value, dims, minimum=0 if name == "padding"
                       else 1)
        except ValueError as err:
            raise ConfigError(str(err)) from None


class _Pool(Module):
    def settings(self) -> dict[str, Any]:
        out = dict(super().settings())
        if "padding" in out:
            out["padding"] = padding_name(out["padding"])
        return out


# ---- max pooling -----------------------------------------------------------------------------
class MaxPool2dConfig(Config):
    """`MaxPool2dConfig(2).init()`: 2x2 windows, stride 2."""

    kernel_size: int | tuple[int, int]
    _: KW_ONLY
    stride: int | tuple[int, int] | None = None
    padding: PaddingSpec = 0
    dilation: int | tuple[int, int] = 1
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, 2, kernel_size=self.kernel_size, stride=self.stride,
               dilation=self.dilation)

    def init(self, device: Device = None) -> MaxPool2d:
        return MaxPool2d(self.kernel_size, stride=self.stride, padding=self.padding,
                         dilation=self.dilation, ceil_mode=self.ceil_mode)


class MaxPool2d(_Pool):
    """Max over windows. Shapes: (N, C, H, W) -> (N, C, OH, OW)."""

    def __init__(self, kernel_size: int | tuple[int, int], *,
                 stride: int | tuple[int, int] | None = None, padding: PaddingSpec = 0,
                 dilation: int | tuple[int, int] = 1, ceil_mode: bool = False) -> None:
        self.kernel_size = F.tuple_of("MaxPool2d", "kernel_size", kernel_size, 2)
        self.stride = self.kernel_size if stride is None else F.tuple_of(
            "MaxPool2d", "stride", stride, 2)
        self.padding = padding
        self.dilation = F.tuple_of("MaxPool2d", "dilation", dilation, 2)
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, self.kernel_size, stride=self.stride, padding=self.padding,
                            dilation=self.dilation, ceil_mode=self.ceil_mode)

    def forward_with_indices(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The output and each max's flat index into H*W."""
        return F.max_pool2d_with_indices(x, self.kernel_size, stride=self.stride,
                                         padding=self.padding, dilation=self.dilation,
                                         ceil_mode=self.ceil_mode)


class MaxPool1dConfig(Config):
    """`MaxPool1dConfig(3, stride=1).init()`."""

    kernel_size: int
    _: KW_ONLY
    stride: int | None = None
    padding: PaddingSpec = 0
    dilation: int = 1
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, 1, kernel_size=self.kernel_size, stride=self.stride,
               dilation=self.dilation)

    def init(self, device: Device = None) -> MaxPool1d:
        return MaxPool1d(self.kernel_size, stride=self.stride, padding=self.padding,
                         dilation=self.dilation, ceil_mode=self.ceil_mode)


class MaxPool1d(_Pool):
    """Max over windows. Shapes: (N, C, L) -> (N, C, OL)."""

    def __init__(self, kernel_size: int, *, stride: int | None = None, padding: PaddingSpec = 0,
                 dilation: int = 1, ceil_mode: bool = False) -> None:
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool1d(x, self.kernel_size, stride=self.stride, padding=self.padding,
                            dilation=self.dilation, ceil_mode=self.ceil_mode)

    def forward_with_indices(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return F.max_pool1d_with_indices(x, self.kernel_size, stride=self.stride,
                                         padding=self.padding, dilation=self.dilation,
                                         ceil_mode=self.ceil_mode)


# ---- average pooling ---------------------------------------------------------------------------
class AvgPool2dConfig(Config):
    """`AvgPool2dConfig(2).init()`; padded zeros count in the mean unless
    `count_include_pad=False`."""

    kernel_size: int | tuple[int, int]
    _: KW_ONLY
    stride: int | tuple[int, int] | None = None
    padding: PaddingSpec = 0
    count_include_pad: bool = True
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, 2, kernel_size=self.kernel_size, stride=self.stride)

    def init(self, device: Device = None) -> AvgPool2d:
        return AvgPool2d(self.kernel_size, stride=self.stride, padding=self.padding,
                         count_include_pad=self.count_include_pad, ceil_mode=self.ceil_mode)


class AvgPool2d(_Pool):
    """Mean over windows. Shapes: (N, C, H, W) -> (N, C, OH, OW)."""

    def __init__(self, kernel_size: int | tuple[int, int], *,
                 stride: int | tuple[int, int] | None = None, padding: PaddingSpec = 0,
                 count_include_pad: bool = True, ceil_mode: bool = False) -> None:
        self.kernel_size = F.tuple_of("AvgPool2d", "kernel_size", kernel_size, 2)
        self.stride = self.kernel_size if stride is None else F.tuple_of(
            "AvgPool2d", "stride", stride, 2)
        self.padding = padding
        self.count_include_pad = count_include_pad
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, stride=self.stride, padding=self.padding,
                            count_include_pad=self.count_include_pad, ceil_mode=self.ceil_mode)


class AvgPool1dConfig(Config):
    """`AvgPool1dConfig(2).init()`."""

    kernel_size: int
    _: KW_ONLY
    stride: int | None = None
    padding: PaddingSpec = 0
    count_include_pad: bool = True
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, 1, kernel_size=self.kernel_size, stride=self.stride)

    def init(self, device: Device = None) -> AvgPool1d:
        return AvgPool1d(self.kernel_size, stride=self.stride, padding=self.padding,
                         count_include_pad=self.count_include_pad, ceil_mode=self.ceil_mode)


class AvgPool1d(_Pool):
    """Mean over windows. Shapes: (N, C, L) -> (N, C, OL)."""

    def __init__(self, kernel_size: int, *, stride: int | None = None, padding: PaddingSpec = 0,
                 count_include_pad: bool = True, ceil_mode: bool = False) -> None:
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.count_include_pad = count_include_pad
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, stride=self.stride, padding=self.padding,
                            count_include_pad=self.count_include_pad, ceil_mode=self.ceil_mode)


# ---- adaptive pooling --------------------------------------------------------------------------
class AdaptiveAvgPool2dConfig(Config):
    """`AdaptiveAvgPool2dConfig((8, 8)).init()`: any input size -> 8x8."""

    output_size: int | tuple[int, int]

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, 2, output_size=self.output_size)

    def init(self, device: Device = None) -> AdaptiveAvgPool2d:
        return AdaptiveAvgPool2d(self.output_size)


class AdaptiveAvgPool2d(_Pool):
    """Mean over PyTorch's adaptive windows. Shapes: (N, C, H, W) -> (N, C, *output_size)."""

    def __init__(self, output_size: int | tuple[int, int]) -> None:
        self.output_size = F.tuple_of("AdaptiveAvgPool2d", "output_size", output_size, 2)

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)


class AdaptiveAvgPool1dConfig(Config):
    """`AdaptiveAvgPool1dConfig(4).init()`."""

    output_size: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(self, 1, output_size=self.output_size)

    def init(self, device: Device = None) -> AdaptiveAvgPool1d:
        return AdaptiveAvgPool1d(self.output_size)


class AdaptiveAvgPool1d(_Pool):
    """Mean over adaptive windows. Shapes: (N, C, L) -> (N, C, output_size)."""

    def __init__(self, output_size: int) -> None:
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(x, self.output_size)
