"""Activation layers: modules around `pyrite.activation`, so models can hold them as fields.

Relu, Gelu, Sigmoid and Tanh have no options; LeakyRelu, HardSigmoid and Prelu have configs (Prelu
learns its slope); SwiGlu holds two Linear layers.
"""

from __future__ import annotations

from dataclasses import KW_ONLY

from .. import activation as act
from ..backend.base import Backend
from ..errors import ConfigError
from ..module import Config, Module, Param
from ..tensor import Tensor
from .init import DEFAULT_GAIN, Constant, Initializer, KaimingUniform
from .linear import Linear, LinearConfig

Device = Backend | str | None


class Relu(Module):
    """max(x, 0)."""

    def forward(self, x: Tensor) -> Tensor:
        return act.relu(x)


class Gelu(Module):
    """x * Phi(x), the exact erf form."""

    def forward(self, x: Tensor) -> Tensor:
        return act.gelu(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x: Tensor) -> Tensor:
        return act.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return act.tanh(x)


class LeakyReluConfig(Config):
    """`LeakyReluConfig(negative_slope=0.01).init()`."""

    _: KW_ONLY
    negative_slope: float = 0.01

    def init(self, device: Device = None) -> LeakyRelu:
        return LeakyRelu(negative_slope=self.negative_slope)


class LeakyRelu(Module):
    """x for x > 0, negative_slope * x otherwise."""

    def __init__(self, *, negative_slope: float = 0.01) -> None:
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return act.leaky_relu(x, self.negative_slope)


class HardSigmoidConfig(Config):
    """`HardSigmoidConfig().init()`: clamp(alpha * x + beta, 0, 1), ONNX's defaults."""

    _: KW_ONLY
    alpha: float = 0.2
    beta: float = 0.5

    def init(self, device: Device = None) -> HardSigmoid:
        return HardSigmoid(alpha=self.alpha, beta=self.beta)


class HardSigmoid(Module):
    def __init__(self, *, alpha: float = 0.2, beta: float = 0.5) -> None:
        self.alpha, self.beta = alpha, beta

    def forward(self, x: Tensor) -> Tensor:
        return act.hard_sigmoid(x, self.alpha, self.beta)


class PreluConfig(Config):
    """`PreluConfig(num_parameters=16).init(device)`: one learned slope per channel (dim 1),
    or one for all with num_parameters=1; slopes start at `alpha` (0.25, as Burn)."""

    _: KW_ONLY
    num_parameters: int = 1
    alpha: float = 0.25

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_parameters < 1:
            raise ConfigError(f"PreluConfig: num_parameters must be >= 1, got "
                              f"{self.num_parameters}")

    def init(self, device: Device = None) -> Prelu:
        return Prelu(Constant(self.alpha).init_param((self.num_parameters,), device=device))


class Prelu(Module):
    """x for x > 0, alpha * x otherwise, alpha learned. Shapes: (N, C, ...) -> same."""

    def __init__(self, alpha: Param) -> None:
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return act.prelu(x, self.alpha.val)


class SwiGluConfig(Config):
    """`SwiGluConfig(512, 2048).init(device)`: silu(x W1) * (x W2); no bias by default, as Burn."""

    d_input: int
    d_output: int
    _: KW_ONLY
    bias: bool = False
    initializer: Initializer = KaimingUniform(gain=DEFAULT_GAIN, fan_out_only=False)

    def init(self, device: Device = None) -> SwiGlu:
        cfg = LinearConfig(self.d_input, self.d_output, bias=self.bias,
                           initializer=self.initializer)
        return SwiGlu(cfg.init(device), cfg.init(device))


class SwiGlu(Module):
    """silu(linear_inner(x)) * linear_outer(x). Shapes: (..., d_input) -> (..., d_output)."""

    def __init__(self, linear_inner: Linear, linear_outer: Linear) -> None:
        self.linear_inner, self.linear_outer = linear_inner, linear_outer

    def forward(self, x: Tensor) -> Tensor:
        return act.silu(self.linear_inner.forward(x)) * self.linear_outer.forward(x)
