"""Make `device("webgpu")` build a `WebGpu` backend (done when `pyrite.webgpu` is imported)."""

from __future__ import annotations

from ..backend.base import Backend
from ..device import register_backend, register_decorator


def create() -> Backend:
    """A ready `WebGpu`: the adapter is requested now, so a missing one fails here."""
    from .backend import WebGpu

    backend = WebGpu()
    backend.kernels  # noqa: B018 - build the runtime now
    return backend


def fusion(inner: Backend) -> Backend:
    """`fusion<webgpu>`: ops recorded lazily and fused into generated kernels."""
    from .fusion import Fusion

    return Fusion(inner)


def register() -> None:
    """Register the "webgpu" device and the "fusion" decorator; the adapter is requested when
    the device is first asked for."""
    register_backend("webgpu", create)
    register_decorator("fusion", fusion)
