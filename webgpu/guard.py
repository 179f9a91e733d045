"""`GuardedRuntime`: a `Runtime` that turns device failures into pyrite errors.

wgpu-py (and the browser's WebGPU) report a lost device, an exhausted device and a failed
submit or readback as their own exceptions, or as validation errors naming a lost parent
device. The backend builds its kernels on this wrapper, so whatever the runtime (native or
browser) every such failure reaches the user as `DeviceLostError` or `DeviceMemoryError`, and
once the device is known lost every later call fails at once with the same error instead of
reaching the driver again (where it could crash or wait forever). It owns only that
translation; the calls themselves are the wrapped runtime's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from ..errors import DeviceLostError, DeviceMemoryError, PyriteError
from .runtime import (
    AdapterInfo,
    BindGroup,
    Bindings,
    Buffer,
    Dispatch,
    Limits,
    Pipeline,
    Runtime,
    Write,
)
from .unchecked_module import ALL_CHECKS

T = TypeVar("T")
_LOST_WORDS = ("lost", "destroyed", "device is invalid", "instancedropped")
_OOM_WORDS = ("out of memory", "outofmemory", "oom")
#: calls after which the device's state is unknown when they fail: they submit or wait on work
_SUBMITTING = frozenset({"flush", "sync", "read_buffer", "read_buffer_async", "write_buffer",
                         "replay"})
_RECOVER = ("tensors on it are gone. Call reset() on the backend (or build a new WebGpu()) and "
            "reload what you need from saved records (Module.load_file)")


def classify(op: str, exc: BaseException) -> PyriteError:
    """The pyrite error for a runtime call `op` that raised `exc`."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    low = message.lower()
    if isinstance(exc, MemoryError) or any(w in low for w in _OOM_WORDS):
        return DeviceMemoryError(f"webgpu: {op}: the device is out of memory ({message}); "
                                 f"free tensors or use smaller batches")
    if any(w in low for w in _LOST_WORDS) or op in _SUBMITTING:
        return DeviceLostError(f"webgpu: {op}: the device was lost or failed ({message}); "
                               f"{_RECOVER}")
    return PyriteError(f"webgpu: {op} failed: {message}")


class GuardedRuntime:
    """Wraps a runtime; `lost` holds the first loss seen (then every call raises it again)."""

    def __init__(self, inner: Runtime) -> None:
        self.inner = inner
        self.lost: DeviceLostError | None = None

    def _call(self, op: str, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        if self.lost is not None:
            raise DeviceLostError(str(self.lost))
        try:
            return fn(*args, **kwargs)
        except PyriteError:
            raise  # already ours (a WGSL compile error names its kernel)
        except Exception as exc:  # noqa: BLE001 - every driver failure is translated
            err = classify(op, exc)
            if isinstance(err, DeviceLostError):
                self.lost = err
            raise err from exc

    @property
    def adapter(self) -> AdapterInfo:
        return self.inner.adapter

    @property
    def limits(self) -> Limits:
        return self.inner.limits

    @property
    def features(self) -> frozenset[str]:
        return self.inner.features

    def create_buffer(self, size: int) -> Buffer:
        return self._call("create_buffer", self.inner.create_buffer, size)

    def create_buffer_with_data(self, data: bytes, *, uniform: bool = False) -> Buffer:
        return self._call("create_buffer", self.inner.create_buffer_with_data, data,
                          uniform=uniform)

    def destroy_buffer(self, buffer: Buffer) -> None:
        if self.lost is None:  # a lost device's buffers are gone already
            self._call("destroy_buffer", self.inner.destroy_buffer, buffer)

    def write_buffer(self, buffer: Buffer, offset: int, data: bytes) -> None:
        self._call("write_buffer", self.inner.write_buffer, buffer, offset, data)

    def read_buffer(self, buffer: Buffer, offset: int, size: int) -> bytes:
        return self._call("read_buffer", self.inner.read_buffer, buffer, offset, size)

    async def read_buffer_async(self, buffer: Buffer, offset: int, size: int) -> bytes:
        if self.lost is not None:
            raise DeviceLostError(str(self.lost))
        try:
            return await self.inner.read_buffer_async(buffer, offset, size)
        except PyriteError:
            raise
        except Exception as exc:  # noqa: BLE001
            err = classify("read_buffer_async", exc)
            if isinstance(err, DeviceLostError):
                self.lost = err
            raise err from exc

    def pipeline(self, key: Hashable, source: str, entry_point: str = "main",
                 checks: int = ALL_CHECKS) -> Pipeline:
        return self._call("pipeline", self.inner.pipeline, key, source, entry_point, checks)

    def bind_group(self, pipeline: Pipeline, bindings: Bindings) -> BindGroup:
        return self._call("bind_group", self.inner.bind_group, pipeline, bindings)

    def dispatch(self, pipeline: Pipeline, bind_group: BindGroup,
                 workgroups: tuple[int, int, int], cost: float = 0.0) -> None:
        self._call("dispatch", self.inner.dispatch, pipeline, bind_group, workgroups, cost)

    def copy_buffer(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int,
                    size: int) -> None:
        self._call("copy_buffer", self.inner.copy_buffer, src, src_offset, dst, dst_offset,
                   size)

    def replay(self, dispatches: Sequence[Dispatch], writes: Sequence[Write] = ()) -> None:
        self._call("replay", self.inner.replay, dispatches, writes)

    def flush(self) -> None:
        self._call("flush", self.inner.flush)

    def sync(self) -> None:
        self._call("sync", self.inner.sync)
