"""Tracing an ONNX graph on the host, so the code generator can fold what never changes.

The graph runs once with zero inputs of the declared shapes (twice when a dim is symbolic,
with two sizes); `Trace` says which host values and which shapes stay the same. `writer.py`
writes those as literals. This module runs graphs and writes no code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import OnnxError
from ...tensor import Tensor
from .graph import Graph
from .runtime import OnnxModel


@dataclass
class Trace:
    """What `trace` found: every value of one run, and which of them the symbolic dims leave
    alone."""

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
          batch: bool = True) -> Trace:
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
    return Trace(values, static, shapes, fixed, varying)


def _same(a: Any, b: Any) -> bool:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.shape != b.shape:
        return False
    return bool(a.to_data().values() == b.to_data().values())


def literal(value: Any) -> Any:
    """A host tensor as a Python literal (nested lists, or a scalar for rank 0)."""
    data = value.to_data() if isinstance(value, Tensor) else value
    return data.to_list()


__all__ = ["Trace", "literal", "trace"]
