"""3-D convolution layers: Conv3d, ConvTranspose3d and their configs (input NCDHW).

They share the 2-d layers' configs, weight layouts, initializers and printing
(`pyrite.nn.conv`); the ops are composites over conv2d (`pyrite.backend.module_ops`).
"""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..module import Param
from ..tensor import Tensor
from . import functional as F
from .conv import Device, PaddingSpec, _check_padding, _Conv, _ConvConfig, _sizes


class Conv3dConfig(_ConvConfig):
    """`Conv3dConfig(1, 8, 3, padding=1).init(device)`: 1 -> 8 channels, 3x3x3 kernel.

    padding: "valid" (default), "same" (stride 1), an int, (pd, ph, pw) or one
    (before, after) pair per dim.

    >>> Conv3dConfig(2, 4, (1, 3, 3), padding="same").init().weight.shape
    (4, 2, 1, 3, 3)
    """

    _: KW_ONLY
    padding: PaddingSpec = "valid"
    dims = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_padding(self, self.padding)

    def init(self, device: Device = None) -> Conv3d:
        weight, bias = self._params(device)
        return Conv3d(weight, bias, stride=_sizes(self, "stride", self.stride, 3),
                      padding=self.padding, dilation=_sizes(self, "dilation", self.dilation, 3),
                      groups=self.groups)


class ConvTranspose3dConfig(_ConvConfig):
    """`ConvTranspose3dConfig(16, 8, 3, stride=2, padding=1, padding_out=1)`; doubles D, H, W."""

    _: KW_ONLY
    padding: int | tuple[int, ...] = 0
    padding_out: int | tuple[int, ...] = 0
    dims = 3
    transposed = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _sizes(self, "padding", self.padding, 3, minimum=0)
        _sizes(self, "padding_out", self.padding_out, 3, minimum=0)

    def init(self, device: Device = None) -> ConvTranspose3d:
        weight, bias = self._params(device)
        return ConvTranspose3d(weight, bias, stride=_sizes(self, "stride", self.stride, 3),
                               padding=_sizes(self, "padding", self.padding, 3, 0),
                               padding_out=_sizes(self, "padding_out", self.padding_out, 3, 0),
                               dilation=_sizes(self, "dilation", self.dilation, 3),
                               groups=self.groups)


class Conv3d(_Conv):
    """3-D convolution. Shapes: (N, C_in, D, H, W) -> (N, C_out, OD, OH, OW)."""

    def __init__(self, weight: Param, bias: Param | None = None, *,
                 stride: tuple[int, ...] = (1, 1, 1), padding: PaddingSpec = "valid",
                 dilation: tuple[int, ...] = (1, 1, 1), groups: int = 1) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, x: Tensor) -> Tensor:
        return F.conv3d(x, self.weight.val, self._b(), stride=self.stride, padding=self.padding,
                        dilation=self.dilation, groups=self.groups)


class ConvTranspose3d(_Conv):
    """3-D transposed convolution. Shapes: (N, C_in, D, H, W) -> (N, C_out, OD, OH, OW)."""

    def __init__(self, weight: Param, bias: Param | None = None, *,
                 stride: tuple[int, ...] = (1, 1, 1), padding: tuple[int, ...] = (0, 0, 0),
                 padding_out: tuple[int, ...] = (0, 0, 0),
                 dilation: tuple[int, ...] = (1, 1, 1), groups: int = 1) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.padding_out = stride, padding, padding_out
        self.dilation, self.groups = dilation, groups

    def forward(self, x: Tensor) -> Tensor:
        return F.conv_transpose3d(x, self.weight.val, self._b(), stride=self.stride,
                                  padding=self.padding, output_padding=self.padding_out,
                                  dilation=self.dilation, groups=self.groups)
