"""The buffer pool: size classes, reuse when the last view dies, stats, the limit error."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from pyrite.dtype import DType
from pyrite.webgpu import DeviceMemoryError
from pyrite.webgpu.memory import aligned_size, size_class


def test_sizes():
    assert [aligned_size(n) for n in (0, 1, 4, 5, 8)] == [4, 4, 4, 8, 8]
    assert size_class(1) == 256 and size_class(300) == 320 and size_class(1024) == 1024
    assert size_class(1025) == 1280
    for n in range(1, 100_000, 997):  # classes cover the request with at most 25% slack
        assert n <= size_class(n) <= max(256, 1.25 * aligned_size(n))


def test_buffers_return_to_the_pool_when_the_last_view_dies(gpu, up):
    gc.collect()
    stats = gpu.memory_stats()
    x = up(np.zeros((1000,), np.float32))
    live = stats.live_buffers
    views = [gpu.reshape(x, (10, 100)), gpu.slice(x, [(2, 9, 3)]), gpu.expand(
        gpu.reshape(x, (1, 1000)), (4, 1000))]
    assert stats.live_buffers == live  # views share the buffer
    del x
    gc.collect()
    assert stats.live_buffers == live  # still viewed
    del views
    gc.collect()
    assert stats.live_buffers == live - 1
    reuses = stats.reuses
    y = gpu.full((999,), 1.0, DType.F32)  # same size class: served from the pool
    assert stats.reuses == reuses + 1
    assert stats.peak_bytes >= stats.bytes_allocated >= stats.bytes_in_use > 0
    del y


def test_allocation_beyond_the_device_limit(gpu):
    limit = gpu.kernels.runtime.limits.max_allocation
    with pytest.raises(DeviceMemoryError, match=f"{limit + 4} bytes exceeds .* {limit} bytes"):
        gpu.kernels.pool.alloc(limit + 4, "full")
    with pytest.raises(MemoryError):
        gpu.full((limit // 4 + 1,), 0.0, DType.F32)


def test_clear_keeps_buffers_in_use(gpu, up, down):
    x = up(np.arange(5, dtype=np.float32))
    gpu.kernels.pool.clear()
    assert gpu.memory_stats().pooled_buffers == 0
    np.testing.assert_array_equal(down(x), np.arange(5))
