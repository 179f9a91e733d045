"""`PageBackend`: a pyrite backend whose every call runs inside a web page, on the browser's
WebGPU through `webgpu/browser.py` (the other end is `pyrite.wasm.remote`).

The conformance suite's cases take it like any backend (`page<webgpu>`, and
`autodiff<page<webgpu>>` for the gradient cases: the graph is kept here, every kernel of both
passes runs in the page), so the same case definitions check the browser runtime. Tensors are
handles to page objects; their shape and dtype are known here, so the front end's checks cost
no round trip. A handle dropped here is freed in the page with the next request.
"""

from __future__ import annotations

import base64
import json
import weakref
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pyrite
from pyrite import errors
from pyrite.backend.base import Backend
from pyrite.backend.reduce import Reduction
from pyrite.backend.registry import Op
from pyrite.data import TensorData
from pyrite.distribution import Bernoulli, Normal, Uniform
from pyrite.dtype import DType, Kind

#: methods answered here, never forwarded
#: run here: metadata, and user ops (pyrite.extend), whose composite calls the forwarded
#: primitives (their Python definitions live in this process; test_extend_page.py runs them
#: in the page itself)
_LOCAL = {"shape", "dtype", "same_shape_and_dtype", "default_dtype", "supports",
          "to_data_async", "custom"}


class PageTensor:
    """A tensor held by the page: its id there, shape and dtype."""

    __slots__ = ("id", "shape", "dtype", "__weakref__")

    def __init__(self, key: int, shape: tuple[int, ...], dtype: DType) -> None:
        self.id = key
        self.shape = shape
        self.dtype = dtype


class PageObject:
    """Anything else the page returned (kept there, handed back as is)."""

    __slots__ = ("id", "__weakref__")

    def __init__(self, key: int) -> None:
        self.id = key


class PageChannel:
    """Sends batches of calls to `pyrite.wasm.remote.call` in a page with pyrite loaded;
    `evaluate(script, arg)` runs JS in that page (`PageSession.evaluate`)."""

    def __init__(self, evaluate: Callable[[str, Any], Any], device: str = "webgpu") -> None:
        self.evaluate = evaluate
        self.device = device
        self.freed: list[int] = []
        self.requests = 0

    def request(self, calls: list[dict[str, Any]]) -> list[Any]:
        wanted = len(calls)
        if self.freed:
            calls = [{"m": "free", "a": self.freed}, *calls]
            self.freed = []
        self.requests += 1
        answer = json.loads(self.evaluate(
            "([r, d]) => window.pyriteModule.call('pyrite.wasm.remote.call', r, d)",
            [json.dumps(calls), self.device]))
        if "error" in answer:
            raise _error(answer["error"])
        results: list[Any] = answer["results"]
        return results[len(results) - wanted:]


def _error(info: dict[str, str]) -> BaseException:
    """The page's exception as the same pyrite (or builtin) error type here."""
    import builtins

    kind = getattr(errors, info["type"], None) or getattr(builtins, info["type"], None)
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        kind = errors.PyriteError
    return kind(f"{info['message']} [in the page: {info['where']}]")


class PageBackend(Backend):
    """The page's `device` as a backend here; build with a connected `PageChannel`."""

    is_autodiff = False

    def __init__(self, channel: PageChannel) -> None:
        self.channel = channel
        self.name = f"page-{channel.device}"  # as registered, so autodiff<page-webgpu> parses
        float_dtype, int_dtype = channel.request([{"m": "attr", "a": ["float_dtype"]},
                                                  {"m": "attr", "a": ["int_dtype"]}])
        self.float_dtype = DType[float_dtype["$dtype"]]
        self.int_dtype = DType[int_dtype["$dtype"]]
        self._supports: dict[DType, bool] = {}

    # ---- answered here ---------------------------------------------------------------------
    def shape(self, x: PageTensor) -> tuple[int, ...]:
        return x.shape

    def dtype(self, x: PageTensor) -> DType:
        return x.dtype

    def same_shape_and_dtype(self, a: Any, b: Any) -> bool:
        return isinstance(b, PageTensor) and a.shape == b.shape and a.dtype is b.dtype

    def supports(self, dtype: DType) -> bool:
        if dtype not in self._supports:
            self._supports[dtype] = bool(self._call("supports", dtype))
        return self._supports[dtype]

    async def to_data_async(self, x: PageTensor) -> TensorData:
        data: TensorData = self._call("to_data", x)
        return data

    # ---- the wire --------------------------------------------------------------------------
    def _encode(self, value: Any) -> Any:
        if isinstance(value, PageTensor):
            return {"$t": value.id}
        if isinstance(value, PageObject):
            return {"$obj": value.id}
        if isinstance(value, tuple):
            return {"$tuple": [self._encode(v) for v in value]}
        if isinstance(value, list):
            return [self._encode(v) for v in value]
        if isinstance(value, TensorData):
            return {"$data": base64.b64encode(value.bytes).decode(),
                    "shape": list(value.shape), "dtype": value.dtype.name}
        if isinstance(value, DType):
            return {"$dtype": value.name}
        if isinstance(value, Kind):
            return {"$kind": value.name}
        if isinstance(value, Op):
            return {"$op": value.name}
        if isinstance(value, Reduction):
            return {"$reduction": value.name}
        if isinstance(value, (Uniform, Normal, Bernoulli)):
            return {"$dist": type(value).__name__, "fields": asdict(value)}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise TypeError(f"page backend: cannot send {type(value).__name__} to the page")

    def _decode(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "$t" in value:
            return self._track(PageTensor(value["$t"], tuple(value["shape"]),
                                          DType[value["dtype"]]))
        if "$obj" in value:
            return self._track(PageObject(value["$obj"]))
        if "$tuple" in value:
            return tuple(self._decode(v) for v in value["$tuple"])
        if "$data" in value:
            return TensorData.raw(base64.b64decode(value["$data"]), tuple(value["shape"]),
                                  DType[value["dtype"]])
        if "$dtype" in value:
            return DType[value["$dtype"]]
        return value

    def _track(self, handle: PageTensor | PageObject) -> Any:
        weakref.finalize(handle, self.channel.freed.append, handle.id).atexit = False
        return handle

    def _call(self, method: str, *args: Any) -> Any:
        (result,) = self.channel.request([{"m": method, "a": self._encode(list(args))}])
        return self._decode(result)


def _forwarder(method: str) -> Any:
    def forward(self: PageBackend, *args: Any) -> Any:
        return self._call(method, *args)
    forward.__name__ = method
    return forward


# Every public method of the contract (primitives, composites, module ops) runs in the page.
for _name in dir(Backend):
    if not _name.startswith("_") and _name not in _LOCAL and callable(getattr(Backend, _name)):
        setattr(PageBackend, _name, _forwarder(_name))
PageBackend.__abstractmethods__ = frozenset()

__all__ = ["PageBackend", "PageChannel", "PageTensor", "pyrite"]
