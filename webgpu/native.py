"""The runtime over wgpu-py (Vulkan, Metal, D3D12, GL): every wgpu-py call lives in this file
(bar the readback's map and wait, in native_readback.py).

wgpu is imported when a runtime is first built, never at `import pyrite.webgpu`. Adapter choice:
the best adapter by default (discrete GPU, then integrated, virtual, CPU; a native API before GL);
`PYRITE_WEBGPU_ADAPTER` or the `adapter=` argument narrows it with comma-separated tokens: a
backend (`vulkan`, `metal`, `d3d12`, `gl`), a power preference (`high-performance`,
`low-power`) and/or an adapter index as listed by `pyrite.webgpu.adapters()`:
`PYRITE_WEBGPU_ADAPTER=gl`, `PYRITE_WEBGPU_ADAPTER=vulkan,1`.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import config
from ..errors import BackendUnavailable
from . import native_readback, unchecked_module
from .batch import CommandBatch
from .runtime import (
    AdapterInfo,
    BindGroup,
    Buffer,
    Dispatch,
    Limits,
    Pipeline,
    Write,
    compile_error,
)
from .unchecked_module import ALL_CHECKS

_BACKENDS = {"vulkan": "Vulkan", "metal": "Metal", "d3d12": "D3D12", "gl": "OpenGL",
             "opengl": "OpenGL"}
_POWER = ("high-performance", "low-power")
_TYPE_RANK = {"high-performance": ["DiscreteGPU", "IntegratedGPU", "VirtualGPU", "CPU"],
              "low-power": ["IntegratedGPU", "DiscreteGPU", "VirtualGPU", "CPU"]}
_NO_ADAPTER_FIX = ("On Linux without a GPU, `apt-get install mesa-vulkan-drivers` gives a software "
                   "adapter (lavapipe); in Chromium start with --enable-unsafe-webgpu. "
                   "Or use Device(\"numpy\").")


@dataclass(frozen=True)
class AdapterChoice:
    """Which adapter to take: `AdapterChoice.parse("vulkan,low-power")`; empty means best."""

    backend: str | None = None
    power_preference: str | None = None
    index: int | None = None

    @classmethod
    def parse(cls, text: str) -> AdapterChoice:
        backend = power = index = None
        for token in (t.strip().lower() for t in text.split(",") if t.strip()):
            if token in _BACKENDS:
                backend = _BACKENDS[token]
            elif token in _POWER:
                power = token
            elif token.isdigit():
                index = int(token)
            else:
                raise BackendUnavailable(
                    f"webgpu: unknown adapter setting {token!r} in {text!r}; use a backend "
                    f"({', '.join(sorted(_BACKENDS))}), a power preference ({', '.join(_POWER)}) "
                    f"or an adapter index, comma-separated")
        return cls(backend, power, index)

    def __str__(self) -> str:
        parts = [p for p in (self.backend, self.power_preference) if p]
        parts += [f"index {self.index}"] if self.index is not None else []
        return ", ".join(parts) or "any adapter"


_HANDLE_LISTS = 64  # replayed dispatch lists whose C handles are kept


def _handle(obj: object) -> Any:
    """The wgpu-native handle of a wgpu-py object (its `_internal`)."""
    return obj._internal  # type: ignore[attr-defined]


def _direct_calls() -> tuple[Any, ...] | None:
    """wgpu-native's compute-pass functions (set pipeline, set bind group, dispatch), NULL,
    its queue write, cffi's `from_buffer`, then what a replay's submit calls (make an encoder,
    begin and end a pass, finish, submit, release each), a one-slot array of command
    buffers and the encoder's buffer copy (a readback's copy), as wgpu-py's cffi library
    exposes them; None where this wgpu-py does not."""
    try:
        from wgpu.backends.wgpu_native import _ffi  # type: ignore[import-untyped]
        lib = _ffi.lib
        return (lib.wgpuComputePassEncoderSetPipeline, lib.wgpuComputePassEncoderSetBindGroup,
                lib.wgpuComputePassEncoderDispatchWorkgroups, _ffi.ffi.NULL,
                lib.wgpuQueueWriteBuffer, _ffi.ffi.from_buffer,
                lib.wgpuDeviceCreateCommandEncoder, lib.wgpuCommandEncoderBeginComputePass,
                lib.wgpuComputePassEncoderEnd, lib.wgpuComputePassEncoderRelease,
                lib.wgpuCommandEncoderFinish, lib.wgpuCommandEncoderRelease,
                lib.wgpuQueueSubmit, lib.wgpuCommandBufferRelease,
                _ffi.ffi.new("WGPUCommandBuffer[1]"), lib.wgpuCommandEncoderCopyBufferToBuffer)
    except (ImportError, AttributeError):
        return None


def adapter_setting() -> str:
    """PYRITE_WEBGPU_ADAPTER, read in pyrite.config with the other settings."""
    return config.webgpu_adapter()


def import_wgpu() -> Any:
    # Mesa's drivers complain on stderr when XDG_RUNTIME_DIR is unset; give them a private one
    if not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="pyrite-xdg-")
    try:
        import wgpu  # type: ignore[import-untyped]  # wgpu-py ships no type information
    except ImportError as exc:
        raise BackendUnavailable("webgpu: the native WebGPU runtime needs wgpu-py: "
                                 "pip install wgpu (or pip install pyrite[webgpu])") from exc
    return wgpu


def _info(index: int, adapter: Any) -> AdapterInfo:
    info = adapter.info
    return AdapterInfo(index, info.get("device", "") or "?", info.get("vendor", ""),
                       info.get("backend_type", ""), info.get("adapter_type", ""),
                       info.get("description", ""))


def list_adapters() -> list[tuple[AdapterInfo, Any]]:
    """Every adapter wgpu-py can see, in its enumeration order."""
    wgpu = import_wgpu()
    return [(_info(i, a), a) for i, a in enumerate(wgpu.gpu.enumerate_adapters_sync())]


def choose_adapter(found: list[tuple[AdapterInfo, Any]],
                   choice: AdapterChoice) -> tuple[AdapterInfo, Any]:
    """The best adapter matching `choice`, or BackendUnavailable naming what was looked for."""
    if choice.index is not None:
        found = [f for f in found if f[0].index == choice.index]
    if choice.backend is not None:
        found = [f for f in found if f[0].backend == choice.backend]
    if not found:
        raise BackendUnavailable(f"webgpu: no GPU adapter found (looked for {choice} among "
                                 f"wgpu's Vulkan, Metal, D3D12 and GL adapters). {_NO_ADAPTER_FIX}")
    order = _TYPE_RANK[choice.power_preference or "high-performance"]

    def rank(item: tuple[AdapterInfo, Any]) -> tuple[int, int, int]:
        info = item[0]
        kind = order.index(info.adapter_type) if info.adapter_type in order else len(order)
        return kind, info.backend == "OpenGL", info.index

    return min(found, key=rank)


def _limits(raw: Mapping[str, int]) -> Limits:
    return Limits(*(int(raw[f.replace("_", "-")]) for f in Limits.__dataclass_fields__))


class NativeRuntime(CommandBatch):
    """A wgpu-py device and queue with one pending command encoder (batch.py)."""

    def __init__(self, adapter: str | AdapterChoice | None = None) -> None:
        choice = adapter if isinstance(adapter, AdapterChoice) else \
            AdapterChoice.parse(adapter_setting() if adapter is None else adapter)
        self._wgpu = wgpu = import_wgpu()
        info, raw = choose_adapter(list_adapters(), choice)
        wanted = [f for f in ("shader-f16", "subgroup") if f in raw.features]
        keep = ("max-buffer-size", "max-storage-buffer-binding-size",
                "max-storage-buffers-per-shader-stage", "max-compute-workgroup-storage-size",
                "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x")
        self._device = raw.request_device_sync(
            label="pyrite", required_features=wanted,
            required_limits={k: raw.limits[k] for k in keep})
        self._adapter = info
        self._limits = _limits(self._device.limits)
        self._features = frozenset(str(f) for f in self._device.features)
        self._usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                       | wgpu.BufferUsage.COPY_DST)
        self._pipelines: dict[Hashable, Any] = {}
        self._fence: Any = None
        self._direct = _direct_calls()
        self._reader = native_readback.StagingReader(
            self._device, self._create_staging, self._copy_and_submit) \
            if native_readback.available() else None
        self._handles: dict[int, tuple[Any, list[tuple[Any, Any, int, int, int]]]] = {}
        self._pass_pipeline: Pipeline | None = None  # the open pass's pipeline (_record)
        super().__init__()
        # pipelines compiled and the wall time it took, as the page's runtime counts them: a
        # driver with a cold shader cache can spend seconds here on a model's first call
        self.stats.update({"pipelines": 0, "pipeline_ms": 0.0})

    @property
    def adapter(self) -> AdapterInfo:
        return self._adapter

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def features(self) -> frozenset[str]:
        return self._features

    # ---- buffers ---------------------------------------------------------------------------
    def create_buffer(self, size: int) -> Buffer:
        return self._device.create_buffer(size=size, usage=self._usage)

    def create_buffer_with_data(self, data: bytes, *, uniform: bool = False) -> Buffer:
        usage = self._wgpu.BufferUsage
        return self._device.create_buffer_with_data(
            data=data, usage=usage.UNIFORM if uniform else usage.STORAGE)

    def destroy_buffer(self, buffer: Buffer) -> None:
        self.flush()  # pending work may still use it, and cached bind groups name it
        self._groups.clear()
        buffer.destroy()  # type: ignore[attr-defined]  # a GPUBuffer

    def write_buffer(self, buffer: Buffer, offset: int, data: bytes) -> None:
        self.flush()
        self._device.queue.write_buffer(buffer, offset, data)

    def read_buffer(self, buffer: Buffer, offset: int, size: int) -> bytes:
        if size == 0:
            self.flush()
            return b""
        if self._reader is not None:  # the copy joins the pending batch: one submit
            return self._reader.read(buffer, offset, size)
        self.flush()
        return bytes(self._device.queue.read_buffer(buffer, offset, size))

    def _create_staging(self, size: int) -> Any:
        usage = self._wgpu.BufferUsage
        return self._device.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)

    def _copy_and_submit(self, src: Buffer, offset: int, staging: Any, size: int) -> None:
        """A readback's copy into its staging buffer, submitted with the pending batch. With
        nothing pending (a replayed step's result: the replay submitted its own work) the
        encoder, the copy and the submit go through wgpu-native's C functions, as a replay's
        do: wgpu-py's objects for them took most of a readback's host time (44 of 52 us on
        lavapipe's host)."""
        direct = self._direct
        if direct is None or self._encoder is not None:
            self.copy_buffer(src, offset, staging, 0, size)
            self.flush()
            return
        self._before_submit()
        null = direct[3]
        create_encoder, finish, release_encoder, submit, release_commands, array, copy = (
            direct[6], direct[10], direct[11], direct[12], direct[13], direct[14], direct[15])
        encoder = create_encoder(self._device._internal, null)
        try:
            copy(encoder, _handle(src), offset, _handle(staging), 0, size)
        finally:
            commands = finish(encoder, null)
            release_encoder(encoder)
        array[0] = commands
        submit(self._device.queue._internal, 1, array)
        release_commands(commands)
        self.stats["submits"] += 1

    async def read_buffer_async(self, buffer: Buffer, offset: int, size: int) -> bytes:
        if size == 0:
            return b""
        wgpu = self._wgpu
        staging = self._device.create_buffer(
            size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        self.copy_buffer(buffer, offset, staging, 0, size)
        self.flush()
        await staging.map_async(wgpu.MapMode.READ)
        data = bytes(staging.read_mapped())
        staging.unmap()
        staging.destroy()
        return data

    # ---- pipelines and dispatch ------------------------------------------------------------
    def pipeline(self, key: Hashable, source: str, entry_point: str = "main",
                 checks: int = ALL_CHECKS) -> Pipeline:
        found = self._pipelines.get((key, entry_point))
        if found is None:
            start = time.perf_counter()
            try:
                module = None
                if checks != ALL_CHECKS:  # None where this wgpu-py cannot: all checks kept
                    module = unchecked_module.create(self._device, source, str(key), checks)
                if module is None:
                    module = self._device.create_shader_module(code=source)
                found = self._device.create_compute_pipeline(
                    layout="auto", compute={"module": module, "entry_point": entry_point})
            except Exception as exc:  # wgpu's validation errors carry the WGSL diagnostics
                raise compile_error(key, exc) from exc
            self._pipelines[(key, entry_point)] = found
            self.stats["pipelines"] += 1
            self.stats["pipeline_ms"] += (time.perf_counter() - start) * 1000
        return found

    # ---- the batch's calls, in wgpu-py's spelling (batch.py) --------------------------------
    def _new_encoder(self) -> Any:
        return self._device.create_command_encoder()

    def _begin_pass(self, encoder: Any) -> Any:
        self._pass_pipeline = None
        return encoder.begin_compute_pass()

    def _record(self, cpass: Any, pipeline: Pipeline, group: BindGroup,
                workgroups: tuple[int, int, int]) -> None:
        """One dispatch into the open pass. Through wgpu-native's C functions where present
        (wgpu-py's methods cost about 1.3 us each in checks and error capture, a third of an
        eager op's launch on lavapipe's host): the pipeline and bind group were made by this
        runtime, and the cached bind groups and the pass keep them alive until the submit.
        The pipeline is set only when it changes (a pass keeps it)."""
        direct = self._direct
        if direct is None:
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*workgroups)
            return
        internal = cpass._internal
        if pipeline is not self._pass_pipeline:
            direct[0](internal, _handle(pipeline))
            self._pass_pipeline = pipeline
        direct[1](internal, 0, _handle(group), 0, direct[3])
        direct[2](internal, *workgroups)

    def _record_many(self, cpass: Any, dispatches: Sequence[Dispatch]) -> None:
        """A replayed step's dispatches into one pass. wgpu-py's methods wrap every call in
        checks and error capture (about 3 us each); a program's calls were all made, checked,
        while it was captured, so they go to wgpu-native's C functions directly, with the
        handles of a dispatch list (kept by the program, so its id is stable) looked up once.
        Without those functions (another wgpu-py) the public methods do it."""
        if self._direct is None:
            set_pipeline, set_group = cpass.set_pipeline, cpass.set_bind_group
            dispatch, last = cpass.dispatch_workgroups, None
            for pipeline, group, (x, y, z) in dispatches:
                if pipeline is not last:  # a pass keeps its pipeline between dispatches
                    set_pipeline(pipeline)
                    last = pipeline
                set_group(0, group)
                dispatch(x, y, z)
            return
        self._record_handles(cpass._internal, dispatches)

    def _record_handles(self, internal: Any, dispatches: Sequence[Dispatch]) -> None:
        """`_record_many` into a pass given by its C handle (the C functions are present)."""
        assert self._direct is not None
        found = self._handles.get(id(dispatches))
        if found is None or found[0] is not dispatches:
            handles = [(_handle(p), _handle(g), *w) for p, g, w in dispatches]
            found = self._handles[id(dispatches)] = (dispatches, handles)
            if len(self._handles) > _HANDLE_LISTS:
                self._handles.pop(next(iter(self._handles)))
        set_pipeline, set_group, dispatch, null = self._direct[:4]
        last = None
        for pipeline, group, x, y, z in found[1]:
            if pipeline != last:
                set_pipeline(internal, pipeline)
                last = pipeline
            set_group(internal, 0, group, 0, null)
            dispatch(internal, x, y, z)

    def replay(self, dispatches: Sequence[Dispatch], writes: Sequence[Write] = ()) -> None:
        """`CommandBatch.replay`, with the encoder, the pass, the submit and their releases
        made through wgpu-native's C functions too (wgpu-py's objects for them cost about
        18 us a replay on lavapipe's host). Work recorded before goes first, in its own
        submit."""
        direct = self._direct
        if direct is None:
            super().replay(dispatches, writes)
            return
        self.flush()
        if writes:
            self._write_many(writes)
        if not dispatches:
            return
        null = direct[3]
        (create_encoder, begin_pass, end_pass, release_pass, finish, release_encoder, submit,
         release_commands, array) = direct[6:15]
        encoder = create_encoder(self._device._internal, null)
        cpass = begin_pass(encoder, null)
        try:
            self._record_handles(cpass, dispatches)
        finally:
            end_pass(cpass)
            release_pass(cpass)
            commands = finish(encoder, null)
            release_encoder(encoder)
        array[0] = commands
        submit(self._device.queue._internal, 1, array)
        release_commands(commands)
        self.stats["dispatches"] += len(dispatches)
        self.stats["submits"] += 1

    def _write_many(self, writes: Sequence[Write]) -> None:
        """A replayed step's metadata writes, straight to wgpu-native's queue write where
        `_record_many` goes straight to its pass functions (the batch is flushed already)."""
        if self._direct is None:
            super()._write_many(writes)
            return
        write, from_buffer = self._direct[4:6]
        queue = self._device.queue._internal
        for buffer, offset, data in writes:
            write(queue, _handle(buffer), offset, from_buffer(data), len(data))

    def _record_copy(self, encoder: Any, src: Buffer, src_offset: int, dst: Buffer,
                     dst_offset: int, size: int) -> None:
        encoder.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)

    def _submit(self, encoder: Any) -> None:
        self._device.queue.submit([encoder.finish()])

    def _layout_of(self, pipeline: Pipeline) -> Any:
        return pipeline.get_bind_group_layout(0)  # type: ignore[attr-defined]

    def _create_group(self, layout: Any, pairs: tuple[tuple[int, Buffer], ...]) -> BindGroup:
        entries = [{"binding": i, "resource": {"buffer": b, "offset": 0,
                                               "size": b.size}}  # type: ignore[attr-defined]
                   for i, b in pairs]
        return self._device.create_bind_group(layout=layout, entries=entries)

    def sync(self) -> None:
        self.flush()
        # queue.on_submitted_work_done_sync() raises a cffi TypeError in wgpu-py 0.32 (its
        # callback signature is stale); a 4-byte readback waits for the same work
        if self._fence is None:
            self._fence = self.create_buffer(4)
        self.read_buffer(self._fence, 0, 4)
