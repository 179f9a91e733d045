"""The buffer pool: size-class reuse of device buffers, returned when the last view dies.

Owns buffer sizes (WGSL's 4-byte rounding happens here and nowhere else), the size classes, the
device-limit check and the statistics. It does not own what is in a buffer: tensors
(`webgpu/tensor.py`) hold a `Block` and views share it; when the last view is collected the
block's `__del__` puts the buffer back on its class's free list.

A buffer may be handed out again while a recorded (unsubmitted) dispatch still reads it: that is
safe because dispatches run in recording order and `Runtime.write_buffer` flushes first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DeviceMemoryError
from .runtime import Buffer, Runtime

_MIN_CLASS = 256  # bytes; smaller buffers share the smallest class


def aligned_size(nbytes: int) -> int:
    """Bytes a buffer of `nbytes` occupies: WGSL storage is read in 4-byte words (the one place)."""
    return max(4, (nbytes + 3) // 4 * 4)


def size_class(nbytes: int) -> int:
    """The pool class of a request: powers of two split in four steps (at most 25% slack)."""
    n = max(_MIN_CLASS, aligned_size(nbytes))
    top = 1 << (n - 1).bit_length()  # next power of two >= n
    step = top // 8  # top/2 .. top in quarters of top/2
    return max(_MIN_CLASS, -(-n // step) * step) if top > _MIN_CLASS else _MIN_CLASS


@dataclass
class PoolStats:
    """Counters of a pool: bytes are buffer (class) sizes."""

    bytes_allocated: int = 0  # held from the device now, in use or pooled
    bytes_in_use: int = 0
    peak_bytes: int = 0  # high-water mark of bytes_allocated
    live_buffers: int = 0  # handed out and not yet returned
    pooled_buffers: int = 0  # free, waiting for reuse
    allocations: int = 0  # buffers created on the device
    reuses: int = 0  # requests served from the pool
    bytes_reused: int = 0


class Block:
    """One pooled buffer; views share it, and its collection returns the buffer to the pool."""

    __slots__ = ("buffer", "size", "_release", "__weakref__")

    def __init__(self, buffer: Buffer, size: int,
                 release: Callable[[Buffer, int], None] | None = None) -> None:
        self.buffer = buffer
        self.size = size
        self._release = release

    def __del__(self) -> None:
        # not a weakref.finalize: that costs a registry entry and about 8 us a block, and every
        # op's output (and each output of a replayed step) is a block
        if self._release is not None and not sys.is_finalizing():
            self._release(self.buffer, self.size)


class BufferPool:
    """Size-class free lists over one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._free: dict[int, list[Buffer]] = {}
        self.stats = PoolStats()
        #: called with each block handed out while a step is captured (capture.py), else None
        self.watch: Callable[[Block], None] | None = None
        # buffers a captured program owns: id -> buffer, and those whose last view died
        self._claimed: dict[int, Buffer] = {}
        self._claimed_free: dict[int, tuple[Buffer, int]] = {}

    def alloc(self, nbytes: int, op: str = "alloc", prefer: Buffer | None = None) -> Block:
        """A block of at least `nbytes`; raises DeviceMemoryError past the device's limit.
        `prefer`: this buffer when it is free and of the class (a replayed program asks for the
        buffers it used before, so its bind groups are found cached)."""
        limit = self._runtime.limits.max_allocation
        size = size_class(nbytes)
        if aligned_size(nbytes) > limit:
            raise DeviceMemoryError(
                f"{op}: a buffer of {nbytes} bytes exceeds this adapter's limit of {limit} bytes "
                f"per buffer (max_buffer_size / max_storage_buffer_binding_size); split the "
                f"tensor or use a smaller batch")
        size = min(size, limit)
        stats = self.stats
        free = self._free.get(size)
        if free:
            buffer = free.pop()
            if prefer is not None and buffer is not prefer:
                for i in range(len(free) - 1, -1, -1):
                    if free[i] is prefer:
                        free[i] = buffer
                        buffer = prefer
                        break
            stats.pooled_buffers -= 1
            stats.reuses += 1
            stats.bytes_reused += size
        else:
            buffer = self._create(size, op)
        stats.live_buffers += 1
        stats.bytes_in_use += size
        block = Block(buffer, size, self._release)
        if self.watch is not None:
            self.watch(block)
        return block

    def _create(self, size: int, op: str) -> Buffer:
        stats = self.stats
        try:
            buffer = self._runtime.create_buffer(size)
        except Exception:
            self.clear()  # give the pooled buffers back and try once more
            try:
                buffer = self._runtime.create_buffer(size)
            except Exception as exc:
                raise DeviceMemoryError(
                    f"{op}: the device could not allocate {size} bytes ({stats.bytes_allocated} "
                    f"bytes held by pyrite); free tensors or use smaller batches") from exc
        stats.allocations += 1
        stats.bytes_allocated += size
        stats.peak_bytes = max(stats.peak_bytes, stats.bytes_allocated)
        return buffer

    def _release(self, buffer: Buffer, size: int) -> None:
        self.stats.live_buffers -= 1
        self.stats.bytes_in_use -= size
        if id(buffer) in self._claimed:
            self._claimed_free[id(buffer)] = (buffer, size)
            return
        self._free.setdefault(size, []).append(buffer)
        self.stats.pooled_buffers += 1

    def claim(self, buffer: Buffer) -> None:
        """A captured program keeps `buffer`: never handed out again until `unclaim` (a pooled
        buffer leaves its free list; a live one does not return to it when its views die)."""
        key = id(buffer)
        if key in self._claimed:
            return
        self._claimed[key] = buffer
        for size, free in self._free.items():
            for i, b in enumerate(free):
                if b is buffer:
                    del free[i]
                    self.stats.pooled_buffers -= 1
                    self._claimed_free[key] = (buffer, size)
                    return

    def unclaim(self, buffer: Buffer) -> None:
        """Give a claimed buffer back (to its free list when no view holds it)."""
        key = id(buffer)
        if self._claimed.pop(key, None) is None:
            return
        found = self._claimed_free.pop(key, None)
        if found is not None:
            self._free.setdefault(found[1], []).append(found[0])
            self.stats.pooled_buffers += 1

    def clear(self) -> None:
        """Destroy every pooled (free) buffer; buffers in use are untouched."""
        self._runtime.flush()  # recorded work may still read a freed buffer
        free, self._free = self._free, {}  # finalizers may add to the new dict meanwhile
        for size, buffers in free.items():
            for buffer in buffers:
                self._runtime.destroy_buffer(buffer)
                self.stats.bytes_allocated -= size
                self.stats.pooled_buffers -= 1
