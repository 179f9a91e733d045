"""Adapter choice, the missing-adapter error, and imports that stay lazy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyrite.errors import BackendUnavailable
from pyrite.webgpu import WebGpu, adapters, native
from pyrite.webgpu.native import AdapterChoice, choose_adapter
from pyrite.webgpu.runtime import AdapterInfo, Runtime


def _found(*specs: tuple[str, str]) -> list[tuple[AdapterInfo, object]]:
    return [(AdapterInfo(i, f"gpu{i}", "", backend, kind), object())
            for i, (backend, kind) in enumerate(specs)]


def test_parse_choice():
    assert AdapterChoice.parse("") == AdapterChoice()
    assert AdapterChoice.parse("GL, low-power,2") == AdapterChoice("OpenGL", "low-power", 2)
    with pytest.raises(BackendUnavailable, match="unknown adapter setting 'cuda'"):
        AdapterChoice.parse("cuda")


def test_best_adapter_first():
    found = _found(("OpenGL", "CPU"), ("Vulkan", "CPU"), ("Vulkan", "IntegratedGPU"),
                   ("Vulkan", "DiscreteGPU"))
    assert choose_adapter(found, AdapterChoice())[0].index == 3
    assert choose_adapter(found, AdapterChoice(power_preference="low-power"))[0].index == 2
    assert choose_adapter(found, AdapterChoice(backend="OpenGL"))[0].index == 0
    assert choose_adapter(found, AdapterChoice(index=1))[0].index == 1


def test_no_adapter_says_what_was_looked_for_and_how_to_get_one(monkeypatch):
    monkeypatch.setattr(native, "list_adapters", lambda: [])
    with pytest.raises(BackendUnavailable, match="no GPU adapter found.*mesa-vulkan-drivers"):
        WebGpu().kernels  # noqa: B018
    monkeypatch.setenv("PYRITE_WEBGPU_ADAPTER", "metal")
    with pytest.raises(BackendUnavailable, match="looked for Metal"):
        native.NativeRuntime()


def test_import_requests_no_adapter():
    code = ("import sys, pyrite.webgpu, pyrite; b = pyrite.device('webgpu') if False else None; "
            "assert 'wgpu' not in sys.modules, 'wgpu imported'; "
            "assert 'webgpu' in pyrite.backend_names()")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_runtime_satisfies_the_protocol_and_adapters_lists_limits(gpu):
    assert isinstance(gpu.kernels.runtime, Runtime)
    rows = adapters()
    assert rows and all("max-storage-buffer-binding-size" in r["limits"] for r in rows)
    assert gpu.adapter.name in {r["name"] for r in rows}


_COPY = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(1) fn main(@builtin(global_invocation_id) i: vec3<u32>) {
  dst[i.x] = src[i.x];
}
"""


def test_bind_groups_are_cached_until_a_buffer_is_destroyed(gpu):
    runtime = gpu.kernels.runtime
    inner = getattr(runtime, "inner", runtime)  # the lost-device guard wraps the native runtime
    pipeline = inner.pipeline("test-copy", _COPY)
    a, b = inner.create_buffer(16), inner.create_buffer(16)
    first = inner.bind_group(pipeline, [a, b])
    assert inner.bind_group(pipeline, [a, b]) is first  # same pipeline and buffers: cached
    assert inner.bind_group(pipeline, [b, a]) is not first
    inner.destroy_buffer(inner.create_buffer(16))
    assert inner.bind_group(pipeline, [a, b]) is not first  # destroying emptied the cache


def test_dispatches_in_one_pass_see_each_others_writes(gpu, down):
    x = gpu.full((1000,), 1.0, gpu.float_dtype)
    from pyrite.backend import binary as B
    for _ in range(50):  # 50 dependent dispatches, one compute pass, one submit
        x = gpu.binary(B.ADD, x, x)
    assert down(x)[0] == 2.0 ** 50
