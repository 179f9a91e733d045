"""`pyrite import-onnx`: an ONNX graph as a readable Python module plus a pyrite record.

The generated module is a `Module` subclass. Where a node matches a pyrite layer it becomes one
(Conv -> `nn.Conv2d`, Gemm or MatMul(+Add) with constant weights -> `nn.Linear`,
BatchNormalization -> `nn.BatchNorm`, LayerNormalization -> `nn.LayerNorm`, 2-d pools ->
`nn.MaxPool2d`/`nn.AvgPool2d`); activations, arithmetic, reshapes and the like become tensor
methods and operators; anything else calls the same operator function the runtime uses
(`O.Resize(...)`). The weights go to a record the module loads. Its `forward` is compiled
(`@pyrite.compile(warn=False, inference=True)`) like the graph runtime's: on webgpu a call
replays the captured kernels instead of running the module's Python again.

Shape arithmetic is folded: the graph is traced once on the host with inputs of the declared
shapes, and every value that depends only on constants and static shapes becomes a literal
(`x.reshape([1, 1000])` instead of Shape/Gather/Concat chains). A symbolic input dim (`batch`)
is traced twice with different sizes; what changes with it stays computed at run time.

Nothing of the file becomes code: its names become sanitised identifiers (`identifier`) or
escaped ASCII text (`_fmt`, `_doc_text`), and the source passes `safety.check_source`, an
allow-list of what this generator writes, before it is written or run.
"""

from __future__ import annotations

import keyword
import math
import os
import pprint
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...data import TensorData
from ...errors import OnnxError
from ...module import Module, Param
from ...tensor import Tensor
from .graph import Graph, Node
from .lifetimes import Reuse, plan
from .registry import OPS, keywords, moved_attributes
from .runtime import OnnxModel, identifier
from .safety import FORBIDDEN, FORWARD_DECORATOR, check_source

PathLike = str | os.PathLike[str]
#: a folded value with at most this many elements is written as a literal
LITERAL_LIMIT = 64
WIDTH = 99
_ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}
_OPERATORS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}
_RECORDERS = {"bin": ("BinFileRecorder", ".bin"), "bin-gz": ("BinGzFileRecorder", ".bin.gz"),
              "mpk": ("NamedMpkFileRecorder", ".mpk"),
              "mpk-gz": ("NamedMpkGzFileRecorder", ".mpk.gz"),
              "json": ("PrettyJsonFileRecorder", ".json"),
              "json-gz": ("JsonGzFileRecorder", ".json.gz")}
_PRECISIONS = {"full": "FullPrecision", "half": "HalfPrecision", "double": "DoublePrecision"}
#: the names generated code imports, which the class must not shadow
_IMPORTED = ("pyrite", "activation", "consuming", "nn", "cat", "O", "Module", "Param",
             "Tensor")


@dataclass
class Generated:
    """What `generate` makes: the module's source and its weights by param path."""

    source: str
    class_name: str
    weights: dict[str, TensorData] = field(default_factory=dict)
    trainable: dict[str, bool] = field(default_factory=dict)


@dataclass
class ImportResult:
    """Where `import_onnx` wrote the module and its record."""

    module_path: Path
    record_path: Path
    class_name: str


@dataclass
class _Trace:
    values: dict[str, Any]
    static: set[str]  # host values that are the same whatever the symbolic dims are
    shapes: dict[str, tuple[int, ...]]
    fixed: set[str]  # values whose shape is the same whatever the symbolic dims are
    varying: dict[str, list[int]]  # the dims of each value's shape that follow them


def _feed_shapes(graph: Graph, given: dict[str, Sequence[int]] | None, symbolic: int,
                 batch: bool) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for v in graph.feeds:
        if given and v.name in given:
            dims = [int(d) for d in given[v.name]]
            if batch and dims:
                dims[0] = symbolic
            out[v.name] = tuple(dims)
            continue
        if v.shape is None:
            raise OnnxError(f"{graph.source}: input {v.name!r} has no declared shape; give one "
                            f"with --input-shape {v.name}=1,3,224,224")
        out[v.name] = tuple(symbolic if (batch and i == 0) or not isinstance(d, int) or d <= 0
                            else d for i, d in enumerate(v.shape))
    return out


def trace(graph: Graph, given: dict[str, Sequence[int]] | None = None, *,
          batch: bool = True) -> _Trace:
    """Run `graph` on the host with zero inputs; say which host values are static.

    With `batch`, the leading dim of every input is a batch size the code must not fix.
    """
    from ...creation import zeros

    model = OnnxModel(graph, "numpy")

    def run(symbolic: int) -> tuple[dict[str, Any], set[str]]:
        feeds = {}
        for v in graph.feeds:
            shape = _feed_shapes(graph, given, symbolic, batch)[v.name]
            feeds[v.name] = zeros(shape, device="numpy", dtype=v.dtype or "f32")
        try:
            return model.execute(feeds)
        except Exception as exc:
            said = str(exc).removeprefix(f"{graph.source}: ")
            raise OnnxError(f"{graph.source}: tracing the graph with zero inputs of the "
                            f"declared shapes failed: {said}") from exc

    values, on_host = run(1)
    missing = [v.name for v in graph.outputs if v.name not in values]
    if missing:
        raise OnnxError(f"{graph.source}: graph output(s) {', '.join(map(repr, missing[:5]))} "
                        f"are produced by no node and are no input or initializer; the file "
                        f"is corrupt")
    shapes = {n: tuple(v.shape) for n, v in values.items() if isinstance(v, Tensor)}
    static, fixed = set(on_host), set(shapes)
    symbolic = batch or any(not isinstance(d, int) or d <= 0 for v in graph.feeds
                            if not (given and v.name in given) for d in (v.shape or ()))
    varying: dict[str, list[int]] = {}
    if symbolic:
        other, _ = run(2)
        static = {n for n in on_host if _same(values[n], other.get(n))}
        for n, shape in shapes.items():
            o = other.get(n)
            if isinstance(o, Tensor) and len(o.shape) == len(shape):
                varying[n] = [i for i, (a, b) in enumerate(zip(shape, o.shape, strict=True))
                              if a != b]
        fixed = {n for n, dims in varying.items() if not dims}
    return _Trace(values, static, shapes, fixed, varying)


def _same(a: Any, b: Any) -> bool:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.shape != b.shape:
        return False
    return bool(a.to_data().values() == b.to_data().values())


def _literal(value: Any) -> Any:
    """A host tensor as a Python literal (nested lists, or a scalar for rank 0)."""
    data = value.to_data() if isinstance(value, Tensor) else value
    return data.to_list()


class _Writer:
    """Builds the generated class: layer lines for __init__, statements for forward."""

    def __init__(self, graph: Graph, tr: _Trace, class_name: str) -> None:
        self.g, self.tr, self.class_name = graph, tr, class_name
        self.init: list[str] = []
        self.body: list[str] = []
        self.attrs: set[str] = {n for n in dir(Module) if not n.startswith("_")}
        self.locals: set[str] = {"self", "dev", "pyrite", "nn", "O", "activation", "cat",
                                 "consuming",
                                 "float", "str", "tuple", "Module", "Param", "Tensor"}
        self.expr: dict[str, str] = {}  # ONNX value -> Python expression (a tensor)
        self.weights: dict[str, TensorData] = {}
        self.trainable: dict[str, bool] = {}
        self.uses = graph.consumers()
        self.outputs = {v.name for v in graph.outputs}
        self.absorbed: set[str] = set()  # nodes folded into a previous layer
        self.fused: set[int] = set()  # id() of Relu nodes a convolution applies itself
        self.fresh: set[str] = set()  # locals bound by statements that make new memory
        self.reuse: dict[str, Reuse] = {}  # a statement's target -> its consuming forms
        self.needs_dev = False

    # ---- values ------------------------------------------------------------------------------
    def local(self, onnx_name: str) -> str:
        name = identifier(_short(onnx_name), self.locals)
        self.expr[onnx_name] = name
        return name

    def is_static(self, name: str) -> bool:
        return name in self.tr.static

    def host_arg(self, name: str) -> str:
        """A host input as a literal (static) or an expression."""
        if self.is_static(name):
            return _fmt(_literal(self.tr.values[name]))
        return self.tensor(name)

    def tensor(self, name: str) -> str:
        """An input read as a tensor."""
        if name in self.expr:
            return self.expr[name]
        init = self.g.initializers.get(name)
        if init is not None and init.dtype.is_float:
            attr = identifier(_short(name), self.attrs)
            self.init.append(f"self.{attr} = Param(O.zeros({list(init.shape)}, "
                             f"{str(init.dtype)!r}, device))")
            self.weights[attr] = init
            self.trainable[attr] = True
            self.expr[name] = f"self.{attr}.val"
            return self.expr[name]
        value = self.tr.values[name]
        data = value.to_data()
        attr = identifier(_short(name), self.attrs)
        if data.num_elements <= LITERAL_LIMIT:
            self.init.append(f"self.{attr} = O.constant({_fmt(data.to_list())}, "
                             f"{str(data.dtype)!r}, device)")
        else:
            self.init.append(f"self.{attr} = Param(O.zeros({list(data.shape)}, "
                             f"{str(data.dtype)!r}, device), require_grad=False)")
            self.weights[attr] = data
            self.trainable[attr] = False
            attr += ".val"
        self.expr[name] = f"self.{attr}"
        return self.expr[name]

    def const(self, name: str) -> TensorData | None:
        """An initializer only this node reads (so a layer may take it), else None."""
        data = self.g.initializers.get(name)
        if data is None or len(self.uses.get(name, [])) != 1 or name in self.outputs:
            return None
        return data

    def emit(self, target: str, call: str, *, fresh: bool = False) -> None:
        """Add `target = call`; `fresh`: the call makes new memory (see lifetimes.py)."""
        self.body.append(_wrap(f"{target} = {call}", 8))
        if fresh:
            self.fresh.add(target)

    def consumable(self, target: str, fn: str, operands: list[tuple[str, str]]) -> None:
        """Say that `target = consuming.fn(...)` may replace the last statement, giving up the
        first operand of each (operand, arguments) pair."""
        forms = Reuse()
        for operand, args in operands:
            if operand.isidentifier():
                forms.forms[operand] = _wrap(f"{target} = consuming.{fn}({args})", 8)
        self.reuse[target] = forms

    def layer(self, node: Node, ctor: str, weights: dict[str, TensorData]) -> str:
        attr = identifier(node.name or node.outputs[0], self.attrs)
        self.init.append(f"self.{attr} = {ctor}")
        for path, data in weights.items():
            self.weights[f"{attr}.{path}"] = data
            self.trainable[f"{attr}.{path}"] = path in ("weight", "bias", "gamma", "beta")
        return attr

    # ---- nodes -------------------------------------------------------------------------------
    def node(self, node: Node) -> None:
        if node.name in self.absorbed or id(node) in self.fused:
            return
        outs = [o for o in node.outputs if o]
        if outs and all(self.is_static(o) for o in outs):
            return  # folded: its values are literals where they are read
        x = node.inputs[0] if node.inputs else ""
        method = getattr(self, f"_{node.op_type.lower()}", None)
        if method is not None and method(node, x):
            return
        self.generic(node)

    def generic(self, node: Node) -> None:
        spec = OPS[node.op_type]
        parts: list[str | None] = []
        for i, name in enumerate(node.inputs):
            if not name:
                parts.append(None)
            else:
                parts.append(self.host_arg(name) if i in spec.host else self.tensor(name))
        parts += [None if v is None else _fmt(_plain(v))
                  for v in moved_attributes(spec, node, self.g.opset)]
        while parts and parts[-1] is None:
            parts.pop()
        args = ["None" if p is None else p for p in parts]
        kwargs = [f"{k}={_fmt(_plain(v))}"
                  for k, v in keywords(spec, node, self.g.opset).items()]
        if "device" in spec.context:
            kwargs.append("device=dev")
            self.needs_dev = True
        outs = [self.local(o) if o else "_" for o in node.outputs]
        n_results = len(outs)
        target = ", ".join(outs) if n_results > 1 else outs[0]
        call = f"O.{node.op_type}({', '.join(args + kwargs)})"
        if n_results == 1 and spec.returns_tuple:
            call += "[0]"
        self.emit(target + (": Tensor" if n_results == 1 else ""), call)

    # layers -------------------------------------------------------------------------------
    def _conv(self, node: Node, x: str) -> bool:
        w = self.const(node.inputs[1])
        b = self.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
        if w is None or len(w.shape) != 4 or (len(node.inputs) > 2 and node.inputs[2]
                                              and b is None):
            return False
        from .ops.nn import auto_pads
        st = list(node.attrs.get("strides", [1, 1]))
        dl = list(node.attrs.get("dilations", [1, 1]))
        pads = auto_pads(str(node.attrs.get("auto_pad", "NOTSET")), self.tr.shapes[x][2:],
                         list(w.shape[2:]), st, dl, node.attrs.get("pads"))
        group = int(node.attrs.get("group", 1))
        args = [f"{w.shape[1] * group}, {w.shape[0]}, {tuple(w.shape[2:])}"]
        if st != [1, 1]:
            args.append(f"stride={tuple(st)}")
        if dl != [1, 1]:
            args.append(f"dilation={tuple(dl)}")
        if group != 1:
            args.append(f"groups={group}")
        if b is None:
            args.append("bias=False")
        if any(p != (0, 0) for p in pads):
            args.append(f"padding={tuple(pads)}")
        weights = {"weight": w} | ({"bias": b} if b is not None else {})
        attr = self.layer(node, f"nn.Conv2dConfig({', '.join(args)}).init(device)", weights)
        out, act = node.outputs[0], ""
        readers = self.uses.get(out, [])
        if len(readers) == 1 and readers[0][0].op_type == "Relu" and out not in self.outputs:
            relu = readers[0][0]  # applied by the convolution on its product (F.conv2d)
            self.fused.add(id(relu))
            out, act = relu.outputs[0], ", activation='relu'"
        self.emit(self.local(out), f"self.{attr}({self.tensor(x)}{act})", fresh=True)
        return True

    def _gemm(self, node: Node, x: str) -> bool:
        a = node.attrs
        if (a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0 or a.get("transA", 0)
                or len(self.tr.shapes.get(x, ())) != 2):
            return False
        w = self.const(node.inputs[1])
        b = self.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
        if w is None or len(w.shape) != 2 or (b is not None and len(b.shape) != 1) or (
                len(node.inputs) > 2 and node.inputs[2] and b is None):
            return False
        if a.get("transB", 0):
            w = _transpose(w)
        return self._linear(node, x, w, b, node.outputs[0])

    def _matmul(self, node: Node, x: str) -> bool:
        w = self.const(node.inputs[1])
        if w is None or len(w.shape) != 2 or len(self.tr.shapes.get(x, ())) < 2:
            if len(self.tr.shapes.get(x, ())) >= 2 and len(
                    self.tr.shapes.get(node.inputs[1], ())) >= 2:
                self.emit(self.local(node.outputs[0]), f"{self.tensor(x)}.matmul("
                          f"{self.tensor(node.inputs[1])})", fresh=True)
                return True
            return False
        out, b = node.outputs[0], None
        readers = self.uses.get(out, [])
        if len(readers) == 1 and out not in self.outputs:
            add, pos = readers[0]
            other = add.inputs[1 - pos] if add.op_type == "Add" and len(add.inputs) == 2 else ""
            bias = self.const(other) if other else None
            if bias is not None and list(bias.shape) == [w.shape[1]]:
                b, out = bias, add.outputs[0]
                self.absorbed.add(add.name)
        return self._linear(node, x, w, b, out)

    def _linear(self, node: Node, x: str, w: TensorData, b: TensorData | None,
                out: str) -> bool:
        bias = "" if b is not None else ", bias=False"
        weights = {"weight": w} | ({"bias": b} if b is not None else {})
        attr = self.layer(node, f"nn.LinearConfig({w.shape[0]}, {w.shape[1]}{bias})"
                          f".init(device)", weights)
        self.emit(self.local(out), f"self.{attr}({self.tensor(x)})", fresh=True)
        return True

    def _batchnormalization(self, node: Node, x: str) -> bool:
        parts = [self.const(n) for n in node.inputs[1:5]]
        if len(node.inputs) != 5 or any(p is None for p in parts) or len(
                [o for o in node.outputs if o]) != 1 or node.attrs.get("training_mode", 0):
            return False
        gamma, beta, mean, var = parts
        assert gamma is not None and beta is not None and mean is not None and var is not None
        eps = f32(float(node.attrs.get("epsilon", 1e-5)))
        mom = 1.0 - f32(float(node.attrs.get("momentum", 0.9)))
        attr = self.layer(node, f"nn.BatchNormConfig({gamma.shape[0]}, epsilon={eps!r}, "
                          f"momentum={round(mom, 6)!r}).init(device)",
                          {"gamma": gamma, "beta": beta, "running_mean": mean,
                           "running_var": var})
        self.emit(self.local(node.outputs[0]), f"self.{attr}({self.tensor(x)})", fresh=True)
        return True

    def _layernormalization(self, node: Node, x: str) -> bool:
        rank = len(self.tr.shapes.get(x, ()))
        ax = int(node.attrs.get("axis", -1))
        scale = self.const(node.inputs[1])
        bias = self.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
        if (ax not in (-1, rank - 1) or scale is None or bias is None or len(scale.shape) != 1
                or len([o for o in node.outputs if o]) != 1):
            return False
        eps = f32(float(node.attrs.get("epsilon", 1e-5)))
        attr = self.layer(node, f"nn.LayerNormConfig({scale.shape[0]}, epsilon={eps!r})"
                          f".init(device)", {"gamma": scale, "beta": bias})
        self.emit(self.local(node.outputs[0]), f"self.{attr}({self.tensor(x)})", fresh=True)
        return True

    def _pool(self, node: Node, x: str, kind: str) -> bool:
        k = list(node.attrs.get("kernel_shape", []))
        if len(k) != 2 or len([o for o in node.outputs if o]) != 1:
            return False
        from .ops.nn import auto_pads
        st = list(node.attrs.get("strides", [1, 1]))
        dl = list(node.attrs.get("dilations", [1, 1]))
        pads = auto_pads(str(node.attrs.get("auto_pad", "NOTSET")), self.tr.shapes[x][2:], k,
                         st, dl, node.attrs.get("pads"))
        args = [f"{tuple(k)}", f"stride={tuple(st)}"]
        if any(p != (0, 0) for p in pads):
            args.append(f"padding={tuple(pads)}")
        if kind == "Max" and dl != [1, 1]:
            args.append(f"dilation={tuple(dl)}")
        elif kind == "Avg":
            if dl != [1, 1]:
                return False
            args.append(f"count_include_pad={bool(node.attrs.get('count_include_pad', 0))}")
        if node.attrs.get("ceil_mode", 0):
            args.append("ceil_mode=True")
        attr = self.layer(node, f"nn.{kind}Pool2dConfig({', '.join(args)}).init()", {})
        self.emit(self.local(node.outputs[0]), f"self.{attr}({self.tensor(x)})", fresh=True)
        return True

    def _maxpool(self, node: Node, x: str) -> bool:
        if node.attrs.get("storage_order", 0):
            return False
        return self._pool(node, x, "Max")

    def _averagepool(self, node: Node, x: str) -> bool:
        return self._pool(node, x, "Avg")

    # tensor methods -----------------------------------------------------------------------
    def _relu(self, node: Node, x: str) -> bool:
        return self._activation(node, x)

    def _sigmoid(self, node: Node, x: str) -> bool:
        return self._activation(node, x)

    def _tanh(self, node: Node, x: str) -> bool:
        return self._activation(node, x)

    def _activation(self, node: Node, x: str) -> bool:
        fn = _ACTIVATIONS[node.op_type]
        out, arg = self.local(node.outputs[0]), self.tensor(x)
        self.emit(out, f"activation.{fn}({arg})", fresh=True)
        self.consumable(out, fn, [(arg, arg)])
        return True

    def _identity(self, node: Node, x: str) -> bool:
        self.expr[node.outputs[0]] = self.tensor(x)
        return True

    def _dropout(self, node: Node, x: str) -> bool:
        if len([o for o in node.outputs if o]) != 1:
            return False
        return self._identity(node, x)  # inference graph: dropout is the identity

    def _concat(self, node: Node, x: str) -> bool:
        parts = [self.tensor(n) for n in node.inputs if n]
        ax = int(node.attrs.get("axis", 0))
        rank = len(self.tr.shapes.get(node.outputs[0], ()))
        dim = ax + rank if ax < 0 else ax
        # cat of one tensor returns that tensor: not new memory
        self.emit(self.local(node.outputs[0]), f"cat([{', '.join(parts)}], {dim})",
                  fresh=len(parts) > 1)
        return True

    def _static_shape(self, node: Node, x: str) -> bool:
        out = node.outputs[0]
        if out not in self.tr.shapes:
            return False
        shape = list(self.tr.shapes[out])
        if any(d == 0 for d in shape):
            return False
        if out not in self.tr.fixed:
            dims = self.tr.varying.get(out, [])
            if len(dims) != 1:
                return False
            shape[dims[0]] = -1  # the batch dim: whatever the input brings
        self.emit(self.local(out), f"{self.tensor(x)}.reshape({shape})")
        return True

    _reshape = _static_shape
    _flatten = _static_shape
    _squeeze = _static_shape
    _unsqueeze = _static_shape

    def _transpose(self, node: Node, x: str) -> bool:
        rank = len(self.tr.shapes.get(x, ()))
        perm = node.attrs.get("perm", list(reversed(range(rank))))
        self.emit(self.local(node.outputs[0]), f"{self.tensor(x)}.permute({list(perm)})")
        return True

    def _softmax(self, node: Node, x: str) -> bool:
        rank = len(self.tr.shapes.get(x, ()))
        ax = node.attrs.get("axis")
        if self.g.opset < 13 and not (rank == 2 and ax in (None, 1, -1)):
            return False
        ax = -1 if ax is None else int(ax)
        self.emit(self.local(node.outputs[0]),
                  f"{self.tensor(x)}.softmax({ax + rank if ax < 0 else ax})", fresh=True)
        return True

    def _binary(self, node: Node, x: str) -> bool:
        a, b = node.inputs
        dts = [self._dtype(n) for n in (a, b)]
        if any(d is None or not d.is_float for d in dts) or dts[0] is not dts[1]:
            return False
        sym = _OPERATORS[node.op_type]
        out, ea, eb = self.local(node.outputs[0]), self._operand(a), self._operand(b)
        self.emit(out, f"{ea} {sym} {eb}", fresh=True)
        fn = node.op_type.lower()
        self.consumable(out, fn, [(ea, f"{ea}, {eb}")] + (
            [(eb, f"{eb}, {ea}")] if fn in ("add", "mul") else []))
        return True

    _add = _binary
    _sub = _binary
    _mul = _binary
    _div = _binary

    def _operand(self, name: str) -> str:
        if self.is_static(name) and name not in self.expr:
            v = self.tr.values[name]
            if v.numel() == 1 and v.ndim == 0:
                return _fmt(float(v.item()))
        return self.tensor(name)

    def _dtype(self, name: str) -> Any:
        v = self.tr.values.get(name)
        return v.dtype if isinstance(v, Tensor) else None

    # ---- the file ----------------------------------------------------------------------------
    def source(self, header: str) -> str:
        feeds = self.g.feeds
        for v in feeds:
            self.expr[v.name] = identifier(v.name, self.locals)
        params = ", ".join(f"{self.expr[v.name]}: Tensor" for v in feeds)
        body_start = ["dev = " + (self.expr[feeds[0].name] + ".device" if feeds else "None")]
        for node in self.g.nodes:
            self.node(node)
        outs = [self.tensor(v.name) for v in self.g.outputs]
        ret = outs[0] if len(outs) == 1 else f"({', '.join(outs)},)"
        self.body = plan(_live(self.body, ret), ret, {self.expr[v.name] for v in feeds},
                         self.fresh, self.reuse)
        self._drop_unread_constants(ret)
        self.needs_dev = any(re.search(r"\bdev\b", line) for line in self.body)
        rtype = "Tensor" if len(outs) == 1 else f"tuple[{', '.join(['Tensor'] * len(outs))}]"
        text = "\n".join(self.init + self.body)
        imports = ["import pyrite"]
        used = [n for n in ("activation", "consuming", "nn") if re.search(rf"\b{n}\.", text)]
        if used:
            imports.append(f"from pyrite import {', '.join(used)}")
        if "cat(" in text:
            imports.append("from pyrite.creation import cat")
        if re.search(r"\bO\.", text):
            imports.append("from pyrite.interop.onnx import functional as O")
        imports.append("from pyrite.module import Module" + (", Param" if "Param(" in text
                                                             else ""))
        imports.append("from pyrite.tensor import Tensor")
        lines = [header, "from __future__ import annotations", "", *imports,
                 "", "", f"class {self.class_name}(Module):",
                 f'    """{_doc_text(self._summary())}"""', "",
                 "    def __init__(self, device: str | pyrite.Backend | None = None) -> None:"]
        lines += [_wrap(ln, 8) for ln in self.init] or ["        pass"]
        lines += ["", f"    @{FORWARD_DECORATOR}",
                  f"    def forward(self, {params}) -> {rtype}:"]
        if self.needs_dev:
            lines.append("        " + body_start[0])
        lines += self.body + [f"        return {ret}", ""]
        return "\n".join(lines)

    def _drop_unread_constants(self, ret: str) -> None:
        """Forget the constants and params only dead shape arithmetic read (`ret`, the
        returned expression, reads too: an output may be a constant)."""
        body = "\n".join([*self.body, ret])
        keep = []
        for line in self.init:
            attr = line.split(" = ", 1)[0].removeprefix("self.")
            layer = " = nn." in line
            if layer or re.search(rf"\bself\.{re.escape(attr)}\b", body):
                keep.append(line)
            else:
                self.weights.pop(attr, None)
                self.trainable.pop(attr, None)
        self.init = keep

    def _summary(self) -> str:
        ins = ", ".join(f"{v.name} {self._describe(v.name)}" for v in self.g.feeds)
        outs = ", ".join(f"{v.name} {self._describe(v.name)}" for v in self.g.outputs)
        return f"Inputs: {ins}. Outputs: {outs}."

    def _describe(self, name: str) -> str:
        v = self.tr.values.get(name)
        declared = {i.name: i.shape for i in self.g.inputs + self.g.outputs}.get(name)
        shape = list(declared) if declared is not None else list(v.shape) if isinstance(
            v, Tensor) else "?"
        return f"{v.dtype} {shape}" if isinstance(v, Tensor) else str(shape)


def _short(onnx_name: str) -> str:
    """A value's name as a Python name: exporters' `/enc/Add_output_0` becomes `enc_add`."""
    short = re.sub(r"_output(_\d+)?$", "", onnx_name.strip("/").replace("/", "_")).lower()
    return short or onnx_name


def _live(body: list[str], ret: str) -> list[str]:
    """`body` without the assignments nothing reads (shape arithmetic a literal replaced)."""
    kept: list[str] = []
    needed = set(re.findall(r"\w+", ret))
    for stmt in reversed(body):
        target, _, expr = stmt.partition(" = ")
        names = {t.split(":")[0].strip() for t in target.split(",")}
        if names & needed:
            kept.append(stmt)
            needed |= set(re.findall(r"\w+", expr))
    return kept[::-1]


def _transpose(data: TensorData) -> TensorData:
    rows, cols = data.shape
    flat = data.values()
    values = [flat[r * cols + c] for c in range(cols) for r in range(rows)]
    return TensorData(values, shape=(cols, rows), dtype=data.dtype)


def _plain(value: Any) -> Any:
    """An attribute's value as it is written in code (ONNX float attributes are float32:
    written as the shortest decimal that gives the same float32)."""
    if isinstance(value, TensorData):
        return _Code(f"pyrite.TensorData({_fmt(value.to_list())}, shape={tuple(value.shape)}, "
                     f"dtype={str(value.dtype)!r})")
    if isinstance(value, float):
        return f32(value)
    if isinstance(value, list):
        return [f32(v) if isinstance(v, float) else v for v in value]
    return value


class _Code(str):
    """Source text that `_fmt` writes as it is."""


def f32(value: float) -> float:
    """The shortest decimal that rounds to the same float32 as `value` (1e-05, not
    9.999999747378752e-06)."""
    if not math.isfinite(value):
        return value
    target = struct.pack("<f", value)
    for digits in range(1, 18):
        short = float(f"{value:.{digits}g}")
        if struct.pack("<f", short) == target:
            return short
    return value


def _fmt(value: Any) -> str:
    """`value` as Python source; a string (the file's text) always as an ASCII literal."""
    if isinstance(value, _Code):
        return str(value)
    if isinstance(value, str):
        return ascii(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        if math.isnan(value):
            return "float('nan')"
    if isinstance(value, list) and any(isinstance(v, str) or (isinstance(v, float) and not
                                                              math.isfinite(v))
                                       for v in _flat(value)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return pprint.pformat(value, width=WIDTH - 24, compact=True)


def _doc_text(text: str) -> str:
    """`text` (names from the file among it) made safe inside a triple-quoted docstring: the
    docstring reads back as `text`, its source is printable ASCII, with no quote or backslash
    that could end the string or start an escape of the file's choosing."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(ascii(ch)[1:-1])  # \n, \x00, \u2028, ...
    return "".join(out)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]


def _wrap(line: str, indent: int) -> str:
    """`line` indented; when longer than the page, its first call's arguments go on their own
    lines (an expression without a call continues in parentheses)."""
    pad = " " * indent
    text = pad + line.strip()
    if len(text) <= WIDTH or "\n" in line:
        return text
    target, eq, expr = text.partition(" = ")
    open_at = text.find("(", len(target) + len(eq) if eq else 0)
    close_at = _matching(text, open_at) if open_at >= 0 else -1
    if close_at < 0 or (eq and len(target) > WIDTH // 2):
        if not eq:
            return text
        if len(pad) + 5 + len(expr) <= WIDTH:
            return f"{target} = (\n{pad}    {expr})"
        left, op, right = expr.partition(" ")  # `a + b`: one operand per line
        return f"{target} = (\n{pad}    {left}\n{pad}    {right})"
    head, inner, tail = text[:open_at + 1], text[open_at + 1:close_at], text[close_at:]
    if len(pad) + 4 + len(inner) + len(tail) <= WIDTH:
        return f"{head}\n{pad}    {inner}{tail}"
    return f"{head}\n" + _split_args(inner, pad + "    ") + tail


def _matching(text: str, at: int) -> int:
    """The index of the bracket closing the one at `at` (-1 when there is none); brackets
    inside string literals do not count."""
    depth = 0
    for i, ch in _code_chars(text, at):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_args(args: str, pad: str) -> str:
    """`args` one per line; commas inside brackets or string literals do not split."""
    parts, depth, start = [], 0, 0
    for i, ch in _code_chars(args, 0):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    parts.append(args[start:].strip())
    return ",\n".join(pad + p for p in parts)


def _code_chars(text: str, start: int) -> list[tuple[int, str]]:
    """The (index, character) pairs of `text` from `start` that are outside string literals
    (the one-line `'...'`/`"..."` literals `_fmt` writes)."""
    out: list[tuple[int, str]] = []
    quote, escaped = "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            out.append((i, ch))
    return out


def generate(graph: Graph, *, class_name: str = "Model",
             input_shapes: dict[str, Sequence[int]] | None = None,
             header: str | None = None, batch: bool = True) -> Generated:
    """The Python source of a module that runs `graph`, and its weights."""
    _check_class_name(class_name)
    tr = trace(graph, input_shapes, batch=batch)
    w = _Writer(graph, tr, class_name)
    head = header or (f'"""{class_name}: generated by `pyrite import-onnx` from '
                      f'{_doc_text(graph.source)}."""')
    source = w.source(head)
    check_source(source)
    return Generated(source, class_name, w.weights, w.trainable)


def _plain_class(name: str) -> bool:
    return name.isascii() and name.isidentifier() and not keyword.iskeyword(name) and not (
        name.startswith("_") or name in _IMPORTED or name in FORBIDDEN)


def _default_class(stem: str) -> str:
    """The class name a file stem gives: `squeeze_net` -> `SqueezeNet`; `none` -> `NoneModel`
    and `o` -> `OModel` rather than a keyword or a name hiding an import."""
    cls = "".join(p.capitalize() for p in stem.split("_")) or "Model"
    return cls if _plain_class(cls) else cls + "Model"


def _check_class_name(name: str) -> None:
    if not _plain_class(name):
        raise OnnxError(f"class name {name!r} is not a plain Python identifier (ASCII, not a "
                        f"keyword, not starting with _, not an imported or forbidden name)")


def build(gen: Generated, device: str | None = "numpy") -> Module:
    """The generated module, instantiated with its weights; its source is checked first
    (`safety.check_source`), so nothing outside the generator's allow-list ever runs."""
    check_source(gen.source)
    namespace: dict[str, Any] = {"__name__": f"pyrite_generated_{gen.class_name}"}
    exec(compile(gen.source, f"<generated {gen.class_name}>", "exec"), namespace)  # noqa: S102
    model: Module = namespace[gen.class_name](device)
    return set_weights(model, gen.weights)


def set_weights(model: Module, weights: dict[str, TensorData]) -> Module:
    """Replace each param named by its dotted path with the given values."""
    from ...tensor import from_data

    for path, data in weights.items():
        *parents, leaf = path.split(".")
        owner: Any = model
        for p in parents:
            owner = getattr(owner, p)
        old = getattr(owner, leaf)
        if not isinstance(old, Param):
            raise OnnxError(f"generated module: {path} is not a param")
        if tuple(old.shape) != tuple(data.shape):
            raise OnnxError(f"generated module: {path} has shape {list(old.shape)}, the ONNX "
                            f"weights {list(data.shape)}")
        value = from_data(data.convert(old.val.dtype), device=old.val.device)
        setattr(owner, leaf, old.with_val(value))
    return model


def import_onnx(path: PathLike, out_dir: PathLike, *, name: str | None = None,
                class_name: str | None = None, recorder: str = "bin", precision: str = "full",
                input_shapes: dict[str, Sequence[int]] | None = None,
                batch: bool = True) -> ImportResult:
    """Write `<out_dir>/<name>.py` (the module) and its record beside it; see the module doc."""
    from ...record import precision as precisions
    from ...record import recorder as recorders
    from .reader import read

    if recorder not in _RECORDERS:
        raise OnnxError(f"unknown recorder {recorder!r}; choose one of {', '.join(_RECORDERS)}")
    if precision not in _PRECISIONS:
        raise OnnxError(f"unknown precision {precision!r}; choose one of "
                        f"{', '.join(_PRECISIONS)}")
    src = Path(path)
    graph = read(src)
    stem = name or identifier(src.stem, set()).lower()
    cls = class_name or _default_class(stem)
    rec_cls, ext = _RECORDERS[recorder]
    prec_cls = _PRECISIONS[precision]
    record_file = f"{stem}{ext}"
    header = _header(graph, src.name, cls, record_file, rec_cls, prec_cls)
    gen = generate(graph, class_name=cls, input_shapes=input_shapes, header=header,
                   batch=batch)
    model = build(gen)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rec = getattr(recorders, rec_cls)(precision=getattr(precisions, prec_cls)())
    record_path = model.save_file(out / record_file, rec)
    module_path = out / f"{stem}.py"
    from ...record.atomic import atomic_write
    blob = gen.source.encode()
    atomic_write(module_path, lambda f: f.write(blob))
    return ImportResult(module_path, Path(record_path), cls)


def _header(graph: Graph, source: str, cls: str, record: str, rec_cls: str,
            prec_cls: str) -> str:
    source, shown = _doc_text(source), _doc_text(repr(record))
    return (f'"""{cls}: generated by `pyrite import-onnx` from {source} (ONNX opset '
            f'{graph.opset}).\n\nIts weights are in {_doc_text(record)} ({rec_cls}, '
            f'{prec_cls}):\n\n'
            f"    from pyrite.record import {rec_cls}, {prec_cls}\n"
            f"    model = {cls}(device).load_file({shown}, {rec_cls}({prec_cls}()))\n\n"
            f"Edit it as you like: it is plain pyrite code.\n" + '"""')


__all__ = ["Generated", "ImportResult", "build", "generate", "import_onnx", "set_weights",
           "trace"]
