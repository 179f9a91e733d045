"""Run an ONNX graph with pyrite's tensors: `OnnxModel`, the module `pyrite.onnx.load` returns.

Placement: float initializers read as tensors become trainable `Param`s on the model's device.
Everything that only describes shapes stays on a host device (numpy natively; in a page without
numpy, the model's device): integer initializers, `Constant` outputs, `Shape` results and any
node whose inputs are all host values. So `Reshape(x, Concat(Shape(x)[0], -1))` costs no
readback: the shape arithmetic runs on the host and only `x` lives on the GPU.
"""

from __future__ import annotations

import keyword
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...backend.base import Backend
from ...capture import compile as compile_step
from ...data import TensorData
from ...device import device as resolve_device
from ...dtype import DType
from ...errors import OnnxError, PyriteError
from ...module import Module, Param
from ...tensor import Tensor, from_data
from .graph import Graph, Node
from .registry import OPS, OpSpec, check, keywords, moved_attributes
from .safety import FORBIDDEN

PathLike = str | os.PathLike[str]
Device = str | Backend | None


def host_device() -> Backend | None:
    """numpy when it is installed (shape arithmetic never touches the GPU), else None."""
    try:
        return resolve_device("numpy")
    except PyriteError:
        return None


def identifier(name: str, taken: set[str]) -> str:
    """A Python identifier for an ONNX name, unique within `taken` (which it joins).

    Whatever the name holds, the result is ASCII letters, digits and underscores only (any
    other character becomes `_`), never starts with a digit or an underscore (so never a
    dunder), and is never a keyword or a name of `_RESERVED`; names that differ only in the
    characters replaced get `_2`, `_3`, ... rather than colliding.
    """
    ident = _NOT_IDENTIFIER.sub("_", name).strip("_") or "v"
    if ident[0].isdigit():
        ident = "v_" + ident
    if ident in _RESERVED or keyword.iskeyword(ident):
        ident += "_"
    base, n = ident, 1
    while ident in taken:
        n += 1
        ident = f"{base}_{n}"
    taken.add(ident)
    return ident


_RESERVED = {"forward", "self", "device", "graph", "params", "load", "map", "devices",
             "to_device", "fork", "no_grad", "valid", "train", "record", "None", "True",
             "False", "class", "def", "return", "lambda", "import", "from", "in", "is", "not",
             "and", "or", "if", "else", "for", "while", "with", "as", "pass", "del", "global",
             "yield", "try", "except", "raise", "assert", "break", "continue", "finally",
             "nonlocal", "elif", "async", "await"} | FORBIDDEN
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")


def tensor_positions(graph: Graph) -> set[str]:
    """The values read as tensors somewhere (not only as host numbers like a shape)."""
    out: set[str] = set()
    for node in graph.nodes:
        s = OPS.get(node.op_type)
        for i, name in enumerate(node.inputs):
            if name and (s is None or i not in s.host):
                out.add(name)
    out.update(v.name for v in graph.outputs)
    return out


class _Frozen:
    """Holds the graph and host constants on a module without the module walking them."""

    def __init__(self, graph: Graph, host: dict[str, TensorData], params: dict[str, str]):
        self.graph, self.host, self.params = graph, host, params
        self._placed: tuple[Backend, dict[str, Tensor]] | None = None

    def host_tensors(self, device: Backend) -> dict[str, Tensor]:
        """The host constants as tensors on `device`, made once, not on every forward."""
        if self._placed is None or self._placed[0] is not device:
            self._placed = (device, {n: from_data(d, device=device)
                                     for n, d in self.host.items()})
        return self._placed[1]

    def __repr__(self) -> str:
        return f"<ONNX graph {self.graph.name!r}: {len(self.graph.nodes)} nodes>"

    def __deepcopy__(self, memo: dict[int, Any]) -> _Frozen:
        return self  # immutable by convention; modules are copied as values


def call(spec: OpSpec, node: Node, args: list[Any], opset: int, device: Backend | None) -> Any:
    """Apply one node's operator to its argument values."""
    args = list(args) + moved_attributes(spec, node, opset)
    while args and args[-1] is None:
        args.pop()
    kwargs = keywords(spec, node, opset)
    if "device" in spec.context:
        kwargs["device"] = device
    return spec.fn(*args, **kwargs)


def used_outputs(node: Node) -> int:
    """How many outputs `node` names (omitted trailing ones not counted)."""
    names = list(node.outputs)
    while names and not names[-1]:
        names.pop()
    return len(names)


def _eager_run(model: OnnxModel, feeds: dict[str, Tensor]) -> list[Tensor]:
    return model.run(feeds)


#: `forward` of every ONNX model: captured per model and input layout, then replayed on webgpu
#: (its host-side shape arithmetic runs once, at capture); eager where autodiff tracks a tensor
#: (so gradients reach the params), and `run` stays eager
_run = compile_step(_eager_run, warn=False, inference=True)  # shape reads are the model's own


class OnnxModel(Module):
    """An ONNX graph as a pyrite module: `model(x)` runs it, its float initializers are
    `Param`s (so it trains, saves and loads like any module).

    Build one with `pyrite.onnx.load(path, device)`.
    """

    def __init__(self, graph: Graph, device: Device = None) -> None:
        check(graph)
        dev = resolve_device(device)
        read_as_tensor = tensor_positions(graph)
        host: dict[str, TensorData] = {}
        params: dict[str, str] = {}
        taken: set[str] = set()
        for name, data in graph.initializers.items():
            if data.dtype.is_float and name in read_as_tensor:
                attr = identifier(name, taken)
                setattr(self, attr, Param(to_device_data(data, dev)))
                params[name] = attr
            else:
                host[name] = data
        self._onnx = _Frozen(graph, host, params)
        self._device = dev

    @property
    def graph(self) -> Graph:
        return self._onnx.graph

    @property
    def input_names(self) -> list[str]:
        return [v.name for v in self.graph.feeds]

    @property
    def output_names(self) -> list[str]:
        return [v.name for v in self.graph.outputs]

    def forward(self, *inputs: Tensor, **named: Tensor) -> Tensor | tuple[Tensor, ...]:
        """Run the graph: inputs by position (graph order) or by name; one output comes back
        as a tensor, several as a tuple in graph order."""
        feeds = self.graph.feeds
        if len(inputs) > len(feeds):
            raise OnnxError(f"{self.graph.source}: the model takes {len(feeds)} input(s) "
                            f"({', '.join(v.name for v in feeds)}), got {len(inputs)}")
        values = {v.name: x for v, x in zip(feeds, inputs, strict=False)}
        values.update(named)
        missing = [v.name for v in feeds if v.name not in values]
        if missing:
            raise OnnxError(f"{self.graph.source}: missing input(s) {', '.join(missing)}")
        outs = _run(self, values)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(self, feeds: dict[str, Tensor], outputs: Iterable[str] | None = None
            ) -> list[Tensor]:
        """The named outputs (default: the graph's) for the given inputs."""
        env, on_host = self.execute(feeds)
        dev = self._current_device()
        wanted = list(outputs) if outputs is not None else self.output_names
        out = []
        for name in wanted:
            if name not in env:
                raise OnnxError(f"{self.graph.source}: no value named {name!r}")
            v = env[name]
            out.append(_move(v, dev) if name in on_host else v)
        return out

    def _current_device(self) -> Backend:
        devices = self.devices()
        return devices[0] if devices else self._device

    def execute(self, feeds: dict[str, Tensor]) -> tuple[dict[str, Any], set[str]]:
        """Run every node: all values by name, and the names of those kept on the host."""
        graph, frozen = self.graph, self._onnx
        dev = self._current_device()
        hostdev = host_device() or dev
        env: dict[str, Any] = {}
        on_host: set[str] = set()
        env.update(frozen.host_tensors(hostdev))
        on_host.update(frozen.host)
        for name, attr in frozen.params.items():
            env[name] = getattr(self, attr).val
        for name, x in feeds.items():
            if not isinstance(x, Tensor):
                x = to_device_data(x if isinstance(x, TensorData) else TensorData(x), dev)
            env[name] = x
        for node in graph.nodes:
            spec = OPS[node.op_type]
            names = [n for n in node.inputs if n]
            undefined = [n for n in names if n not in env]
            if undefined:
                raise OnnxError(f"{graph.source}: {node.label(graph.opset)} reads "
                                f"{', '.join(undefined)}, which no earlier node produced")
            host = spec.name in HOST_OPS or all(n in on_host for n in names)
            args: list[Any] = []
            for i, n in enumerate(node.inputs):
                if not n:
                    args.append(None)
                    continue
                v = env[n]
                if not host and n in on_host and i not in spec.host:
                    v = _move(v, dev)
                args.append(v)
            try:
                result = call(spec, node, args, graph.opset, hostdev if host else dev)
            except PyriteError as exc:
                raise type(exc)(f"{graph.source}: {node.label(graph.opset)}: {exc}") from exc
            except (TypeError, ValueError, IndexError, KeyError, ArithmeticError,
                    AttributeError, RecursionError, MemoryError) as exc:
                # what the file got wrong (a missing input, an attribute of the wrong type)
                # reaches an op function as a Python error: name the node, not a traceback
                raise OnnxError(f"{graph.source}: {node.label(graph.opset)}: the node's inputs "
                                f"or attributes do not fit the operator "
                                f"({type(exc).__name__}: {str(exc)[:300]})") from exc
            results = list(result) if isinstance(result, (list, tuple)) else [result]
            for name, value in zip(node.outputs, results, strict=False):
                if name:
                    env[name] = value
                    if host:
                        on_host.add(name)
        return env, on_host


#: operators whose result is always a host value (they read only a tensor's shape)
HOST_OPS = frozenset({"Shape", "Size"})


#: what a dtype a device lacks is stored as (webgpu has no 64-bit types)
NARROWER = {DType.I64: DType.I32, DType.F64: DType.F32, DType.I16: DType.I32,
            DType.I8: DType.I32, DType.U8: DType.I32}


def storable(dtype: DType, dev: Backend) -> DType:
    """`dtype`, or the type `dev` stores it as when it has no such type."""
    return dtype if dev.supports(dtype) else NARROWER.get(dtype, dtype)


def _move(t: Tensor, dev: Backend) -> Tensor:
    if t.device is dev:
        return t
    want = storable(t.dtype, dev)
    if want is not t.dtype:
        t = t.cast(want)
    return t.to_device(dev)


def to_device_data(data: TensorData, dev: Backend) -> Tensor:
    """TensorData on `dev`, narrowed to a type the device has."""
    want = storable(data.dtype, dev)
    return from_data(data if want is data.dtype else data.convert(want), device=dev)


def load(path: PathLike, device: Device = None) -> OnnxModel:
    """The ONNX model at `path` as a pyrite module on `device`.

    Unsupported operators, attributes and element types are all listed in one OnnxError before
    anything runs. Reading the file needs the `onnx` package; nothing else does.
    """
    from .reader import read

    return OnnxModel(read(Path(path)), device)


__all__ = ["OnnxModel", "call", "host_device", "identifier", "load"]
