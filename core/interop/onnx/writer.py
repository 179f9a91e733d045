"""The generated module's class, written node by node (`Writer`); see codegen.py.

Where a node matches a pyrite layer it becomes one in `__init__` (Conv, Gemm/MatMul(+Add),
BatchNormalization, LayerNormalization, 2-d pools); activations, arithmetic and reshapes become
tensor methods and operators in `forward`; anything else calls the runtime's operator function
(`O.Resize(...)`). Values the trace found static are written as literals; `lifetimes.py` then
plans which statements may consume their operands.
"""

from __future__ import annotations

import re
from typing import Any

from ...data import TensorData
from ...module import Module
from ...tensor import Tensor
from .graph import Graph, Node
from .lifetimes import Reuse, plan
from .pysource import doc_text, f32, fmt, plain, wrap
from .registry import OPS, keywords, moved_attributes
from .runtime import identifier
from .safety import FORWARD_DECORATOR
from .tracing import Trace, literal

#: a folded value with at most this many elements is written as a literal
LITERAL_LIMIT = 64
_ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}
_OPERATORS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


class Writer:
    """Builds the generated class: layer lines for __init__, statements for forward."""

    def __init__(self, graph: Graph, tr: Trace, class_name: str) -> None:
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
            return fmt(literal(self.tr.values[name]))
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
            self.init.append(f"self.{attr} = O.constant({fmt(data.to_list())}, "
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
        self.body.append(wrap(f"{target} = {call}", 8))
        if fresh:
            self.fresh.add(target)

    def consumable(self, target: str, fn: str, operands: list[tuple[str, str]]) -> None:
        """Say that `target = consuming.fn(...)` may replace the last statement, giving up the
        first operand of each (operand, arguments) pair."""
        forms = Reuse()
        for operand, args in operands:
            if operand.isidentifier():
                forms.forms[operand] = wrap(f"{target} = consuming.{fn}({args})", 8)
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
        parts += [None if v is None else fmt(plain(v))
                  for v in moved_attributes(spec, node, self.g.opset)]
        while parts and parts[-1] is None:
            parts.pop()
        args = ["None" if p is None else p for p in parts]
        kwargs = [f"{k}={fmt(plain(v))}"
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
        from .ops.conv import auto_pads
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
        from .ops.conv import auto_pads
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
                return fmt(float(v.item()))
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
                 f'    """{doc_text(self._summary())}"""', "",
                 "    def __init__(self, device: str | pyrite.Backend | None = None) -> None:"]
        lines += [wrap(ln, 8) for ln in self.init] or ["        pass"]
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


__all__ = ["LITERAL_LIMIT", "Writer"]
