"""The ONNX operators pyrite runs: one registry, filled by the modules of `ops/`.

An operator is a plain Python function over pyrite tensors. Its positional parameters are the
ONNX inputs in order (an omitted optional input arrives as None; `*args` takes a variadic
input) and its keyword-only parameters are the ONNX attributes, by their ONNX names. Three
keyword names are not attributes but context the runtime supplies when a function asks for
them: `opset` (the model's opset), `device` (where to create tensors when no input says) and
`outputs` (how many outputs the node uses, so an op can skip computing optional ones).

The generated code of `pyrite import-onnx` calls the same functions, so the runtime module and
the generated module share one implementation of every operator.

`host` names the inputs an operator reads as plain numbers (a Reshape's shape, a Slice's
starts): the runtime keeps such values on the host and the generated code writes them as
literals. `attr_inputs=(N, names)` says that before opset N those inputs were attributes.
A function with several outputs returns a tuple and says so in its annotation (`-> tuple[...]`):
generated code takes element 0 where a node names only the first output.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import OnnxError
from .graph import Graph, onnx_dtype, type_name
from .reader import _Subgraph, _Unsupported

#: keyword names a function may declare to receive context instead of attributes
CONTEXT = ("opset", "device", "outputs")


@dataclass
class OpSpec:
    """A registered operator."""

    name: str
    fn: Callable[..., Any]
    since: int = 1
    host: tuple[int, ...] = ()
    attr_inputs: tuple[int, tuple[str, ...]] | None = None
    attrs: frozenset[str] = field(default_factory=frozenset)
    context: tuple[str, ...] = ()
    n_inputs: int | None = None  # None: variadic
    returns_tuple: bool = False  # from the function's annotation: a tuple of outputs

    def accepts(self, attr: str, opset: int) -> bool:
        if attr in self.attrs:
            return True
        return (self.attr_inputs is not None and opset < self.attr_inputs[0]
                and attr in self.attr_inputs[1])


OPS: dict[str, OpSpec] = {}


def op(name: str, *, since: int = 1, host: Sequence[int] = (),
       attr_inputs: tuple[int, tuple[str, ...]] | None = None
       ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn` as the ONNX operator `name` (see the module's docstring)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in OPS:
            raise ValueError(f"ONNX op {name} registered twice")
        sig = inspect.signature(fn)
        kw = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        pos = [p for p in sig.parameters.values()
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        variadic = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
        OPS[name] = OpSpec(name, fn, since, tuple(host), attr_inputs,
                           frozenset(k for k in kw if k not in CONTEXT),
                           tuple(k for k in kw if k in CONTEXT),
                           None if variadic else len(pos),
                           str(sig.return_annotation).startswith("tuple"))
        return fn

    return register


def moved_attributes(spec: OpSpec, node: Any, opset: int) -> list[Any]:
    """The attribute values that `spec` takes as trailing inputs at this (older) opset."""
    if spec.attr_inputs is None or opset >= spec.attr_inputs[0]:
        return []
    return [node.attrs.get(n) for n in spec.attr_inputs[1]]


def keywords(spec: OpSpec, node: Any, opset: int) -> dict[str, Any]:
    """The keyword arguments of a node's call: its attributes, plus the `opset` and `outputs`
    context the function asks for (`device` is the caller's to add)."""
    from .runtime import used_outputs

    out = {k: v for k, v in node.attrs.items() if k in spec.attrs}
    if "opset" in spec.context:
        out["opset"] = opset
    if "outputs" in spec.context:
        out["outputs"] = used_outputs(node)
    return out


def spec(name: str) -> OpSpec:
    from . import ops  # noqa: F401 - fills OPS
    return OPS[name]


def supported() -> list[str]:
    """The names of the operators pyrite runs."""
    from . import ops  # noqa: F401
    return sorted(OPS)


def problems(graph: Graph) -> list[str]:
    """Everything in `graph` pyrite cannot run, one line each (empty when it can run it all)."""
    from . import ops  # noqa: F401

    out: list[str] = []
    for v in graph.inputs + graph.outputs:
        if v.elem_type == -1:
            out.append(f"graph value {v.name!r}: only tensors are supported (not sequences, "
                       f"maps or optionals)")
        elif v.elem_type and onnx_dtype(v.elem_type) is None:
            out.append(f"graph value {v.name!r}: element type {type_name(v.elem_type)} is not "
                       f"supported")
    for node in graph.nodes:
        where = node.label(graph.opset)
        if node.domain not in ("", "ai.onnx"):
            out.append(f"{where}: operator domain {node.domain!r} is not supported (only the "
                       f"default ONNX domain)")
            continue
        s = OPS.get(node.op_type)
        if s is None:
            out.append(f"{where}: operator {node.op_type} is not supported")
            continue
        if graph.opset < s.since:
            out.append(f"{where}: {node.op_type} is supported from opset {s.since}")
        for attr, value in node.attrs.items():
            if isinstance(value, _Subgraph):
                out.append(f"{where}: graph attribute {attr!r} (control flow) is not "
                           f"supported")
            elif isinstance(value, _Unsupported):
                out.append(f"{where}: attribute {attr!r} has an unsupported type")
            elif not s.accepts(attr, graph.opset):
                out.append(f"{where}: attribute {attr!r} is not supported")
        if s.n_inputs is not None and len(node.inputs) > s.n_inputs:
            out.append(f"{where}: takes at most {s.n_inputs} inputs, got {len(node.inputs)}")
    return out


#: the problems a message lists before it only counts the rest
SHOWN = 20


def summarised(lines: list[str], shown: int = SHOWN) -> list[str]:
    """The first `shown` lines, then one that counts the rest (800,000 unsupported nodes make
    a readable message, not 800,000 lines).

    >>> summarised(["a", "b", "c"], shown=2)
    ['a', 'b', '... and 1 more']
    """
    if len(lines) <= shown:
        return lines
    return [*lines[:shown], f"... and {len(lines) - shown} more"]


def check(graph: Graph) -> None:
    """Raise OnnxError listing every unsupported op, attribute and dtype of `graph` at once."""
    found = problems(graph)
    if found:
        lines = "\n  ".join(summarised(found))
        raise OnnxError(f"{graph.source}: {len(found)} unsupported item(s); nothing was run:"
                        f"\n  {lines}")


__all__ = ["CONTEXT", "OPS", "OpSpec", "check", "keywords", "moved_attributes", "op",
           "problems", "spec", "summarised", "supported"]
