"""The native runtime's readback (`webgpu/native_readback.py`): kept staging buffers, the copy
in the pending batch, the map waited for on the reading thread."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from pyrite.webgpu import native_readback
from pyrite.webgpu.native import NativeRuntime

_DOUBLE = """
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3<u32>) {
  if (i.x < arrayLength(&x)) { x[i.x] = x[i.x] * 2.0; }
}
"""


@pytest.fixture
def native(gpu):  # noqa: ANN001, ANN201
    runtime = gpu.kernels.runtime
    inner = getattr(runtime, "inner", runtime)  # the lost-device guard wraps the native runtime
    if not isinstance(inner, NativeRuntime) or inner._reader is None:
        pytest.skip("this wgpu-py does not expose the map functions")
    return inner


def test_reads_of_every_size_and_offset_give_what_was_written(native) -> None:
    rng = np.random.default_rng(0)
    data = rng.integers(0, 1 << 31, 300_000, dtype=np.int64).astype(np.uint32).tobytes()
    buffer = native.create_buffer(len(data))
    native.write_buffer(buffer, 0, data)
    # more sizes than buffers kept, so kept ones are dropped and made again on the way
    cases = [(0, 4), (4, 8), (12, 252), (0, 256), (256, 260), (1000, 4096), (8, 65_540),
             (0, len(data)), (400, 100_000), (4, 4), (0, 1 << 20), (16, 300_000)] * 2
    for offset, size in cases:
        assert native.read_buffer(buffer, offset, size) == data[offset:offset + size]
    assert len(native._reader._kept) <= native_readback.KEPT


def test_a_read_sees_the_work_recorded_before_it(native) -> None:
    values = np.arange(1000, dtype=np.float32)
    buffer = native.create_buffer(values.nbytes)
    native.write_buffer(buffer, 0, values.tobytes())
    pipeline = native.pipeline("test-readback-double", _DOUBLE)
    group = native.bind_group(pipeline, [buffer])
    for _ in range(3):  # recorded, not submitted: the read's submit carries them
        native.dispatch(pipeline, group, (16, 1, 1))
    got = np.frombuffer(native.read_buffer(buffer, 0, values.nbytes), np.float32)
    np.testing.assert_array_equal(got, values * 8)


@pytest.mark.parametrize("spin_s", [0.0, 1e-9, 10.0])
def test_the_wait_polls_then_blocks_and_sees_the_work(native, monkeypatch, spin_s) -> None:
    """No spin (one blocking poll), a spin shorter than the work (then a blocking poll) and a
    spin longer than it: each read sees every dispatch before it."""
    monkeypatch.setattr(native_readback, "SPIN_S", spin_s)
    values = np.arange(1 << 16, dtype=np.float32)
    buffer = native.create_buffer(values.nbytes)
    native.write_buffer(buffer, 0, values.tobytes())
    pipeline = native.pipeline("test-readback-double", _DOUBLE)
    group = native.bind_group(pipeline, [buffer])
    for _ in range(4):
        native.dispatch(pipeline, group, (1024, 1, 1))
    got = np.frombuffer(native.read_buffer(buffer, 0, values.nbytes), np.float32)
    np.testing.assert_array_equal(got, values * 16)


def test_a_read_after_a_replay_copies_through_the_c_functions(native) -> None:
    """A replay submits its own work, so the read's copy is a submit of its own (made through
    wgpu-native's C functions): it must still see the replayed dispatches."""
    values = np.arange(1000, dtype=np.float32)
    buffer = native.create_buffer(values.nbytes)
    native.write_buffer(buffer, 0, values.tobytes())
    pipeline = native.pipeline("test-readback-double", _DOUBLE)
    group = native.bind_group(pipeline, [buffer])
    native.replay([(pipeline, group, (16, 1, 1))] * 2)
    assert native._encoder is None  # nothing pending: the C-function copy is taken
    submits = native.stats["submits"]
    got = np.frombuffer(native.read_buffer(buffer, 0, values.nbytes), np.float32)
    np.testing.assert_array_equal(got, values * 4)
    assert native.stats["submits"] == submits + 1


def test_a_large_read_gets_a_staging_buffer_of_its_own(native, monkeypatch) -> None:
    monkeypatch.setattr(native_readback, "KEEP_BELOW", 1024)
    buffer = native.create_buffer(4096)
    native.write_buffer(buffer, 0, struct.pack("<1024i", *range(1024)))
    kept = dict(native._reader._kept)
    assert native.read_buffer(buffer, 0, 4096) == struct.pack("<1024i", *range(1024))
    assert native._reader._kept == kept  # nothing new kept
    assert native.read_buffer(buffer, 8, 8) == struct.pack("<2i", 2, 3)


def test_without_the_map_functions_the_runtime_reads_through_wgpu_py(monkeypatch) -> None:
    monkeypatch.setattr(native_readback, "_c_library", lambda: None)
    assert not native_readback.available()
    runtime = NativeRuntime()
    assert runtime._reader is None
    buffer = runtime.create_buffer(16)
    runtime.write_buffer(buffer, 0, struct.pack("<4f", 1, 2, 3, 4))
    assert runtime.read_buffer(buffer, 4, 8) == struct.pack("<2f", 2, 3)
