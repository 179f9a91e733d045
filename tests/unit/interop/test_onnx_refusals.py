"""ONNX files that must be refused with one OnnxError line: versions that do not exist or are
newer than pyrite knows, a Conv whose kernel_shape disagrees with its weight, and input that used
to escape as a Python error (a node without its input, an unknown auto_pad, a path too long for
the file system, a 207-dimension initializer). Long lists of problems are summarised."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyrite.errors import OnnxError
from pyrite.interop.onnx import reader
from pyrite.interop.onnx.codegen import import_onnx
from pyrite.interop.onnx.graph import Graph, Node
from pyrite.interop.onnx.registry import SHOWN, check

onnx = pytest.importorskip("onnx")
h, T = onnx.helper, onnx.TensorProto


def _model(nodes: list, inits: tuple = (), *, opset: int = 13, ir: int = 8) -> bytes:
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = ir
    return bytes(m.SerializeToString())


def _weight() -> object:
    return h.make_tensor("w", T.FLOAT, [1, 1, 3, 3], [0.1] * 9)


def _external_too_long() -> object:
    t = h.make_tensor("e", T.FLOAT, [1], [1.0])
    t.ClearField("float_data")
    t.data_location = 1
    t.external_data.add(key="location", value="a" * 4096)
    return t


RELU = [h.make_node("Relu", ["x"], ["y"])]
CASES = {
    "opset 99": (_model(RELU, opset=99), r"ONNX opset 99 is not one pyrite knows \(1 to \d+\)"),
    "opset 2^62": (_model(RELU, opset=2**62), r"ONNX opset 4611686018427387904 is not one"),
    "ir_version -1": (_model(RELU, ir=-1), r"ONNX IR version -1 is not one pyrite reads"),
    "kernel_shape": (_model([h.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[5, 5])],
                            (_weight(),)),
                     r"Conv, opset 13\): kernel_shape \[5, 5\] disagrees with the weight's "
                     r"spatial shape \[3, 3\]"),
    "Relu without input": (_model([h.make_node("Relu", [], ["y"])]),
                           r"Relu, opset 13\): the node's inputs or attributes do not fit the "
                           r"operator \(TypeError"),
    "auto_pad WHATEVER": (_model([h.make_node("Conv", ["x", "w"], ["y"], auto_pad="WHATEVER")],
                                 (_weight(),)), r"auto_pad 'WHATEVER' is not one of"),
    "4,096-char path": (_model([h.make_node("Add", ["x", "e"], ["y"])], (_external_too_long(),)),
                        r"tensor 'e': external data path 'a{80}\.\.\.' cannot be read"),
    "207 dimensions": (_model([h.make_node("Add", ["x", "b"], ["y"])],
                              (h.make_tensor("b", T.FLOAT, [1] * 207, [1.0]),)),
                       r"tensor 'b' has 207 dimensions; pyrite holds tensors of at most 32"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_with_one_clear_line(case: str, tmp_path: Path) -> None:
    blob, message = CASES[case]
    path = tmp_path / "m.onnx"
    path.write_bytes(blob)
    with pytest.raises(OnnxError, match=message) as err:
        import_onnx(path, tmp_path / "out")
    text = str(err.value)
    assert "\n" not in text and text.count(str(path)) == 1 and len(text) < 500
    assert not (tmp_path / "out").exists()  # nothing written


def test_a_supported_model_still_imports(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(_model([h.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])],
                            (_weight(),)))
    assert import_onnx(path, tmp_path / "out").module_path.exists()


def test_many_unsupported_nodes_are_summarised() -> None:
    graph = Graph(nodes=[Node("Bogus", [], [], name=f"n{i}") for i in range(100_000)],
                  inputs=[], outputs=[], initializers={}, opset=13, name="g", source="m.onnx")
    with pytest.raises(OnnxError) as err:
        check(graph)
    lines = str(err.value).splitlines()
    assert len(lines) == SHOWN + 2 and lines[-1] == f"  ... and {100_000 - SHOWN} more"
    assert lines[0] == "m.onnx: 100000 unsupported item(s); nothing was run:"


def _over(what: str) -> bytes:
    """A model holding one more of `what` than the reader accepts (empty nodes, as a hostile
    file has them)."""
    if what == "nodes":
        nodes = [onnx.NodeProto() for _ in range(reader.MAX_COUNTS["nodes"] + 1)]
        return _model(nodes)
    if what == "node inputs":
        return _model([h.make_node("Sum", ["x"] * (reader.MAX_NODE_COUNTS["inputs"] + 1),
                                   ["y"])])
    m = onnx.ModelProto()
    m.ParseFromString(_model(RELU))
    for i in range(reader.MAX_COUNTS["metadata entries"] + 1):
        m.metadata_props.add(key=f"k{i}", value="v")
    return bytes(m.SerializeToString())


@pytest.mark.parametrize("what,message", [
    ("nodes", r"holds 100,001 nodes, more than the 100,000 pyrite accepts \(reader.MAX_COUNTS\)"),
    ("node inputs", r"node 0 holds 10,001 inputs, more than the 10,000 pyrite accepts"),
    ("metadata entries", r"holds 10,001 metadata entries, more than the 10,000"),
])
def test_counts_are_bounded_before_anything_is_built(what: str, message: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def built(*args: object, **kwargs: object) -> None:
        raise AssertionError("a node was converted before the counts were checked")

    monkeypatch.setattr(reader, "Node", built)
    path = tmp_path / "m.onnx"
    path.write_bytes(_over(what))
    with pytest.raises(OnnxError, match=message) as err:
        import_onnx(path, tmp_path / "out")
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()
