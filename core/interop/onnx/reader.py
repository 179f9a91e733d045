"""Read a `.onnx` file into a `Graph` with the `onnx` package, checking it on the way.

What is checked, before any tensor's bytes are copied:
- the file exists, is a regular file, and parses as an ONNX ModelProto (a truncated or
  corrupted file is refused with the protobuf's complaint);
- every initializer's declared shape agrees with the bytes it carries (raw or typed fields), so
  a header that declares 10^12 elements is refused without allocating them;
- external data stays inside the model's folder (no `..`, no absolute path, no symlink out),
  exists, and covers the declared byte range;
- element types are ones pyrite holds.
Nothing in a model file is executed: the graph is data, run by pyrite's own op functions.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ...data import TensorData
from ...errors import OnnxError
from .graph import Graph, Node, ValueInfo, onnx_dtype, type_name

PathLike = str | os.PathLike[str]
_DEFAULT_DOMAINS = ("", "ai.onnx")
#: the most dimensions an initializer may have (numpy's limit is 64; no model needs 32)
MAX_RANK = 32
#: how many of each a model may hold; checked on the parsed file before anything is built, so a
#: hostile file of 800,000 empty nodes is refused at once (the largest models pyrite has seen
#: hold a few thousand nodes)
MAX_COUNTS = {"nodes": 100_000, "initializers": 100_000, "graph inputs": 10_000,
              "graph outputs": 10_000, "metadata entries": 10_000, "opset imports": 100}
#: per node: its inputs, outputs and attributes
MAX_NODE_COUNTS = {"inputs": 10_000, "outputs": 10_000, "attributes": 1_000}
#: the typed field that carries each element type's values when raw_data is empty
_TYPED_FIELD = {1: "float_data", 2: "int32_data", 3: "int32_data", 5: "int32_data",
                6: "int32_data", 7: "int64_data", 9: "int32_data", 10: "int32_data",
                11: "double_data"}


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise OnnxError("reading an .onnx file needs the onnx package: pip install "
                        "'pyrite[onnx]' (running an imported model does not)") from exc
    return onnx


def read(path: PathLike) -> Graph:
    """The graph of the ONNX file at `path`; OnnxError naming the file and the problem."""
    path = Path(path)
    if not path.exists():
        raise OnnxError(f"{path}: no such ONNX file")
    if not path.is_file():
        raise OnnxError(f"{path}: not a file")
    blob = path.read_bytes()
    return parse(blob, source=str(path), folder=path.parent)


def parse(blob: bytes, *, source: str = "<bytes>", folder: Path | None = None) -> Graph:
    """The graph of an ONNX model held in memory (`folder` resolves external data)."""
    onnx = _onnx()
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped,unused-ignore]

    if not blob:
        raise OnnxError(f"{source}: the file is empty, not an ONNX model")
    try:
        proto = onnx.ModelProto()
        proto.ParseFromString(blob)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise OnnxError(f"{source}: not a valid ONNX model (truncated or corrupted "
                        f"protobuf: {exc})") from None
    if not proto.HasField("graph") or proto.ir_version == 0:
        raise OnnxError(f"{source}: not an ONNX model (no graph or IR version); is it an "
                        f"ONNX file?")
    return from_proto(proto, source=source, folder=folder)


def from_proto(proto: Any, *, source: str = "<model>", folder: Path | None = None) -> Graph:
    """A `Graph` from an `onnx.ModelProto` already in memory."""
    opset = 0
    for imp in proto.opset_import:
        if imp.domain in _DEFAULT_DOMAINS:
            opset = int(imp.version)
    if opset == 0:
        opset = 1 if proto.ir_version < 3 else 0
    if opset == 0:
        raise OnnxError(f"{source}: the model imports no opset of the default ONNX domain")
    _check_versions(proto, opset, source)
    _check_counts(proto, source)
    g = proto.graph
    initializers: dict[str, TensorData] = {}
    for t in g.initializer:
        initializers[_Text(source)(t.name)] = tensor_data(t, source=source, folder=folder)
    for s in g.sparse_initializer:
        raise OnnxError(f"{source}: sparse initializer {s.values.name!r} is not supported; "
                        f"densify it before importing")
    text = _Text(source)
    nodes = [Node(op_type=text(n.op_type), inputs=text.all(n.input),
                  outputs=text.all(n.output), name=text(n.name),
                  attrs={text(a.name): attribute(a, source, folder) for a in n.attribute},
                  domain=text(n.domain))
             for n in g.node]
    meta = {text(p.key): text(p.value) for p in proto.metadata_props}
    return Graph(nodes=nodes, inputs=[_value_info(v, text) for v in g.input],
                 outputs=[_value_info(v, text) for v in g.output], initializers=initializers,
                 opset=opset, name=text(g.name) or "model", source=source,
                 doc=text(proto.doc_string), metadata=meta)


class _Text:
    """A string field of the file as str: protobuf hands over bytes for a field that is not
    valid UTF-8, which only a damaged or hand-made file has."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(self, value: object) -> str:
        if isinstance(value, str):
            return value
        raise OnnxError(f"{self.source}: a name or text field holds bytes that are not UTF-8 "
                        f"({bytes(value)[:40]!r}...): the file is corrupt"
                        if isinstance(value, (bytes, bytearray)) else
                        f"{self.source}: a text field holds a {type(value).__name__}")

    def all(self, values: Any) -> list[str]:
        return [self(v) for v in values]


def _check_versions(proto: Any, opset: int, source: str) -> None:
    """Refuse IR versions and opsets that do not exist or are newer than the onnx package
    knows: their operators might mean something else than what pyrite runs."""
    onnx = _onnx()
    newest_ir, newest_opset = int(onnx.IR_VERSION), int(onnx.defs.onnx_opset_version())
    if not 1 <= proto.ir_version <= newest_ir:
        raise OnnxError(f"{source}: ONNX IR version {proto.ir_version} is not one pyrite reads "
                        f"(1 to {newest_ir}); the file is corrupt or from a newer ONNX: "
                        f"re-export it with an older one")
    if not 1 <= opset <= newest_opset:
        raise OnnxError(f"{source}: ONNX opset {opset} is not one pyrite knows (1 to "
                        f"{newest_opset}); re-export the model with opset {newest_opset} or "
                        f"older")


def _check_counts(proto: Any, source: str) -> None:
    """Refuse a model holding more nodes, initializers, inputs, ... than MAX_COUNTS (and nodes
    with more inputs, outputs or attributes than MAX_NODE_COUNTS), before any is converted."""
    g = proto.graph
    found = {"nodes": len(g.node), "initializers": len(g.initializer),
             "graph inputs": len(g.input), "graph outputs": len(g.output),
             "metadata entries": len(proto.metadata_props),
             "opset imports": len(proto.opset_import)}
    for what, count in found.items():
        if count > MAX_COUNTS[what]:
            raise OnnxError(f"{source}: the model holds {count:,} {what}, more than the "
                            f"{MAX_COUNTS[what]:,} pyrite accepts (reader.MAX_COUNTS); the file "
                            f"is corrupt or hostile, or the model is too large to import")
    for i, n in enumerate(g.node):
        for what, count in (("inputs", len(n.input)), ("outputs", len(n.output)),
                            ("attributes", len(n.attribute))):
            if count > MAX_NODE_COUNTS[what]:
                raise OnnxError(f"{source}: node {i} holds {count:,} {what}, more than the "
                                f"{MAX_NODE_COUNTS[what]:,} pyrite accepts "
                                f"(reader.MAX_NODE_COUNTS); the file is corrupt or hostile")


def _value_info(v: Any, text: _Text) -> ValueInfo:
    tt = v.type.tensor_type if v.type.HasField("tensor_type") else None
    if tt is None:
        return ValueInfo(text(v.name), -1, None)  # a sequence, map or optional: reported by checks
    shape: tuple[int | str | None, ...] | None = None
    if tt.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (text(d.dim_param) or None)
                      for d in tt.shape.dim)
    return ValueInfo(text(v.name), int(tt.elem_type), shape)


def attribute(a: Any, source: str, folder: Path | None) -> Any:
    """An attribute's Python value: int, float, str, lists of those, TensorData, or a Graph
    marker for subgraphs (which pyrite reports as unsupported)."""
    kind = a.type
    if kind == 1:
        return float(a.f)
    if kind == 2:
        return int(a.i)
    if kind == 3:
        return a.s.decode("utf-8", "replace")
    if kind == 4:
        return tensor_data(a.t, source=source, folder=folder)
    if kind == 6:
        return [float(x) for x in a.floats]
    if kind == 7:
        return [int(x) for x in a.ints]
    if kind == 8:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if kind == 5 or kind == 10:
        return _Subgraph(a.name)
    return _Unsupported(a.name, kind)


class _Subgraph:
    """A graph-valued attribute (If/Loop/Scan bodies): kept only to be reported."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<subgraph {self.name}>"


class _Unsupported:
    def __init__(self, name: str, kind: int) -> None:
        self.name, self.kind = name, kind

    def __repr__(self) -> str:
        return f"<attribute {self.name} of type {self.kind}>"


def tensor_data(t: Any, *, source: str, folder: Path | None) -> TensorData:
    """A TensorProto's values as TensorData, its size checked against the bytes it carries."""
    name = t.name or "<unnamed>"
    dtype = onnx_dtype(t.data_type)
    if dtype is None:
        raise OnnxError(f"{source}: tensor {name!r} has element type {type_name(t.data_type)}, "
                        f"which pyrite cannot hold (supported: float16/32/64, int8/16/32/64, "
                        f"uint8, bool)")
    shape = tuple(int(d) for d in t.dims)
    if len(shape) > MAX_RANK:
        raise OnnxError(f"{source}: tensor {name!r} has {len(shape)} dimensions; pyrite holds "
                        f"tensors of at most {MAX_RANK}")
    if any(d < 0 for d in shape):
        raise OnnxError(f"{source}: tensor {name!r} has a negative dimension {list(shape)}")
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    if t.data_location == 1:  # EXTERNAL
        raw = _external(t, name, nbytes, source, folder)
    elif t.HasField("raw_data"):
        raw = t.raw_data
        if len(raw) != nbytes:
            raise OnnxError(f"{source}: tensor {name!r} declares shape {list(shape)} of "
                            f"{dtype} ({nbytes} bytes) but carries {len(raw)} bytes; the file "
                            f"is corrupted")
    else:
        field = _TYPED_FIELD[t.data_type]
        values = list(getattr(t, field))
        if len(values) != count:
            raise OnnxError(f"{source}: tensor {name!r} declares shape {list(shape)} "
                            f"({count} elements) but carries {len(values)} values; the file "
                            f"is corrupted")
        if t.data_type == 10:  # float16 bit patterns in int32_data
            import struct
            raw = struct.pack(f"<{count}H", *values)
            return TensorData.raw(raw, shape, dtype)
        return TensorData(values if shape else values[0], shape=shape, dtype=dtype)
    return TensorData.raw(bytes(raw), shape, dtype)


def _external(t: Any, name: str, nbytes: int, source: str, folder: Path | None) -> bytes:
    text = _Text(source)
    info = {text(e.key): text(e.value) for e in t.external_data}
    location = info.get("location", "")
    if folder is None:
        raise OnnxError(f"{source}: tensor {name!r} keeps its data in an external file "
                        f"{location!r}; load the model from its file so the folder is known")
    if not location or os.path.isabs(location) or ".." in Path(location).parts:
        raise OnnxError(f"{source}: tensor {name!r}: external data path {location!r} leaves "
                        f"the model's folder; only relative paths inside it are allowed")
    shown = location if len(location) <= 80 else location[:80] + "..."
    try:
        base = folder.resolve()
        target = (folder / location).resolve()
        if base not in target.parents:
            raise OnnxError(f"{source}: tensor {name!r}: external data path {shown!r} leaves "
                            f"the model's folder (it resolves to {target})")
        if not target.is_file():
            raise OnnxError(f"{source}: tensor {name!r}: external data file {target} is "
                            f"missing")
        size = target.stat().st_size
    except OSError as exc:  # a name too long, a loop of links, no permission
        raise OnnxError(f"{source}: tensor {name!r}: external data path {shown!r} cannot be "
                        f"read ({exc.strerror or exc})") from exc
    try:
        offset = int(info.get("offset", "0") or 0)
        length = int(info.get("length", str(nbytes)) or nbytes)
    except ValueError as exc:
        raise OnnxError(f"{source}: tensor {name!r}: external data offset or length is not an "
                        f"integer") from exc
    if length != nbytes or offset < 0 or offset + length > size:
        raise OnnxError(f"{source}: tensor {name!r}: external data {location!r} bytes "
                        f"[{offset}, {offset + length}) do not hold the declared {nbytes} "
                        f"bytes (the file has {size})")
    with open(target, "rb") as f:
        f.seek(offset)
        return f.read(nbytes)


__all__ = ["from_proto", "parse", "read", "tensor_data"]
