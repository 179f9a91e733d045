"""Normalization layers: BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RmsNorm.

Training mode is the backend's, as in Burn: on an autodiff device BatchNorm normalizes with the
batch's statistics and updates its running ones; elsewhere (after `model.valid()`, or on a plain
device) it uses the running statistics. The running mean and variance are params with
`require_grad=False`: saved in records, moved with the module, never trained. Like Burn, the
running variance tracks the biased batch variance (PyTorch tracks the unbiased one).
"""

from __future__ import annotations

from dataclasses import KW_ONLY

from ..backend.base import Backend
from ..errors import ConfigError, ShapeError
from ..module import Config, Module, Param
from ..tensor import Tensor
from .init import Ones, Zeros

Device = Backend | str | None


def _positive(cfg: Config, **values: int) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"{type(cfg).__name__}: {name} must be an int >= 1, got {value!r}")


def _channel_view(t: Tensor, x: Tensor) -> Tensor:
    """A per-channel (C,) tensor shaped to broadcast over x (N, C, ...)."""
    return t.reshape([1, t.shape[0]] + [1] * (x.ndim - 2))


def _check_channels(op: str, x: Tensor, channels: int) -> None:
    if x.ndim < 2 or x.shape[1] != channels:
        raise ShapeError(f"{op}: expects input (N, {channels}, ...), got shape {x.shape}")


# ---- BatchNorm -------------------------------------------------------------------------------
class BatchNormConfig(Config):
    """`BatchNormConfig(16).init(device)`; input (N, C, ...) of any rank >= 2."""

    num_features: int
    _: KW_ONLY
    epsilon: float = 1e-5
    momentum: float = 0.1

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive(self, num_features=self.num_features)
        if not 0.0 <= self.momentum <= 1.0:
            raise ConfigError(f"BatchNormConfig: momentum must be in [0, 1], got "
                              f"{self.momentum}")

    def init(self, device: Device = None) -> BatchNorm:
        shape = (self.num_features,)
        return BatchNorm(Ones().init_param(shape, device=device),
                         Zeros().init_param(shape, device=device),
                         Zeros().init_param(shape, device=device, require_grad=False),
                         Ones().init_param(shape, device=device, require_grad=False),
                         epsilon=self.epsilon, momentum=self.momentum)


class BatchNorm(Module):
    """Normalize each channel over the batch and spatial dims, then scale and shift.

    Shapes: (N, C, ...) -> same.
    """

    def __init__(self, gamma: Param, beta: Param, running_mean: Param, running_var: Param, *,
                 epsilon: float = 1e-5, momentum: float = 0.1) -> None:
        self.gamma, self.beta = gamma, beta
        self.running_mean, self.running_var = running_mean, running_var
        self.num_features = gamma.shape[0]
        self.momentum, self.epsilon = momentum, epsilon

    def forward(self, x: Tensor) -> Tensor:
        _check_channels("BatchNorm", x, self.num_features)
        if x.device.is_autodiff:
            channels = x.swap_dims(0, 1).reshape([self.num_features, -1])
            var, mean = channels.var_mean_bias(1)
            mean, var = mean.reshape([-1]), var.reshape([-1])
            self._update(mean.detach(), var.detach())
        else:
            mean, var = self.running_mean.val, self.running_var.val
        scale = self.gamma.val / (var + self.epsilon).sqrt()
        shift = self.beta.val - mean * scale
        return x * _channel_view(scale, x) + _channel_view(shift, x)

    def _update(self, mean: Tensor, var: Tensor) -> None:
        m = self.momentum
        rm, rv = self.running_mean, self.running_var
        self.running_mean = rm.with_val(rm.val.detach() * (1.0 - m) + mean * m)
        self.running_var = rv.with_val(rv.val.detach() * (1.0 - m) + var * m)


# ---- LayerNorm, RmsNorm ----------------------------------------------------------------------
class LayerNormConfig(Config):
    """`LayerNormConfig(512).init(device)`: normalizes the last dim."""

    d_model: int
    _: KW_ONLY
    epsilon: float = 1e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive(self, d_model=self.d_model)

    def init(self, device: Device = None) -> LayerNorm:
        shape = (self.d_model,)
        return LayerNorm(Ones().init_param(shape, device=device),
                         Zeros().init_param(shape, device=device), epsilon=self.epsilon)


class LayerNorm(Module):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last dim (biased variance).

    Shapes: (..., d_model) -> same.
    """

    def __init__(self, gamma: Param, beta: Param, *, epsilon: float = 1e-5) -> None:
        self.gamma, self.beta = gamma, beta
        self.d_model = gamma.shape[0]
        self.epsilon = epsilon

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 1 or x.shape[-1] != self.d_model:
            raise ShapeError(f"LayerNorm: expects a last dim of {self.d_model}, got shape "
                             f"{x.shape}")
        gamma, beta = self.gamma.val, self.beta.val
        if x.dtype is gamma.dtype is beta.dtype and x.device == gamma.device == beta.device:
            # one module op: a backend may serve it (and its gradient) with faster code
            return x._new(x.device.layer_norm(x.into_primitive(), gamma.into_primitive(),
                                              beta.into_primitive(), self.epsilon))
        var, mean = x.var_mean_bias(-1)
        return (x - mean) / (var + self.epsilon).sqrt() * gamma + beta


class RmsNormConfig(Config):
    """`RmsNormConfig(512).init(device)`: x / rms(x) * gamma over the last dim."""

    d_model: int
    _: KW_ONLY
    epsilon: float = 1e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive(self, d_model=self.d_model)

    def init(self, device: Device = None) -> RmsNorm:
        return RmsNorm(Ones().init_param((self.d_model,), device=device), epsilon=self.epsilon)


class RmsNorm(Module):
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim. Shapes: (..., d_model) -> same."""

    def __init__(self, gamma: Param, *, epsilon: float = 1e-5) -> None:
        self.gamma = gamma
        self.d_model = gamma.shape[0]
        self.epsilon = epsilon

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 1 or x.shape[-1] != self.d_model:
            raise ShapeError(f"RmsNorm: expects a last dim of {self.d_model}, got shape "
                             f"{x.shape}")
        rms = ((x * x).mean_dim(-1) + self.epsilon).sqrt()
        return x / rms * self.gamma.val


# ---- GroupNorm, InstanceNorm -----------------------------------------------------------------
def group_norm(x: Tensor, num_groups: int, gamma: Tensor | None, beta: Tensor | None,
               epsilon: float) -> Tensor:
    """Normalize each sample's channel groups over their channels and positions.

    Shapes: (N, C, ...) -> same; gamma and beta are (C,) or None.
    """
    n, c = x.shape[:2]
    groups = x.reshape([n, num_groups, -1])
    var, mean = groups.var_mean_bias(2)
    out = ((groups - mean) / (var + epsilon).sqrt()).reshape(list(x.shape))
    if gamma is not None:
        out = out * _channel_view(gamma, x)
    if beta is not None:
        out = out + _channel_view(beta, x)
    return out


class GroupNormConfig(Config):
    """`GroupNormConfig(4, 16).init(device)`: 16 channels in 4 groups."""

    num_groups: int
    num_channels: int
    _: KW_ONLY
    epsilon: float = 1e-5
    affine: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive(self, num_groups=self.num_groups, num_channels=self.num_channels)
        if self.num_channels % self.num_groups:
            raise ConfigError(f"GroupNormConfig: num_groups {self.num_groups} must divide "
                              f"num_channels {self.num_channels}")

    def init(self, device: Device = None) -> GroupNorm:
        shape = (self.num_channels,)
        gamma = Ones().init_param(shape, device=device) if self.affine else None
        beta = Zeros().init_param(shape, device=device) if self.affine else None
        return GroupNorm(self.num_groups, self.num_channels, gamma, beta, epsilon=self.epsilon)


class GroupNorm(Module):
    """Group normalization (Wu & He). Shapes: (N, C, ...) -> same."""

    def __init__(self, num_groups: int, num_channels: int, gamma: Param | None = None,
                 beta: Param | None = None, *, epsilon: float = 1e-5) -> None:
        self.num_groups, self.num_channels = num_groups, num_channels
        self.gamma, self.beta = gamma, beta
        self.epsilon = epsilon
        self.affine = gamma is not None

    def forward(self, x: Tensor) -> Tensor:
        _check_channels("GroupNorm", x, self.num_channels)
        return group_norm(x, self.num_groups, None if self.gamma is None else self.gamma.val,
                          None if self.beta is None else self.beta.val, self.epsilon)


class InstanceNormConfig(Config):
    """`InstanceNormConfig(16).init(device)`: each channel of each sample on its own."""

    num_channels: int
    _: KW_ONLY
    epsilon: float = 1e-5
    affine: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive(self, num_channels=self.num_channels)

    def init(self, device: Device = None) -> InstanceNorm:
        shape = (self.num_channels,)
        gamma = Ones().init_param(shape, device=device) if self.affine else None
        beta = Zeros().init_param(shape, device=device) if self.affine else None
        return InstanceNorm(self.num_channels, gamma, beta, epsilon=self.epsilon)


class InstanceNorm(Module):
    """Instance normalization: GroupNorm with one group per channel. Shapes: (N, C, ...)."""

    def __init__(self, num_channels: int, gamma: Param | None = None, beta: Param | None = None,
                 *, epsilon: float = 1e-5) -> None:
        self.num_channels = num_channels
        self.gamma, self.beta = gamma, beta
        self.epsilon = epsilon
        self.affine = gamma is not None

    def forward(self, x: Tensor) -> Tensor:
        _check_channels("InstanceNorm", x, self.num_channels)
        return group_norm(x, self.num_channels, None if self.gamma is None else self.gamma.val,
                          None if self.beta is None else self.beta.val, self.epsilon)
