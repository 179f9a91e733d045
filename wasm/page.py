"""The Python side of a page: what `worker.js` calls inside Pyodide (see pyrite.js's API).

`start(device)` chooses and builds the device (`webgpu` through the browser's WebGPU, `numpy`
when the page could load numpy, `auto` for the first that works) and says what it got;
`load_model(name, record, files)` builds a demo model from its record's bytes (and those of
the other files it loads, such as labels); `predict(name, inputs)`
runs it with the same code as natively (`pyrite.demos.registry`) and says where the time went.
Every function returns JSON-able values; errors propagate as Python exceptions, which the worker
turns into rejected promises carrying the Python message.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from typing import Any

import pyrite
from pyrite.errors import BackendUnavailable, DeviceLostError
from pyrite.module import Module

from . import page_autotune

_DEVICES = ("webgpu", "numpy")
_models: dict[str, Module] = {}
_records: dict[str, tuple[bytes, dict[str, bytes]]] = {}  # to rebuild them after a device loss
_state: dict[str, Any] = {"device": None}


def _runtime(backend: pyrite.Backend) -> Any:
    """The browser runtime under the page's webgpu device, or None (numpy)."""
    kernels = getattr(backend, "_kernels", None)
    return getattr(getattr(kernels, "runtime", None), "inner", None)


def _runtime_stats(backend: pyrite.Backend) -> dict[str, float] | None:
    stats = getattr(_runtime(backend), "stats", None)
    return dict(stats) if stats is not None else None


def _build(name: str, backend: pyrite.Backend, record: bytes,
           files: Mapping[str, bytes]) -> Module:
    """Demo model `name` from its record, its buffers' out-of-memory checks waiting for the
    GPU once (BrowserRuntime.allocations_checked_together)."""
    from pyrite.demos import registry

    together = getattr(_runtime(backend), "allocations_checked_together", None)
    with together() if together is not None else contextlib.nullcontext():
        return registry.get(name).load(backend, record, files)


def _webgpu(gpu: Any) -> pyrite.Backend:
    # `gpu`: the adapter, device and precompiled pipelines pyrite.js prepared while Pyodide
    # booted, or None; then the same path as natively: `device("webgpu")` builds WebGpu(),
    # whose runtime is the browser's (BrowserRuntime.create_sync, waiting through JSPI)
    import pyrite.webgpu  # noqa: F401 - registers the device

    if gpu is not None:
        from pyrite.webgpu import WebGpu, registration
        from pyrite.webgpu.browser import BrowserRuntime

        runtime = BrowserRuntime.from_js(gpu.adapter, gpu.device, gpu.pipelines,
                                         getattr(gpu, "described", None))
        prepared = registration.default(WebGpu(runtime=runtime))
        pyrite.register_backend("webgpu", lambda: prepared)
    backend = pyrite.device("webgpu")
    kernels = backend.kernels  # type: ignore[attr-defined]  # request the device now
    if kernels.autotune.mode != "off":
        kernels.autotune.store = page_autotune.PageTuneStore()
    return backend


def _numpy() -> pyrite.Backend:
    try:
        import numpy  # noqa: F401 - present only when the page loaded Pyodide's numpy
    except ImportError as exc:
        raise BackendUnavailable("numpy is not loaded in this page (the npm Pyodide package "
                                 "does not carry it; serve a full Pyodide distribution with "
                                 "`pyrite serve --pyodide-packages DIR_OR_URL`)") from exc
    return pyrite.device("numpy")


def start(device: str = "auto", gpu: Any = None, autotune: str = "cached") -> dict[str, object]:
    """Build the page's device; `auto` tries webgpu, then numpy. Says what it got and why
    the others were not used. `autotune` (on, cached, off): how webgpu picks kernel variants,
    with the choices kept in the page's browser storage (page_autotune.py)."""
    wanted = _DEVICES if device == "auto" else (device,)
    if device != "auto" and device not in _DEVICES:
        raise ValueError(f"device {device!r} is not available in a page; use one of "
                         f"{', '.join(_DEVICES)} or 'auto'")
    tried: dict[str, str] = {}
    # "cached" by default: tuning takes time on a first use (SqueezeNet's first prediction
    # took 16.2 s with it and 3.6 s without, SwiftShader); pages that tune ("on") keep the
    # choices in browser storage, and later visits read them
    os.environ["PYRITE_AUTOTUNE"] = page_autotune.check_mode(autotune)
    for name in wanted:
        try:
            backend = _webgpu(gpu) if name == "webgpu" else _numpy()
        except BackendUnavailable as exc:  # its message starts "webgpu: ": said once below
            tried[name] = str(exc).removeprefix(f"{name}: ")
            continue
        _state["device"] = name
        os.environ["PYRITE_BACKEND"] = name  # tensors made without a device go there
        return {"device": name, "unavailable": tried, **info(backend)}
    raise BackendUnavailable("; ".join(f"{k}: {v}" for k, v in tried.items()))


def device() -> pyrite.Backend:
    name = _state["device"]
    if name is None:
        raise RuntimeError("pyrite is not started in this page: call pyrite.load() first")
    return pyrite.device(name)


def info(backend: pyrite.Backend | None = None) -> dict[str, object]:
    """The device in use: adapter, features and limits for webgpu (the page's `pyrite info`)."""
    import sys

    backend = backend or device()
    out: dict[str, object] = {"device": backend.name, "python": sys.version.split()[0],
                              "pyrite": pyrite.__version__}
    describe = getattr(backend, "adapter_info", None)
    if describe is not None:
        out["adapter"] = describe()
    return out


def _bytes(data: Any) -> bytes:
    """The bytes of `data`: bytes-like, or a JavaScript typed array (what worker.js passes,
    a proxy), copied in one go by `to_bytes()`. `bytes()` of the proxy would read it one
    element at a time through JavaScript: 174 ms for MNIST's 1 MB record under Node (0.2 ms
    with `to_bytes`), which was most of a repeat visit's model step."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    to_bytes = getattr(data, "to_bytes", None)
    if to_bytes is None:
        raise TypeError(f"expected the bytes of a file (bytes or a Uint8Array), got "
                        f"{type(data).__name__}")
    return bytes(to_bytes())


def load_model(name: str, record: Any,
               files: Mapping[str, Any] | None = None) -> dict[str, object]:
    """Build demo model `name` on the page's device from its record's bytes and those of its
    other files (by the names the manifest gives them): bytes-like, or the Uint8Arrays the
    worker passes."""
    backend = device()
    before = _runtime_stats(backend)
    start = time.perf_counter()
    _records[name] = (_bytes(record), {k: _bytes(v) for k, v in (files or {}).items()})
    model = _build(name, backend, *_records[name])
    _models[name] = model
    out: dict[str, object] = {"model": name, "device": backend.name,
                              "params": model.num_params(),
                              "ms": (time.perf_counter() - start) * 1000}
    after = _runtime_stats(backend)
    if before is not None and after is not None:  # on webgpu: e.g. the wait for pipelines
        out.update({k: after[k] - before[k] for k in after})
    return out


def predict(name: str, inputs: Any) -> dict[str, object]:
    """Run model `name` (loaded before) on `inputs` (a dict, as `/api/predict` takes).

    Adds `backend`, `precision` (how the weights are stored: "int8", "f32", ...), `ms` (the
    whole call) and, on webgpu, what the runtime counted during
    it: `dispatches`, `submits`, `readbacks` and `readback_ms` (submitting, the GPU's work and
    the wait for the mapped result; the rest of `ms` is Python and its calls into WebGPU).
    If the GPU device was lost, a new one is requested, the loaded models are rebuilt from
    their records and the prediction runs again; `recovered` then says what happened.
    """
    if name not in _models:
        raise KeyError(f"model {name!r} is not loaded in this page; load it first "
                       f"(pyrite.load({{models: [{name!r}]}}))")
    try:
        return _predict(name, inputs)
    except DeviceLostError as exc:
        _recover()
        out = _predict(name, inputs)
        out["recovered"] = f"the GPU device was lost and has been restored: {exc}"
        return out


def _recover() -> None:
    """A new device for the page after a loss, with every loaded model rebuilt on it."""
    backend = device()
    reset = getattr(backend, "reset", None)
    if reset is None:
        raise BackendUnavailable(f"{backend.name} cannot be restarted in this page")
    reset()
    for name, (record, files) in _records.items():
        _models[name] = _build(name, backend, record, files)


def _predict(name: str, inputs: Any) -> dict[str, object]:
    from pyrite.demos import registry

    model = _models[name]
    backend = device()
    before = _runtime_stats(backend)
    start = time.perf_counter()
    out = registry.get(name).predict(model, inputs)
    out["ms"] = (time.perf_counter() - start) * 1000
    out["backend"] = f"{backend.name} (page)"
    out["precision"] = _precision(model)
    after = _runtime_stats(backend)
    if before is not None and after is not None:
        out.update({k: after[k] - before[k] for k in after})
    return out


def _precision(model: Any) -> str:
    from pyrite.demos.quantize import weights_precision

    return weights_precision(model)


__all__ = ["device", "info", "load_model", "predict", "start"]
