"""The runtime over the browser's WebGPU (`navigator.gpu`) inside Pyodide: every JavaScript
call of the backend lives in this file.

It keeps the contract of `runtime.py` exactly as `native.py` does, so `WebGpu`, its kernels and
its WGSL templates run unchanged in a page. What differs from wgpu-py, and how it is bridged:

- Descriptors are JS objects with camelCase keys, built from Python dicts by `_obj`.
- Bytes cross as typed arrays: `writeBuffer` takes a `Uint8Array` made from the bytes, a
  mapped range comes back as an `ArrayBuffer` read with `to_bytes()`.
- The browser answers asynchronously (adapter, device, `mapAsync`, error scopes). The
  synchronous tensor API (`to_data`, `into_scalar`, `to_list`) waits with
  `pyodide.ffi.run_sync`, which needs JSPI: Python must run under `runPythonAsync` (pyrite.js
  runs everything so). `read_buffer_async` awaits instead, for callers without JSPI.
- Errors: a failed adapter or device request raises `BackendUnavailable`; `device.lost`
  marks the runtime lost and the next call raises `DeviceLostError`; an allocation of 1 MiB or
  more is checked at once through an out-of-memory error scope (`DeviceMemoryError`), smaller
  ones and any validation error the browser reports on its own (`uncapturederror`) are raised
  at the next flush or readback; a kernel's compile errors (an error scope per pipeline, not
  awaited when it is made) are raised at the next readback, before its result is used.
  `GuardedRuntime` (guard.py) does the rest, as natively.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import BackendUnavailable, DeviceLostError, DeviceMemoryError, PyriteError
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

_ARRAYS = 64  # replayed steps' dispatch and write lists kept as JS arrays
#: one replayed step: its writes ([buffer, offset, start, length] of one Uint8Array), then
#: its [pipeline, bind group, [x, y, z]] dispatches in one compute pass, submitted
_STEP_JS = """
if (writes) { for (const [b, o, s, n] of writes) queue.writeBuffer(b, o, blob, s, n); }
if (items.length) {
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  let last = null;
  for (const [p, g, w] of items) {
    if (p !== last) { pass.setPipeline(p); last = p; }
    pass.setBindGroup(0, g);
    pass.dispatchWorkgroups(w[0], w[1], w[2]);
  }
  pass.end();
  queue.submit([encoder.finish()]);
}
"""
_CHECKED_ALLOCATION = 1 << 20  # allocations from this size on are checked for OOM at once
_NO_WEBGPU = ("This browser exposes no WebGPU (navigator.gpu is missing). Use a browser with "
              "WebGPU (Chrome/Edge 113+, Safari 26+, Firefox 141+ on Windows), or in Chromium "
              "start with --enable-unsafe-webgpu; or use the server's /api/predict.")
_NO_JSPI = ("webgpu: waiting for the GPU needs JSPI (JavaScript Promise Integration): run Python "
            "with runPythonAsync (pyrite.js does) in a browser with JSPI (Chrome 137+), or use "
            "the async API (`await tensor.to_data_async()`)")
#: the contract's limits, by their WebGPU (camelCase) names
_LIMIT_NAMES = {
    "max_buffer_size": "maxBufferSize",
    "max_storage_buffer_binding_size": "maxStorageBufferBindingSize",
    "max_storage_buffers_per_shader_stage": "maxStorageBuffersPerShaderStage",
    "max_compute_workgroups_per_dimension": "maxComputeWorkgroupsPerDimension",
    "max_compute_invocations_per_workgroup": "maxComputeInvocationsPerWorkgroup",
    "max_compute_workgroup_storage_size": "maxComputeWorkgroupStorageSize",
}
#: what pyrite asks a device for: these features where the adapter has them, and the adapter's
#: own value of these limits (pyrite.js requests the same when it starts the GPU itself)
REQUESTED_FEATURES = ("shader-f16",)
REQUESTED_LIMITS = (*_LIMIT_NAMES.values(), "maxComputeWorkgroupSizeX")


def in_browser() -> bool:
    """True inside Pyodide (the browser's Python), where this runtime is the one to use."""
    return sys.platform == "emscripten"


def _ffi() -> Any:
    try:
        import js  # type: ignore[import-not-found]  # Pyodide's module of JS globals
        import pyodide.ffi as ffi  # type: ignore[import-not-found]
    except ImportError as exc:
        raise BackendUnavailable("webgpu: the browser runtime runs only inside Pyodide; "
                                 "natively pyrite uses wgpu-py") from exc
    return js, ffi


def _obj(value: object) -> Any:
    """A Python dict/list tree as plain JS objects and arrays (descriptors)."""
    js, ffi = _ffi()
    return ffi.to_js(value, dict_converter=js.Object.fromEntries)


def _wait(promise: Any) -> Any:
    """The promise's value, waiting through JSPI; a clear error where JSPI is unavailable."""
    _, ffi = _ffi()
    can = getattr(ffi, "can_run_sync", None)
    if can is not None and not can():
        raise BackendUnavailable(_NO_JSPI)
    try:
        return ffi.run_sync(promise)
    except RuntimeError as exc:
        if "run_sync" in str(exc) or "stack switching" in str(exc).lower():
            raise BackendUnavailable(_NO_JSPI) from exc
        raise


def _navigator_gpu() -> Any:
    """`navigator.gpu`, or BackendUnavailable saying the browser has no WebGPU. Read by
    evaluating JS: through the `js` module, the `navigator` getter fails ("Illegal invocation")
    in a Python made to be snapshotted, as pyrite.js makes it."""
    _ffi()
    from pyodide.code import run_js  # type: ignore[import-not-found]

    gpu = run_js("globalThis.navigator?.gpu ?? null")
    if _absent(gpu):
        raise BackendUnavailable(f"webgpu: {_NO_WEBGPU}")
    return gpu


def _absent(value: Any) -> bool:
    """JS `null` and `undefined` (JsNull and None in Python)."""
    return value is None or type(value).__name__ == "JsNull"


class _Buf:
    """A GPUBuffer and its size: hashable by identity (bind groups are cached by buffer)."""

    __slots__ = ("js", "size")

    def __init__(self, handle: Any, size: int) -> None:
        self.js = handle
        self.size = size


class BrowserRuntime(CommandBatch):
    """A `navigator.gpu` device and its queue with one pending command encoder.

    Build it with `BrowserRuntime.create()` (async, any caller) or `create_sync()` (under
    JSPI); `WebGpu()` in a page calls `create_sync()` itself, so `device("webgpu")` works.
    """

    def __init__(self, adapter: Any, device: Any, info: AdapterInfo,
                 precompiled: Any = None, described: Any = None) -> None:
        js, ffi = _ffi()
        # a JS Map "entry\nsource" -> Promise<GPUComputePipeline>: kernels pyrite.js compiled
        # while Pyodide booted (see recorder.py)
        self._precompiled = precompiled
        # the adapter's features and limits as the worker read them (gpu_start.js), or None
        self._described = described
        self._js = js
        self._ffi = ffi
        self._adapter_js = adapter
        self._device = device
        self._queue = device.queue
        self._adapter = info
        self._limits = Limits(**{k: int(getattr(device.limits, v))
                                 for k, v in _LIMIT_NAMES.items()})
        self._features = frozenset(str(f) for f in device.features)
        usage = js.GPUBufferUsage
        self._usage = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        self._read_usage = usage.MAP_READ | usage.COPY_DST
        self._map_read = js.GPUMapMode.READ
        self._pipelines: dict[Hashable, Any] = {}
        self._arrays: dict[tuple[Any, ...], Any] = {}  # replayed steps' lists, as JS arrays
        self._step_js: Any = None
        super().__init__()  # the batch; its `stats` are the page's timings
        # pipelines made in the page (`pipelines`: compiled now, `precompiled`: taken from
        # pyrite.js's list) and the time spent in `pipeline()` for them, waits included
        self.stats.update({"pipelines": 0, "precompiled": 0, "pipeline_ms": 0.0})
        self.lost_reason: str | None = None
        self._errors: list[str] = []  # uncaptured errors not yet raised
        self._scopes: list[tuple[Hashable, Any]] = []  # (kernel, its compile error promise)
        # inside allocations_checked_together: (size, its out-of-memory scope's promise)
        self._unchecked: list[tuple[int, Any]] | None = None
        self._keep = [ffi.create_proxy(self._on_error)]  # JS holds these callbacks
        device.addEventListener("uncapturederror", self._keep[0])
        device.lost.then(ffi.create_once_callable(self._on_lost))

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    async def create(cls, power_preference: str | None = None) -> BrowserRuntime:
        """Request an adapter and a device (awaiting the browser)."""
        gpu = _navigator_gpu()
        options = {"powerPreference": power_preference} if power_preference else {}
        adapter = await gpu.requestAdapter(_obj(options))
        device = await cls._device_request(adapter)
        return cls(adapter, device, cls._info(adapter))

    @classmethod
    def from_js(cls, adapter: Any, device: Any, precompiled: Any = None,
                described: Any = None) -> BrowserRuntime:
        """A runtime over an adapter and device that JavaScript requested (pyrite.js does,
        with REQUESTED_FEATURES and REQUESTED_LIMITS), the pipelines it compiled and its
        description of the adapter ({features, limits}: what `describe` reports)."""
        return cls(adapter, device, cls._info(adapter), precompiled, described)

    @classmethod
    def create_sync(cls, power_preference: str | None = None) -> BrowserRuntime:
        """As `create`, waiting through JSPI (for `WebGpu()` built from synchronous code)."""
        gpu = _navigator_gpu()
        options = {"powerPreference": power_preference} if power_preference else {}
        adapter = _wait(gpu.requestAdapter(_obj(options)))
        device = _wait(cls._device_request(adapter))
        return cls(adapter, device, cls._info(adapter))

    @staticmethod
    def _device_request(adapter: Any) -> Any:
        if _absent(adapter):
            raise BackendUnavailable(
                "webgpu: the browser has WebGPU but gave no adapter (GPU blocklisted or "
                "disabled; in Chromium check chrome://gpu, or start with "
                "--enable-unsafe-webgpu)")  # what else to do is each page's to say
        features = [f for f in REQUESTED_FEATURES if adapter.features.has(f)]
        limits = {name: getattr(adapter.limits, name) for name in REQUESTED_LIMITS}
        return adapter.requestDevice(_obj({"label": "pyrite", "requiredFeatures": features,
                                           "requiredLimits": limits}))

    @staticmethod
    def _info(adapter: Any) -> AdapterInfo:
        info = adapter.info
        name = " ".join(p for p in (str(info.vendor or ""), str(info.architecture or "")) if p)
        kind = "CPU" if "swiftshader" in name.lower() else "GPU"
        return AdapterInfo(0, name or "browser adapter", str(info.vendor or ""),
                           "WebGPU (browser)", kind, str(info.description or ""))

    # ---- what the device is ----------------------------------------------------------------
    @property
    def adapter(self) -> AdapterInfo:
        return self._adapter

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def features(self) -> frozenset[str]:
        return self._features

    def describe(self) -> dict[str, object]:
        """Adapter, features and every limit the browser reports (the page's `pyrite info`)."""
        if self._described is not None:  # read by the worker: one conversion, not a proxy each
            described = self._described.to_py()
            features = [str(f) for f in described["features"]]
            limits = {str(k): int(v) for k, v in described["limits"].items()}
        else:
            limits = {}
            for name in dir(self._adapter_js.limits):
                if name.startswith("max") or name.startswith("min"):
                    limits[name] = int(getattr(self._adapter_js.limits, name))
            features = sorted(str(f) for f in self._adapter_js.features)
        return {"adapter": str(self._adapter), "vendor": self._adapter.vendor,
                "description": self._adapter.description, "features": features,
                "limits": limits}

    # ---- errors the browser reports on its own ---------------------------------------------
    def _on_error(self, event: Any) -> None:
        self._errors.append(str(event.error.message))

    def _on_lost(self, info: Any) -> None:
        self.lost_reason = f"{info.reason}: {info.message}".strip(": ") or "lost"

    def _compiled(self) -> tuple[list[tuple[Hashable, Any]], Any]:
        """The kernels compiled since the last check and their compile-error answers as one
        promise (None when there are none: nothing to wait for). The answers have arrived by
        the time a readback completes."""
        scopes, self._scopes = self._scopes, []
        if not scopes:
            return scopes, None
        return scopes, self._js.Promise.all(self._ffi.to_js([p for _, p in scopes]))

    @staticmethod
    def _raise_compile_errors(scopes: list[tuple[Hashable, Any]], errors: Any) -> None:
        for (key, _), error in zip(scopes, errors, strict=True):
            if not _absent(error):
                raise compile_error(key, error.message)

    def _check(self) -> None:
        if self.lost_reason is not None:
            raise DeviceLostError(f"webgpu: the device was lost ({self.lost_reason})")
        if self._errors:
            errors, self._errors = self._errors, []
            text = "; ".join(errors)
            if "memory" in text.lower():
                raise DeviceMemoryError(f"webgpu: the device is out of memory ({text}); free "
                                        f"tensors or use smaller batches")
            raise PyriteError(f"webgpu: the browser's WebGPU reported an error (a pyrite bug; "
                              f"PYRITE_DEBUG=wgsl prints kernels): {text}")

    # ---- buffers ---------------------------------------------------------------------------
    def create_buffer(self, size: int) -> Buffer:
        self._check()
        desc = _obj({"size": size, "usage": self._usage})
        if size < _CHECKED_ALLOCATION:
            return _Buf(self._device.createBuffer(desc), size)
        self._device.pushErrorScope("out-of-memory")
        handle = self._device.createBuffer(desc)
        if self._unchecked is not None:
            self._unchecked.append((size, self._device.popErrorScope()))
            return _Buf(handle, size)
        error = _wait(self._device.popErrorScope())
        if not _absent(error):
            handle.destroy()
            raise DeviceMemoryError(f"webgpu: could not allocate {size} bytes "
                                    f"({error.message}); free tensors or use smaller batches")
        return _Buf(handle, size)

    @contextmanager
    def allocations_checked_together(self) -> Iterator[None]:
        """Within it, the large buffers' out-of-memory checks wait for the GPU once, at the
        end, instead of once per buffer (a model's load from its record makes several: three
        waits of 16-33 ms each in the MNIST load after a restore). A failed one raises
        DeviceMemoryError at the end, as one checked at once would (without the memory
        pool's second try after giving its free buffers back)."""
        if self._unchecked is not None:  # nested: the outer one checks
            yield
            return
        self._unchecked = []
        try:
            yield
        finally:
            pending, self._unchecked = self._unchecked, None
        if not pending:
            return
        js, ffi = _ffi()
        errors = _wait(js.Promise.all(ffi.to_js([p for _, p in pending])))
        failed = [(size, e) for (size, _), e in zip(pending, errors, strict=True)
                  if not _absent(e)]
        if failed:
            size, error = failed[0]
            raise DeviceMemoryError(f"webgpu: could not allocate {size} bytes "
                                    f"({error.message}); free tensors or use smaller batches")

    def create_buffer_with_data(self, data: bytes, *, uniform: bool = False) -> Buffer:
        usage = self._js.GPUBufferUsage
        size = max(4, (len(data) + 3) // 4 * 4)
        handle = self._device.createBuffer(_obj({
            "size": size, "usage": (usage.UNIFORM if uniform else usage.STORAGE) | usage.COPY_DST,
        }))
        self._queue.writeBuffer(handle, 0, self._bytes(data))
        return _Buf(handle, size)

    def destroy_buffer(self, buffer: Buffer) -> None:
        self.flush()
        self._groups.clear()
        buffer.js.destroy()  # type: ignore[attr-defined]

    def _bytes(self, data: bytes) -> Any:
        return self._ffi.to_js(memoryview(data))  # a Uint8Array copy of the bytes

    def write_buffer(self, buffer: Buffer, offset: int, data: bytes) -> None:
        self.flush()
        self._queue.writeBuffer(buffer.js, offset, self._bytes(data))  # type: ignore[attr-defined]

    def _staged(self, buffer: Buffer, offset: int, size: int) -> Any:
        staging = self._device.createBuffer(_obj({"size": size, "usage": self._read_usage}))
        self._end_pass()
        self._batch().copyBufferToBuffer(buffer.js, offset, staging, 0,  # type: ignore[attr-defined]
                                         size)
        self.flush()
        return staging

    def read_buffer(self, buffer: Buffer, offset: int, size: int) -> bytes:
        start = time.perf_counter()
        self.flush()
        if size == 0:
            return b""
        staging = self._staged(buffer, offset, size)
        failed = None
        try:
            _wait(staging.mapAsync(self._map_read))
        except Exception as exc:  # noqa: BLE001 - raised below, after what explains it
            failed = exc
        scopes, pending = self._compiled()
        errors = _wait(pending) if scopes else ()
        return self._read_mapped(staging, failed, start, scopes, errors)

    async def read_buffer_async(self, buffer: Buffer, offset: int, size: int) -> bytes:
        start = time.perf_counter()
        self.flush()
        if size == 0:
            return b""
        staging = self._staged(buffer, offset, size)
        failed = None
        try:
            await staging.mapAsync(self._map_read)
        except Exception as exc:  # noqa: BLE001 - raised below, after what explains it
            failed = exc
        scopes, pending = self._compiled()
        errors = await pending if scopes else ()
        return self._read_mapped(staging, failed, start, scopes, errors)

    def _read_mapped(self, staging: Any, failed: Exception | None, start: float,
                     scopes: list[tuple[Hashable, Any]], errors: Any) -> bytes:
        """The mapped bytes, or the error that explains a failure: a kernel's compile error,
        a lost device or a browser error, else the failed map itself."""
        try:
            self._raise_compile_errors(scopes, errors)
            self._check()
            if failed is not None:
                raise failed
            data: bytes = staging.getMappedRange().to_bytes()
            staging.unmap()
        finally:
            staging.destroy()
        self.stats["readbacks"] += 1
        self.stats["readback_ms"] += (time.perf_counter() - start) * 1000
        return data

    # ---- pipelines and dispatch ------------------------------------------------------------
    def pipeline(self, key: Hashable, source: str, entry_point: str = "main",
                 checks: int = ALL_CHECKS) -> Pipeline:
        # a page's WebGPU compiles every module with its run-time checks (`checks` is moot)
        found = self._pipelines.get((key, entry_point))
        if found is not None:
            return found
        start = time.perf_counter()
        try:
            return self._new_pipeline(key, source, entry_point)
        finally:
            self.stats["pipeline_ms"] += (time.perf_counter() - start) * 1000

    def _new_pipeline(self, key: Hashable, source: str, entry_point: str) -> Pipeline:
        found = None
        if self._precompiled is not None:
            found = self._take_precompiled(key, source, entry_point)
            self.stats["precompiled"] += found is not None
        if found is None:
            self.stats["pipelines"] += 1
            self._check()
            device = self._device
            device.pushErrorScope("validation")
            module = device.createShaderModule(_obj({"code": source}))
            found = device.createComputePipeline(_obj({
                "layout": "auto", "compute": {"module": module, "entryPoint": entry_point}}))
            scope = device.popErrorScope()
            if hasattr(key, "compile_error"):
                # a user's kernel (pyrite.extend) is checked now, before its first dispatch:
                # one round trip, and a mistake never reaches a command buffer
                error = _wait(scope)
                if not _absent(error):
                    raise compile_error(key, error.message)
            else:
                # not awaited here (a round trip to the GPU process per kernel): checked with
                # the next readback, before its result is used
                self._scopes.append((key, scope))
            self._pipelines[(key, entry_point)] = found
        return found

    def _take_precompiled(self, key: Hashable, source: str, entry_point: str) -> Any:
        name = f"{entry_point}\n{source}"
        pending = self._precompiled.get(name)
        if _absent(pending):
            return None
        self._precompiled.delete(name)
        try:
            found = _wait(pending)
        except Exception as exc:  # noqa: BLE001 - a GPUPipelineError from the browser
            raise compile_error(key, exc) from exc
        self._pipelines[(key, entry_point)] = found
        return found

    # ---- the batch's calls, in the browser's spelling (batch.py) ---------------------------
    def _new_encoder(self) -> Any:
        return self._device.createCommandEncoder()

    def _begin_pass(self, encoder: Any) -> Any:
        return encoder.beginComputePass()

    def _record(self, cpass: Any, pipeline: Pipeline, group: BindGroup,
                workgroups: tuple[int, int, int]) -> None:
        cpass.setPipeline(pipeline)
        cpass.setBindGroup(0, group)
        cpass.dispatchWorkgroups(*workgroups)

    def replay(self, dispatches: Sequence[Dispatch], writes: Sequence[Write] = ()) -> None:
        """A replayed step in one call into JavaScript: the metadata writes (their bytes as one
        typed array), a new command encoder and compute pass with every dispatch, the submit.
        The dispatch list and the writes' targets cross as JS arrays made once and kept (per
        set of bind groups and of buffers), so a step converts only its new bytes."""
        self.flush()  # work recorded before goes first (and the browser's errors are raised)
        items = self._kept([[p, g, list(w)] for p, g, w in dispatches],
                           tuple((id(p), id(g), w) for p, g, w in dispatches), dispatches)
        targets, blob = None, None
        if writes:
            places, at = [], 0
            for buffer, offset, data in writes:
                places.append([buffer.js, offset, at, len(data)])  # type: ignore[attr-defined]
                at += len(data)
            targets = self._kept(places, tuple((id(b), o, len(d)) for b, o, d in writes), writes)
            blob = self._bytes(b"".join(data for _, _, data in writes))
        if self._step_js is None:
            self._step_js = self._js.Function.new("device", "queue", "items", "writes", "blob",
                                                  _STEP_JS)
        self._step_js(self._device, self._queue, items, targets, blob)
        if dispatches:
            self.stats["dispatches"] += len(dispatches)
            self.stats["submits"] += 1

    def _kept(self, value: list[Any], key: tuple[Any, ...], owners: object) -> Any:
        """`value` as a JS array, converted once per `key` (`owners` keeps the ids valid)."""
        found = self._arrays.get(key)
        if found is None:
            found = self._arrays[key] = (self._ffi.to_js(value), owners)
            if len(self._arrays) > _ARRAYS:
                self._arrays.pop(next(iter(self._arrays)))
        return found[0]

    def _record_copy(self, encoder: Any, src: Buffer, src_offset: int, dst: Buffer,
                     dst_offset: int, size: int) -> None:
        encoder.copyBufferToBuffer(src.js, src_offset, dst.js, dst_offset,  # type: ignore[attr-defined]
                                   size)

    def _submit(self, encoder: Any) -> None:
        self._queue.submit(self._ffi.to_js([encoder.finish()]))

    def _layout_of(self, pipeline: Pipeline) -> Any:
        return pipeline.getBindGroupLayout(0)  # type: ignore[attr-defined]

    def _create_group(self, layout: Any, pairs: tuple[tuple[int, Buffer], ...]) -> BindGroup:
        # JS handles are unhashable: buffers are _Buf wrappers, hashable by identity
        entries = [{"binding": i, "resource": {"buffer": b.js}}  # type: ignore[attr-defined]
                   for i, b in pairs]
        return self._device.createBindGroup(_obj({"layout": layout, "entries": entries}))

    def _before_submit(self) -> None:
        self._check()

    def sync(self) -> None:
        self.flush()
        _wait(self._queue.onSubmittedWorkDone())
        scopes, pending = self._compiled()
        self._raise_compile_errors(scopes, _wait(pending) if scopes else ())
        self._check()
