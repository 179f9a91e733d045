"""Integer kernels per backend: who provides them and what they must do.

A backend family offers its integer kernels by registering an `IntKernels` factory for its
raw backend class (the numpy backend here, webgpu from `pyrite.webgpu`), so core never imports
a GPU module. `int_kernels(device)` finds the provider for a device; decorated devices reach
their raw backend's provider, except under Autodiff, whose products stay differentiable float
products (quantized weights are constants, but the activations' gradient must flow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..backend.base import Backend, layers
from ..tensor import Tensor
from .tensor import QuantizedTensor


class IntKernels(Protocol):
    """What a backend family provides for quantized products."""

    #: shown in benchmarks: the integer dot product in use ("dot4I8Packed", "unpacked", ...)
    dot_product: str

    def int8_matmul(self, lhs: Tensor, rhs: QuantizedTensor) -> Tensor:
        """lhs (m, k) Int values in [-128, 127] @ rhs's (k, n) values -> (m, n) Int (i32)
        accumulators, exact."""
        ...

    def weight_only_matmul(self, x: Tensor, w: QuantizedTensor) -> Tensor | None:
        """x (m, k) Float @ w (k, n) dequantized, without materialising the float weight;
        None where this provider has no such kernel (the caller dequantizes)."""
        ...


_PROVIDERS: dict[type, Callable[[Backend], IntKernels]] = {}


def register_int_kernels(raw: type, factory: Callable[[Backend], IntKernels]) -> None:
    """Make devices built on the raw backend class `raw` use `factory(device)`'s kernels."""
    _PROVIDERS[raw] = factory


def int_kernels(device: Backend) -> IntKernels | None:
    """The integer kernels for `device`, or None (an autodiff device, an unknown backend)."""
    if is_autodiff(device):
        return None
    found = layers(device)
    from ..backend.numpy import NumpyBackend
    if isinstance(found[-1], NumpyBackend):
        from .numpy_kernels import NumpyIntKernels
        return NumpyIntKernels()
    factory = _PROVIDERS.get(type(found[-1]))
    return None if factory is None else factory(device)


def is_autodiff(device: Backend) -> bool:
    """Whether `device` records gradients (an Autodiff layer in its stack)."""
    from ..backend.autodiff import Autodiff
    return any(isinstance(layer, Autodiff) for layer in layers(device))
