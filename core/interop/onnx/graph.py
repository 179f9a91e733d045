"""The ONNX graph as pyrite holds it: plain Python objects, no protobuf.

`reader.py` builds a `Graph` from a `.onnx` file (with the `onnx` package); everything after
that (checking, running, code generation) works on this form only, so running an imported
model never needs the `onnx` package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...data import TensorData
from ...dtype import DType

#: ONNX TensorProto.DataType -> pyrite dtype (the ones pyrite can hold)
ONNX_DTYPES: dict[int, DType] = {
    1: DType.F32, 2: DType.U8, 3: DType.I8, 5: DType.I16, 6: DType.I32, 7: DType.I64,
    9: DType.BOOL, 10: DType.F16, 11: DType.F64,
}
#: the names of the ONNX element types pyrite cannot hold, for error messages
ONNX_TYPE_NAMES: dict[int, str] = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32",
    7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32",
    13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN",
    18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4",
    23: "FLOAT4E2M1",
}
TO_ONNX: dict[DType, int] = {dt: code for code, dt in ONNX_DTYPES.items()}


def onnx_dtype(code: int) -> DType | None:
    """The pyrite dtype of an ONNX element type code, or None when pyrite has none."""
    return ONNX_DTYPES.get(code)


def type_name(code: int) -> str:
    return ONNX_TYPE_NAMES.get(code, f"type {code}")


@dataclass
class ValueInfo:
    """A graph input or output: its name, element type and shape (a dim is an int, a symbolic
    name such as 'batch', or None when unknown)."""

    name: str
    elem_type: int = 0
    shape: tuple[int | str | None, ...] | None = None

    @property
    def dtype(self) -> DType | None:
        return onnx_dtype(self.elem_type)


@dataclass
class Node:
    """One operator application. Empty strings in `inputs` are omitted optional inputs."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    name: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    domain: str = ""

    def label(self, opset: int) -> str:
        """How errors name the node: `node 'conv1' (Conv, opset 13)`."""
        name = self.name or (self.outputs[0] if self.outputs else "?")
        return f"node {name!r} ({self.op_type}, opset {opset})"


@dataclass
class Graph:
    """A model's main graph: nodes in topological order, initializers as TensorData."""

    nodes: list[Node]
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    initializers: dict[str, TensorData]
    opset: int
    name: str = "model"
    source: str = "<memory>"  # the file it was read from, for error messages
    doc: str = ""
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def feeds(self) -> list[ValueInfo]:
        """The inputs a caller supplies (graph inputs that are not initializers)."""
        return [v for v in self.inputs if v.name not in self.initializers]

    def consumers(self) -> dict[str, list[tuple[Node, int]]]:
        """Each value's readers: (node, input position)."""
        out: dict[str, list[tuple[Node, int]]] = {}
        for node in self.nodes:
            for i, name in enumerate(node.inputs):
                if name:
                    out.setdefault(name, []).append((node, i))
        return out


__all__ = ["ONNX_DTYPES", "TO_ONNX", "Graph", "Node", "ValueInfo", "onnx_dtype", "type_name"]
