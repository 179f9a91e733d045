"""A page's device, driven from outside the page: backend calls in, results out, as JSON.

The test suite runs its conformance cases against the browser's WebGPU this way: the cases and
their numpy references stay in pytest, every backend call (creation, each op, the composites
and module ops of `WebGpu`, readback) runs here, in the page, through `webgpu/browser.py`.
`tests/browser/page_backend.py` is the other end. One request is a JSON list of calls
`{"m": method, "a": [args]}` run in order (so uploads and an op travel together); the answer
is the list of results, or stops at the first error, which comes back as its type and message
so the caller raises the same pyrite error.

Values on the wire: tensors the page holds are `{"$t": id}` (with shape and dtype when
returned); `TensorData` is `{"$data": base64, "shape", "dtype"}`; dtypes, ops, reductions and
distributions travel by name; tuples as `{"$tuple": [...]}`; anything else the page returns is
kept here as an opaque `{"$obj": id}`. The caller frees ids it no longer holds (`"free"`).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pyrite
from pyrite import distribution, errors
from pyrite.backend import reduce as reductions
from pyrite.backend.reduce import Reduction
from pyrite.backend.registry import REGISTRY, Op
from pyrite.data import TensorData
from pyrite.dtype import DType, Kind

_REDUCTIONS = {r.name: r for r in vars(reductions).values() if isinstance(r, Reduction)}
_DISTRIBUTIONS = {"Uniform": distribution.Uniform, "Normal": distribution.Normal,
                  "Bernoulli": distribution.Bernoulli}
_held: dict[int, Any] = {}
_next = [1]


def _keep(value: Any) -> int:
    key = _next[0]
    _next[0] += 1
    _held[key] = value
    return key


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$t" in value:
        return _held[value["$t"]]
    if "$obj" in value:
        return _held[value["$obj"]]
    if "$tuple" in value:
        return tuple(_decode(v) for v in value["$tuple"])
    if "$data" in value:
        return TensorData.raw(base64.b64decode(value["$data"]), tuple(value["shape"]),
                              DType[value["dtype"]])
    if "$dtype" in value:
        return DType[value["$dtype"]]
    if "$kind" in value:
        return Kind[value["$kind"]]
    if "$op" in value:
        return REGISTRY[value["$op"]]
    if "$reduction" in value:
        return _REDUCTIONS[value["$reduction"]]
    if "$dist" in value:
        return _DISTRIBUTIONS[value["$dist"]](**value["fields"])
    return {k: _decode(v) for k, v in value.items()}


def _encode(backend: pyrite.Backend, value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"$tuple": [_encode(backend, v) for v in value]}
    if isinstance(value, list):
        return [_encode(backend, v) for v in value]
    if isinstance(value, TensorData):
        return {"$data": base64.b64encode(value.bytes).decode(), "shape": list(value.shape),
                "dtype": value.dtype.name}
    if isinstance(value, DType):
        return {"$dtype": value.name}
    if isinstance(value, Op):
        return {"$op": value.name}
    if _is_prim(backend, value):
        return {"$t": _keep(value), "shape": list(backend.shape(value)),
                "dtype": backend.dtype(value).name}
    return {"$obj": _keep(value)}


def _is_prim(backend: pyrite.Backend, value: Any) -> bool:
    try:
        backend.shape(value)
        backend.dtype(value)
    except Exception:  # noqa: BLE001 - not one of this backend's tensors
        return False
    return True


def _error(exc: BaseException) -> dict[str, str]:
    kind = type(exc)
    name = kind.__name__ if hasattr(errors, kind.__name__) or kind.__module__ == "builtins" \
        else "PyriteError" if isinstance(exc, errors.PyriteError) else "RuntimeError"
    return {"type": name, "message": str(exc), "where": f"{kind.__module__}.{kind.__name__}"}


def call(request: str, device: str = "webgpu") -> str:
    """Run a JSON list of backend calls on `device`; the JSON list of results (see above)."""
    backend = pyrite.device(device)
    calls = json.loads(request)
    results: list[Any] = []
    for item in calls:
        method = item["m"]
        try:
            if method == "free":
                for key in item["a"]:
                    _held.pop(key, None)
                results.append(None)
                continue
            if method == "attr":
                results.append(_encode(backend, getattr(backend, item["a"][0])))
                continue
            args = _decode(item["a"])
            results.append(_encode(backend, getattr(backend, method)(*args)))
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
            return json.dumps({"results": results, "error": _error(exc)})
    return json.dumps({"results": results})


def held() -> int:
    """How many page objects the caller still holds (a leak check for tests)."""
    return len(_held)


__all__ = ["call", "held"]
