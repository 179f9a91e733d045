"""The demo models as the server runs them: loaded once per name, one prediction at a time each.

Predictions run natively with the same Python code the pages run in Pyodide
(`pyrite.demos.registry`), so the API gives the reference answer for a page's input.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pyrite
from pyrite.demos import registry
from pyrite.demos.registry import DemoModel, ModelMissing
from pyrite.module import Module

from .errors import ModelLoadError


@dataclass(frozen=True)
class _Loaded:
    demo: DemoModel
    model: Module
    backend: str  # the device's name, as results report it


class Predictor:
    """Runs `registry.get(name)` models on `device` (a name such as "numpy" or "webgpu").

    Thread-safe: each model has a lock, so requests for one model run one after another (a
    model's device state is not shared between threads) while different models run in parallel.
    """

    def __init__(self, device: str = "numpy") -> None:
        self.device = device
        self._loaded: dict[str, _Loaded] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def _load(self, name: str) -> _Loaded:
        loaded = self._loaded.get(name)
        if loaded is None:
            demo = registry.get(name)
            try:
                backend = pyrite.device(self.device)
                loaded = _Loaded(demo, demo.load(backend), backend.name)
            except ModelMissing as exc:
                raise ModelLoadError(f"{name}: the model is not installed on this server: "
                                     f"{exc}") from exc
            except Exception as exc:
                raise ModelLoadError(f"{name}: cannot load the model on {self.device!r}: "
                                     f"{type(exc).__name__}: {exc}; start the server with "
                                     f"another --api-device (numpy always works)") from exc
            self._loaded[name] = loaded
        return loaded

    def predict(self, name: str, inputs: object) -> dict[str, object]:
        """The model's answer for `inputs`, with `"backend"` and `"ms"` (the prediction's time).

        KeyError for an unknown name, ModelLoadError if the model cannot load (or is not
        installed: the message says where to put its files), ValueError
        (naming a valid input) for a bad input.
        """
        with self._lock(name):
            loaded = self._load(name)
            start = time.perf_counter()
            result = loaded.demo.predict(loaded.model, inputs)
            ms = (time.perf_counter() - start) * 1000.0
        return {**result, "backend": f"{loaded.backend} (server)", "ms": round(ms, 3)}

    def predict_many(self, name: str, batch: list[dict[str, object]]) -> list[dict[str, object]]:
        """`predict` for several inputs (checked by `DemoModel.check`) at once: one forward pass
        where the model allows it; each answer's `"ms"` is the whole pass, `"batch"` its size."""
        with self._lock(name):
            loaded = self._load(name)
            start = time.perf_counter()
            results = loaded.demo.predict_many(loaded.model, batch)
            ms = (time.perf_counter() - start) * 1000.0
        return [{**result, "backend": f"{loaded.backend} (server)", "ms": round(ms, 3),
                 "batch": len(batch)} for result in results]


__all__ = ["Predictor"]
