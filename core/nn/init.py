"""Initializers: how a layer's params get their first values (Burn's `Initializer`).

Each is a Config, so a layer config that names one saves it in its JSON:
`{"initializer": {"KaimingUniform": {"gain": 0.577..., "fan_out_only": false}}}`.
`init(shape, fan_in=, fan_out=, device=)` draws the tensor; `init_param(...)` wraps it in a Param.

| initializer                    | values                                                   |
|--------------------------------|----------------------------------------------------------|
| `Constant(value)`, `Ones`, `Zeros` | that value                                           |
| `Uniform(min, max)`            | U(min, max)                                              |
| `Normal(mean, std)`            | N(mean, std)                                             |
| `KaimingUniform(gain, fan_out_only)` | U(-a, a), a = gain * sqrt(3 / fan)                |
| `KaimingNormal(gain, fan_out_only)`  | N(0, gain / sqrt(fan))                             |
| `XavierUniform(gain)`          | U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))        |
| `XavierNormal(gain)`           | N(0, gain * sqrt(2 / (fan_in + fan_out)))                |

`fan` is fan_in, or fan_out with `fan_out_only`. Burn's layers default to
`KaimingUniform(gain=1/sqrt(3), fan_out_only=False)`, which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
PyTorch's default for Linear and Conv; that is also the default gain here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY

from ..backend.base import Backend
from ..creation import full, random, uninitialized
from ..distribution import Normal as NormalDist
from ..distribution import Uniform as UniformDist
from ..dtype import DType
from ..errors import ConfigError
from ..module import Config, Param
from ..module.deferred import init_skipped
from ..tensor import Tensor

Device = Backend | str | None

#: Burn's default gain for Linear and Conv layers: KaimingUniform then matches PyTorch's default.
DEFAULT_GAIN = 1.0 / math.sqrt(3.0)


class Initializer(Config):
    """Base of the initializers; `init` draws a tensor of `shape`."""

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        raise NotImplementedError

    def init_param(self, shape: Sequence[int], *, fan_in: int | None = None,
                   fan_out: int | None = None, device: Device = None,
                   dtype: DType | str | None = None, require_grad: bool = True) -> Param:
        """`init(...)` as a Param; inside `pyrite.module.init_from_record`'s build, a Param of
        undefined values instead (nothing drawn: the record overwrites it)."""
        if init_skipped():
            return Param(uninitialized(tuple(shape), device=device, dtype=dtype),
                         require_grad=require_grad)
        return Param(self.init(shape, fan_in=fan_in, fan_out=fan_out, device=device,
                               dtype=dtype), require_grad=require_grad)


def _fan(name: str, fan: int | None, which: str) -> int:
    if fan is None or fan <= 0:
        raise ConfigError(f"{name}: needs {which} (> 0), got {fan!r}; layers pass it, direct "
                          f"callers give {which}=...")
    return fan


class Constant(Initializer):
    """Every value `value`."""

    value: float

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        return full(tuple(shape), float(self.value), device=device, dtype=dtype)


class Ones(Constant):
    """Every value 1."""

    value: float = 1.0


class Zeros(Constant):
    """Every value 0."""

    value: float = 0.0


class Uniform(Initializer):
    """U(min, max)."""

    _: KW_ONLY
    min: float = 0.0
    max: float = 1.0

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        return random(tuple(shape), UniformDist(self.min, self.max), device=device, dtype=dtype)


class Normal(Initializer):
    """N(mean, std)."""

    _: KW_ONLY
    mean: float = 0.0
    std: float = 1.0

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        return random(tuple(shape), NormalDist(self.mean, self.std), device=device, dtype=dtype)


class KaimingUniform(Initializer):
    """U(-a, a) with a = gain * sqrt(3 / fan) (He et al.)."""

    _: KW_ONLY
    gain: float = DEFAULT_GAIN
    fan_out_only: bool = False

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        fan = _fan("KaimingUniform", fan_out if self.fan_out_only else fan_in,
                   "fan_out" if self.fan_out_only else "fan_in")
        a = self.gain * math.sqrt(3.0 / fan)
        return random(tuple(shape), UniformDist(-a, a), device=device, dtype=dtype)


class KaimingNormal(Initializer):
    """N(0, gain / sqrt(fan)) (He et al.)."""

    _: KW_ONLY
    gain: float = DEFAULT_GAIN
    fan_out_only: bool = False

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        fan = _fan("KaimingNormal", fan_out if self.fan_out_only else fan_in,
                   "fan_out" if self.fan_out_only else "fan_in")
        return random(tuple(shape), NormalDist(0.0, self.gain / math.sqrt(fan)), device=device,
                      dtype=dtype)


class XavierUniform(Initializer):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""

    _: KW_ONLY
    gain: float = 1.0

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        total = _fan("XavierUniform", fan_in, "fan_in") + _fan("XavierUniform", fan_out,
                                                                "fan_out")
        a = self.gain * math.sqrt(6.0 / total)
        return random(tuple(shape), UniformDist(-a, a), device=device, dtype=dtype)


class XavierNormal(Initializer):
    """N(0, gain * sqrt(2 / (fan_in + fan_out))) (Glorot & Bengio)."""

    _: KW_ONLY
    gain: float = 1.0

    def init(self, shape: Sequence[int], *, fan_in: int | None = None,
             fan_out: int | None = None, device: Device = None,
             dtype: DType | str | None = None) -> Tensor:
        total = _fan("XavierNormal", fan_in, "fan_in") + _fan("XavierNormal", fan_out,
                                                               "fan_out")
        std = self.gain * math.sqrt(2.0 / total)
        return random(tuple(shape), NormalDist(0.0, std), device=device, dtype=dtype)


__all__ = ["DEFAULT_GAIN", "Constant", "Initializer", "KaimingNormal", "KaimingUniform",
           "Normal", "Ones", "Uniform", "XavierNormal", "XavierUniform", "Zeros"]
