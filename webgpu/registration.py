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
    `pyrite info backends` shows), or on the adapter PYRITE_WEBGPU_DEVICES gives N (several
    devices on one adapter); an index with no adapter fails here, naming it."""
    from ..errors import BackendUnavailable
    from .backend import WebGpu
    from .native import list_adapters

    found = len(list_adapters())
    adapter = _adapter_of(index, config.webgpu_devices())
    if adapter >= found:
        told = f" (PYRITE_WEBGPU_DEVICES gives it adapter {adapter})" if adapter != index else ""
        raise BackendUnavailable(f"webgpu:{index}{told}: wgpu lists {found} adapter(s) here, "
                                 f"webgpu:0 to webgpu:{found - 1}; `pyrite info backends` "
                                 f"shows them")
    backend = WebGpu(str(adapter), name=f"webgpu:{index}")
    backend.kernels  # noqa: B018 - build the runtime now
    return default(backend)


def _adapter_of(index: int, setting: str) -> int:
    """The adapter index of "webgpu:`index`" under PYRITE_WEBGPU_DEVICES=`setting`.

    >>> _adapter_of(1, "0,0"), _adapter_of(1, "")
    (0, 1)
    """
    from ..errors import ConfigError

    if not setting:
        return index
    tokens = [t.strip() for t in setting.split(",")]
    if not all(t.isdigit() for t in tokens):
        raise ConfigError(f"PYRITE_WEBGPU_DEVICES={setting!r}: give adapter indices, "
                          f"comma-separated, one per webgpu:N device (\"0,0\")")
    if index >= len(tokens):
        raise ConfigError(f"webgpu:{index}: PYRITE_WEBGPU_DEVICES={setting!r} names adapters "
                          f"for webgpu:0 to webgpu:{len(tokens) - 1} only; add one or unset it")
    return int(tokens[index])


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
