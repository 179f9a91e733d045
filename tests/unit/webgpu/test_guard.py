"""A lost device, an exhausted one and a failed submit or readback surface as pyrite errors
(`webgpu/guard.py`), on a private backend so the session's device stays healthy."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.errors import DeviceLostError, DeviceMemoryError, PyriteError
from pyrite.webgpu import WebGpu
from pyrite.webgpu.guard import GuardedRuntime, classify
from pyrite.webgpu.native import NativeRuntime


@pytest.fixture
def private(gpu: WebGpu) -> WebGpu:
    """A backend with a device of its own (gpu: skipped without an adapter)."""
    return WebGpu()


def test_a_destroyed_device_raises_device_lost_and_reset_recovers(private) -> None:
    x = pyrite.tensor([1.0, 2.0], device=private)
    y = x + 1
    runtime = private.kernels.runtime
    assert isinstance(runtime, GuardedRuntime) and isinstance(runtime.inner, NativeRuntime)
    runtime.inner._device.destroy()  # what a driver reset looks like to WebGPU
    with pytest.raises(DeviceLostError, match="reset()"):
        (x * 2).numpy()
    with pytest.raises(RuntimeError):  # still a RuntimeError for callers that catch those
        y.numpy()
    private.reset()
    np.testing.assert_array_equal(pyrite.tensor([3.0], device=private).numpy(), [3.0])


def test_a_failed_readback_is_device_lost_and_later_calls_fail_fast(private, monkeypatch):
    x = pyrite.tensor([1.0, 2.0], device=private)
    runtime = private.kernels.runtime
    calls = []

    def broken(*args: object) -> bytes:
        calls.append(args)
        raise RuntimeError("Buffer map failed: device error")

    monkeypatch.setattr(runtime.inner, "read_buffer", broken)
    with pytest.raises(DeviceLostError, match="read_buffer"):
        x.numpy()
    with pytest.raises(DeviceLostError):
        (x + 1).numpy()
    assert len(calls) == 1  # the second readback never reached the driver


def test_a_failed_submit_is_device_lost(private, monkeypatch) -> None:
    x = pyrite.tensor([1.0, 2.0], device=private)

    def broken() -> None:
        raise RuntimeError("Queue submit failed")

    monkeypatch.setattr(private.kernels.runtime.inner, "flush", broken)
    with pytest.raises(DeviceLostError, match="Queue submit failed"):
        (x + 1).numpy()


def test_out_of_memory_is_device_memory_error(private, monkeypatch) -> None:
    def exhausted(size: int) -> object:
        raise MemoryError(f"Not enough memory left: {size}")

    monkeypatch.setattr(private.kernels.runtime.inner, "create_buffer", exhausted)
    with pytest.raises(DeviceMemoryError):
        pyrite.zeros((1024,), device=private).numpy()


def test_classify() -> None:
    assert isinstance(classify("dispatch", RuntimeError("Parent device is lost")),
                      DeviceLostError)
    assert isinstance(classify("create_buffer", RuntimeError("Out of Memory")), DeviceMemoryError)
    other = classify("bind_group", ValueError("binding 3 is missing"))
    assert type(other) is PyriteError and "bind_group" in str(other)


def test_sync_waits(gpu) -> None:
    (pyrite.ones((4,), device=gpu) * 2).into_primitive()
    gpu.sync()
