"""Make `device("webgpu")` build the WebGPU backend (done when `pyrite.webgpu` is imported).

The device is `Fusion` over the raw `WebGpu` backend, named "webgpu", unless PYRITE_FUSION=off
asks for the raw backend (one kernel per op, run at once). `fusion<...>` wraps a raw backend
and leaves an already fused one as it is.
"""

from __future__ import annotations

from typing import Any

from .. import config
from ..backend.base import Backend
from ..device import register_backend, register_decorator, register_indexed_backend
from ..quantization.kernels import register_int_kernels
from .backend import WebGpu


def default(raw: Backend) -> Backend:
    """What the "webgpu" device is over a raw `WebGpu`: fused unless PYRITE_FUSION=off."""
    if not config.fusion_enabled():
        return raw
    from .fusion import Fusion

    return Fusion(raw, name=raw.name)


def create() -> Backend:
    """A ready "webgpu" device: the adapter is requested now, so a missing one fails here."""
    from .backend import WebGpu

    backend = WebGpu()
    backend.kernels  # noqa: B018 - build the runtime now
    return default(backend)


def create_indexed(index: int) -> Backend:
    """The "webgpu:N" device: as "webgpu", on adapter N of wgpu's enumeration (the index
    `pyrite info backends` shows); an index with no adapter fails here, naming it."""
    from ..errors import BackendUnavailable
    from .backend import WebGpu
    from .native import list_adapters

    found = len(list_adapters())
    if index >= found:
        raise BackendUnavailable(f"webgpu:{index}: wgpu lists {found} adapter(s) here, "
                                 f"webgpu:0 to webgpu:{found - 1}; `pyrite info backends` "
                                 f"shows them")
    backend = WebGpu(str(index), name=f"webgpu:{index}")
    backend.kernels  # noqa: B018 - build the runtime now
    return default(backend)


def fusion(inner: Backend) -> Backend:
    """`fusion<webgpu>`: ops recorded lazily and fused into generated kernels."""
    from .fusion import Fusion

    return inner if isinstance(inner, Fusion) else Fusion(inner)


def register() -> None:
    """Register the "webgpu" device and the "fusion" decorator; the adapter is requested when
    the device is first asked for."""
    register_backend("webgpu", create)
    register_indexed_backend("webgpu", create_indexed)
    register_decorator("fusion", fusion)
    register_int_kernels(WebGpu, _int_kernels)


def _int_kernels(device: Backend) -> Any:
    """pyrite.quantization's integer kernels for a webgpu device (webgpu/quantized.py)."""
    from .quantized import create as make

    return make(device)
