"""The native runtime's blocking readback, the step every prediction and every logged loss
waits on: kept staging buffers and a map waited for on the calling thread.

wgpu-py's `queue.read_buffer` makes a staging buffer, an encoder and a submit of its own for
every read, then waits for the map through its poll thread (two thread hand-offs). A
`StagingReader` instead keeps one mappable buffer per power-of-two size (`KEPT` of them), lets
the runtime record the copy into its pending batch (so the work before it and the copy go in
one submit; reads of `KEEP_BELOW` bytes or more get a buffer of their own), and maps it
through wgpu-native's C functions, polling the device on the thread that reads (without
blocking at first: `SPIN_S`). The mapped bytes are copied out and the buffer unmapped before
`read` returns, so a kept buffer is never mapped between reads.

It needs the C functions wgpu-py's cffi library exposes (`available()`); without them the
runtime keeps wgpu-py's `queue.read_buffer`. This module holds no wgpu-py call the runtime
makes otherwise (native.py owns those), only the map and its wait.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

KEPT = 8  # staging buffers kept (least recently used destroyed first)
#: seconds a read polls the device without blocking before it blocks (see `StagingReader._wait`)
SPIN_S = 2e-3
KEEP_BELOW = 64 << 20  # bytes: a larger read gets a staging buffer of its own, destroyed after
_SMALLEST = 256  # bytes: a staging buffer is at least this, and a power of two


def _c_library() -> tuple[Any, Any] | None:
    try:
        from wgpu.backends.wgpu_native import _ffi  # type: ignore[import-untyped]
        lib = _ffi.lib
        needed = (lib.wgpuBufferMapAsync, lib.wgpuBufferGetConstMappedRange,
                  lib.wgpuBufferUnmap, lib.wgpuDevicePoll)
    except (ImportError, AttributeError):
        return None
    return (_ffi.ffi, lib) if all(needed) else None


def available() -> bool:
    """Whether this wgpu-py exposes the C functions a `StagingReader` calls."""
    return _c_library() is not None


class StagingReader:
    """Reads buffers back through kept staging buffers (see the module doc).

    `create_staging(size)` makes a MAP_READ | COPY_DST buffer (a wgpu-py object);
    `copy_and_submit(src, offset, staging, size)` records the copy into the runtime's pending
    batch and submits it; `device` is the wgpu-py device (its handle is polled)."""

    def __init__(self, device: Any, create_staging: Callable[[int], Any],
                 copy_and_submit: Callable[[Any, int, Any, int], None]) -> None:
        found = _c_library()
        if found is None:
            raise RuntimeError("StagingReader: this wgpu-py does not expose wgpu-native's "
                               "map functions")
        self._ffi, self._lib = found
        self._device = device
        self._create = create_staging
        self._copy = copy_and_submit
        self._kept: OrderedDict[int, Any] = OrderedDict()  # size -> staging buffer
        self._status: list[int] = []
        ffi = self._ffi

        def mapped(status: int, message: Any, _u1: Any, _u2: Any) -> None:
            self._status.append(int(status))

        signature = "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)"
        self._callback = ffi.callback(signature)(mapped)  # kept alive as long as the reader
        self._info = ffi.new("WGPUBufferMapCallbackInfo *")
        self._info.mode = self._lib.WGPUCallbackMode_AllowProcessEvents
        self._info.callback = self._callback

    def _staging(self, size: int) -> Any:
        capacity = max(_SMALLEST, 1 << (size - 1).bit_length())
        found = self._kept.get(capacity)
        if found is None:
            found = self._kept[capacity] = self._create(capacity)
            if len(self._kept) > KEPT:
                _, old = self._kept.popitem(last=False)
                old.destroy()
        else:
            self._kept.move_to_end(capacity)
        return found

    def read(self, buffer: Any, offset: int, size: int) -> bytes:
        """`size` bytes of `buffer` from `offset` (multiples of 4), once the work recorded
        before has run."""
        if size >= KEEP_BELOW:
            staging = self._create(size)
            try:
                return self._read(buffer, offset, staging, size)
            finally:
                staging.destroy()
        return self._read(buffer, offset, self._staging(size), size)

    def _read(self, buffer: Any, offset: int, staging: Any, size: int) -> bytes:
        self._copy(buffer, offset, staging, size)
        lib, ffi = self._lib, self._ffi
        handle = staging._internal
        self._status.clear()
        lib.wgpuBufferMapAsync(handle, lib.WGPUMapMode_Read, 0, size, self._info[0])
        self._wait()
        if self._status[0] != lib.WGPUMapAsyncStatus_Success:
            raise RuntimeError(f"Could not map the readback buffer (status {self._status[0]})")
        try:
            pointer = lib.wgpuBufferGetConstMappedRange(handle, 0, size)
            return bytes(ffi.buffer(pointer, size))
        finally:
            lib.wgpuBufferUnmap(handle)

    def _wait(self) -> None:
        """Until the map's callback has run: the device polled without blocking for up to
        `SPIN_S`, then with a blocking poll (which returns once the submitted work is done).
        A blocking poll sleeps in the driver's fence wait, and waking from it cost about
        47 us a readback on the H100 machine (a compiled MNIST inference step of 0.281 ms
        took 0.234 ms polling; infer_anatomy_h100_s7i_b.json); past `SPIN_S` the work is
        long enough that the wake-up does not count, and the thread stops burning a core."""
        lib, null = self._lib, self._ffi.NULL
        device = self._device._internal
        status = self._status
        deadline = time.perf_counter() + SPIN_S
        while not status and time.perf_counter() < deadline:
            lib.wgpuDevicePoll(device, 0, null)
        while not status:
            lib.wgpuDevicePoll(device, 1, null)  # blocks until submitted work is done

    def release(self) -> None:
        """Destroy the kept staging buffers (the device is going away)."""
        for buffer in self._kept.values():
            buffer.destroy()
        self._kept.clear()


__all__ = ["KEEP_BELOW", "KEPT", "SPIN_S", "StagingReader", "available"]
