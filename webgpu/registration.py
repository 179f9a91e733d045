"""Make `device("webgpu")` build a `WebGpu` backend (done when `pyrite.webgpu` is imported)."""

from __future__ import annotations

from ..backend.base import Backend
from ..device import register_backend


def create() -> Backend:
    """A ready `WebGpu`: the adapter is requested now, so a missing one fails here."""
    from .backend import WebGpu

    backend = WebGpu()
    backend.kernels  # noqa: B018 - build the runtime now
    return backend


def register() -> None:
    """Register the "webgpu" device; its adapter is requested when the device is first asked for."""
    register_backend("webgpu", create)
