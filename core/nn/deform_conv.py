"""DeformConv2d and its config (Burn's): a 2-D convolution whose taps sample the input at
learned offsets, optionally scaled by a mask (deformable convolution v1 and v2).

The weight is stored as a convolution's, (C_out, C_in/weight_groups, kh, kw); the op is the
composite in `pyrite.backend.deform_ops`, validated by `pyrite.nn.functional.deform_conv2d`.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY
from typing import Any

from ..errors import ConfigError
from ..module import Config, Module, Param
from ..tensor import Tensor
from . import functional as F
from .conv import Device, PaddingSpec, _sizes, padding_name
from .init import DEFAULT_GAIN, Initializer, KaimingUniform


class DeformConv2dConfig(Config):
    """`DeformConv2dConfig(channels_in, channels_out, kernel_size).init(device)`.

    Burn's fields and defaults (Burn's `channels: [in, out]` is two sizes here, as in
    `Conv2dConfig`): stride 1, dilation 1, weight_groups 1, offset_groups 1, padding "valid"
    (or "same" at stride 1, an int, (ph, pw) or ((top, bottom), (left, right))), bias on,
    KaimingUniform(1/sqrt(3)) init with fan_in = C_in/weight_groups * kh * kw.

    >>> layer = DeformConv2dConfig(2, 4, 3, padding=1).init()
    >>> layer.weight.shape
    (4, 2, 3, 3)
    """

    channels_in: int
    channels_out: int
    kernel_size: int | tuple[int, ...]
    _: KW_ONLY
    stride: int | tuple[int, ...] = 1
    dilation: int | tuple[int, ...] = 1
    weight_groups: int = 1
    offset_groups: int = 1
    padding: PaddingSpec = "valid"
    bias: bool = True
    initializer: Initializer = KaimingUniform(gain=DEFAULT_GAIN, fan_out_only=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        for field in ("channels_in", "channels_out", "weight_groups", "offset_groups"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name}: {field} must be an int >= 1, got {value!r}")
        wg = self.weight_groups
        if self.channels_in % wg or self.channels_out % wg:
            raise ConfigError(f"{name}: weight_groups={wg} must divide channels_in "
                              f"({self.channels_in}) and channels_out ({self.channels_out})")
        if self.channels_in % self.offset_groups:
            raise ConfigError(f"{name}: offset_groups={self.offset_groups} must divide "
                              f"channels_in ({self.channels_in})")
        kernel = _sizes(self, "kernel_size", self.kernel_size, 2)
        stride = _sizes(self, "stride", self.stride, 2)
        dilation = _sizes(self, "dilation", self.dilation, 2)
        try:
            F.resolve_padding(name, self.padding, kernel, dilation, stride)
        except ValueError as err:
            raise ConfigError(str(err)) from None

    def init(self, device: Device = None) -> DeformConv2d:
        kernel = _sizes(self, "kernel_size", self.kernel_size, 2)
        taps = math.prod(kernel)
        wg = self.weight_groups
        fan_in = self.channels_in // wg * taps
        fan_out = self.channels_out // wg * taps
        init = self.initializer
        weight = init.init_param((self.channels_out, self.channels_in // wg, *kernel),
                                 fan_in=fan_in, fan_out=fan_out, device=device)
        bias = init.init_param((self.channels_out,), fan_in=fan_in, fan_out=fan_out,
                               device=device) if self.bias else None
        return DeformConv2d(weight, bias, stride=_sizes(self, "stride", self.stride, 2),
                            padding=self.padding,
                            dilation=_sizes(self, "dilation", self.dilation, 2),
                            weight_groups=wg, offset_groups=self.offset_groups)


class DeformConv2d(Module):
    """Deformable 2-D convolution. Shapes: input (N, C_in, H, W), offset
    (N, 2*offset_groups*kh*kw, OH, OW) as (dy, dx) per tap, mask (N, offset_groups*kh*kw,
    OH, OW) or None -> (N, C_out, OH, OW)."""

    def __init__(self, weight: Param, bias: Param | None = None, *,
                 stride: tuple[int, ...] = (1, 1), padding: PaddingSpec = "valid",
                 dilation: tuple[int, ...] = (1, 1), weight_groups: int = 1,
                 offset_groups: int = 1) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.weight_groups, self.offset_groups = weight_groups, offset_groups

    @property
    def kernel_size(self) -> tuple[int, ...]:
        return tuple(self.weight.shape[2:])

    def settings(self) -> dict[str, Any]:
        padding = self.padding
        nested = isinstance(padding, tuple) and any(isinstance(p, tuple) for p in padding)
        return {"stride": self.stride, "kernel_size": self.kernel_size,
                "dilation": self.dilation, "weight_groups": self.weight_groups,
                "offset_groups": self.offset_groups,
                "padding": padding if nested else padding_name(padding)}

    def forward(self, x: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        return F.deform_conv2d(x, offset, self.weight.val,
                               None if self.bias is None else self.bias.val, mask=mask,
                               stride=self.stride, padding=self.padding,
                               dilation=self.dilation, weight_groups=self.weight_groups,
                               offset_groups=self.offset_groups)
