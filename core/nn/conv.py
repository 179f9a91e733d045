"""Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d and their configs.

Weights are stored as Burn (and PyTorch) store them: (C_out, C_in/groups, *kernel) for
convolutions, (C_in, C_out/groups, *kernel) for transposed convolutions. Params are drawn with
fan_in = C_in/groups * prod(kernel) (C_out/groups * prod(kernel) for transposed ones), so the
default initializer gives PyTorch's default init.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY
from typing import Any

from ..backend.base import Backend
from ..errors import ConfigError
from ..module import Config, Module, Param
from ..tensor import Tensor
from . import functional as F
from .init import DEFAULT_GAIN, Initializer, KaimingUniform

Device = Backend | str | None
#: "valid", "same", an int, one int per dim, or one (before, after) pair per dim
PaddingSpec = str | int | tuple[int, ...] | tuple[tuple[int, int], ...]


def _sizes(cfg: Config, name: str, value: Any, n: int, minimum: int = 1) -> tuple[int, ...]:
    try:
        return F.tuple_of(type(cfg).__name__, name, value, n, minimum=minimum)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def padding_name(padding: PaddingSpec) -> str:
    """Burn's display of a padding setting: Valid, Same or Explicit(...).

    >>> padding_name("valid"), padding_name(0), padding_name(1), padding_name((1, 2))
    ('Valid', 'Valid', 'Explicit(1)', 'Explicit(1, 2)')
    """
    if isinstance(padding, str):
        return padding.capitalize()
    if padding == 0 or (isinstance(padding, tuple) and not any(padding)):
        return "Valid"
    if isinstance(padding, int):
        return f"Explicit({padding})"
    return f"Explicit({', '.join(str(p) for p in padding)})"


class _ConvConfig(Config):
    """What the four convolution configs share: sizes, options, validation."""

    channels_in: int
    channels_out: int
    kernel_size: int | tuple[int, ...]
    _: KW_ONLY
    stride: int | tuple[int, ...] = 1
    dilation: int | tuple[int, ...] = 1
    groups: int = 1
    bias: bool = True
    initializer: Initializer = KaimingUniform(gain=DEFAULT_GAIN, fan_out_only=False)

    dims = 2
    transposed = False

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        for field in ("channels_in", "channels_out", "groups"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}: {field} must be an int >= 1, got {value!r}")
        if self.channels_in % self.groups or self.channels_out % self.groups:
            raise ConfigError(f"{name}: groups={self.groups} must divide channels_in "
                              f"({self.channels_in}) and channels_out ({self.channels_out})")
        _sizes(self, "kernel_size", self.kernel_size, self.dims)
        _sizes(self, "stride", self.stride, self.dims)
        _sizes(self, "dilation", self.dilation, self.dims)

    def _params(self, device: Device) -> tuple[Param, Param | None]:
        kernel = _sizes(self, "kernel_size", self.kernel_size, self.dims)
        cin_g, cout_g = self.channels_in // self.groups, self.channels_out // self.groups
        taps = math.prod(kernel)
        if self.transposed:
            shape = (self.channels_in, cout_g, *kernel)
            fan_in, fan_out = cout_g * taps, cin_g * taps
        else:
            shape = (self.channels_out, cin_g, *kernel)
            fan_in, fan_out = cin_g * taps, cout_g * taps
        init = self.initializer
        weight = init.init_param(shape, fan_in=fan_in, fan_out=fan_out, device=device)
        bias = init.init_param((self.channels_out,), fan_in=fan_in, fan_out=fan_out,
                               device=device) if self.bias else None
        return weight, bias


class Conv2dConfig(_ConvConfig):
    """`Conv2dConfig(1, 8, 3).init(device)`: 1 -> 8 channels, 3x3 kernel, no padding.

    padding: "valid" (default), "same" (stride 1), an int, (ph, pw) or
    ((top, bottom), (left, right)).
    """

    _: KW_ONLY
    padding: PaddingSpec = "valid"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_padding(self, self.padding)

    def init(self, device: Device = None) -> Conv2d:
        weight, bias = self._params(device)
        return Conv2d(weight, bias, stride=_sizes(self, "stride", self.stride, 2),
                      padding=self.padding, dilation=_sizes(self, "dilation", self.dilation, 2),
                      groups=self.groups)


class Conv1dConfig(_ConvConfig):
    """`Conv1dConfig(16, 32, 5, padding="same").init(device)`; input (N, C, L).

    padding: "valid" (default), "same" (stride 1), an int, or a (before, after) pair.
    """

    _: KW_ONLY
    padding: PaddingSpec = "valid"
    dims = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_padding(self, self.padding)

    def init(self, device: Device = None) -> Conv1d:
        weight, bias = self._params(device)
        return Conv1d(weight, bias, stride=_sizes(self, "stride", self.stride, 1)[0],
                      padding=self.padding,
                      dilation=_sizes(self, "dilation", self.dilation, 1)[0], groups=self.groups)


class ConvTranspose2dConfig(_ConvConfig):
    """`ConvTranspose2dConfig(16, 8, 3, stride=2, padding=1, padding_out=1)`; doubles H, W."""

    _: KW_ONLY
    padding: int | tuple[int, ...] = 0
    padding_out: int | tuple[int, ...] = 0
    transposed = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _sizes(self, "padding", self.padding, self.dims, minimum=0)
        _sizes(self, "padding_out", self.padding_out, self.dims, minimum=0)

    def init(self, device: Device = None) -> ConvTranspose2d:
        weight, bias = self._params(device)
        return ConvTranspose2d(weight, bias, stride=_sizes(self, "stride", self.stride, 2),
                               padding=_sizes(self, "padding", self.padding, 2, 0),
                               padding_out=_sizes(self, "padding_out", self.padding_out, 2, 0),
                               dilation=_sizes(self, "dilation", self.dilation, 2),
                               groups=self.groups)


class ConvTranspose1dConfig(_ConvConfig):
    """`ConvTranspose1dConfig(16, 8, 4, stride=2, padding=1)`; input (N, C, L)."""

    _: KW_ONLY
    padding: int | tuple[int, ...] = 0
    padding_out: int | tuple[int, ...] = 0
    dims = 1
    transposed = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _sizes(self, "padding", self.padding, 1, minimum=0)
        _sizes(self, "padding_out", self.padding_out, 1, minimum=0)

    def init(self, device: Device = None) -> ConvTranspose1d:
        weight, bias = self._params(device)
        return ConvTranspose1d(weight, bias, stride=_sizes(self, "stride", self.stride, 1)[0],
                               padding=_sizes(self, "padding", self.padding, 1, 0)[0],
                               padding_out=_sizes(self, "padding_out", self.padding_out, 1, 0)[0],
                               dilation=_sizes(self, "dilation", self.dilation, 1)[0],
                               groups=self.groups)


def _check_padding(cfg: _ConvConfig, padding: PaddingSpec) -> None:
    kernel = _sizes(cfg, "kernel_size", cfg.kernel_size, cfg.dims)
    stride = _sizes(cfg, "stride", cfg.stride, cfg.dims)
    dilation = _sizes(cfg, "dilation", cfg.dilation, cfg.dims)
    try:
        F.resolve_padding(type(cfg).__name__, F.pairs_1d(padding, cfg.dims), kernel, dilation,
                          stride)
    except ValueError as err:
        raise ConfigError(str(err)) from None


class _Conv(Module):
    weight: Param
    bias: Param | None
    stride: Any
    padding: Any
    dilation: Any
    groups: int

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stride": self.stride, "kernel_size": self.kernel_size,
                               "dilation": self.dilation, "groups": self.groups}
        padding = self.padding
        out["padding"] = padding_name(padding) if not isinstance(padding, tuple) or not \
            any(isinstance(p, tuple) for p in padding) else padding
        if hasattr(self, "padding_out"):
            out["padding_out"] = self.padding_out
        return out

    @property
    def kernel_size(self) -> tuple[int, ...]:
        return tuple(self.weight.shape[2:])

    def _b(self) -> Tensor | None:
        return None if self.bias is None else self.bias.val


class Conv2d(_Conv):
    """2-D convolution. Shapes: (N, C_in, H, W) -> (N, C_out, OH, OW)."""

    def __init__(self, weight: Param, bias: Param | None = None, *,
                 stride: tuple[int, ...] = (1, 1), padding: PaddingSpec = "valid",
                 dilation: tuple[int, ...] = (1, 1), groups: int = 1) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, x: Tensor, activation: str | None = None) -> Tensor:
        """The convolution; `activation="relu"` applies ReLU as part of it (F.conv2d)."""
        return F.conv2d(x, self.weight.val, self._b(), stride=self.stride, padding=self.padding,
                        dilation=self.dilation, groups=self.groups, activation=activation)


class Conv1d(_Conv):
    """1-D convolution. Shapes: (N, C_in, L) -> (N, C_out, OL)."""

    def __init__(self, weight: Param, bias: Param | None = None, *, stride: int = 1,
                 padding: PaddingSpec = "valid", dilation: int = 1, groups: int = 1) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, x: Tensor) -> Tensor:
        return F.conv1d(x, self.weight.val, self._b(), stride=self.stride,
                        padding=self.padding, dilation=self.dilation,
                        groups=self.groups)


class ConvTranspose2d(_Conv):
    """2-D transposed convolution. Shapes: (N, C_in, H, W) -> (N, C_out, OH, OW)."""

    def __init__(self, weight: Param, bias: Param | None = None, *,
                 stride: tuple[int, ...] = (1, 1), padding: tuple[int, ...] = (0, 0),
                 padding_out: tuple[int, ...] = (0, 0), dilation: tuple[int, ...] = (1, 1),
                 groups: int = 1) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.padding_out = stride, padding, padding_out
        self.dilation, self.groups = dilation, groups

    def forward(self, x: Tensor) -> Tensor:
        return F.conv_transpose2d(x, self.weight.val, self._b(), stride=self.stride,
                                  padding=self.padding, output_padding=self.padding_out,
                                  dilation=self.dilation, groups=self.groups)


class ConvTranspose1d(_Conv):
    """1-D transposed convolution. Shapes: (N, C_in, L) -> (N, C_out, OL)."""

    def __init__(self, weight: Param, bias: Param | None = None, *, stride: int = 1,
                 padding: int = 0, padding_out: int = 0, dilation: int = 1,
                 groups: int = 1) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.padding_out = stride, padding, padding_out
        self.dilation, self.groups = dilation, groups

    def forward(self, x: Tensor) -> Tensor:
        return F.conv_transpose1d(x, self.weight.val, self._b(), stride=self.stride,
                                  padding=self.padding, output_padding=self.padding_out,
                                  dilation=self.dilation, groups=self.groups)
