"""Bad ONNX files give clear pyrite errors naming the file and the problem, before anything
runs or allocates what the file cannot justify; unsupported graphs are refused all at once."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
np = pytest.importorskip("numpy")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import pyrite  # noqa: E402
from pyrite import onnx as ponnx  # noqa: E402
from pyrite.errors import OnnxError  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _relu_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y])


def test_a_good_file_runs(tmp_path):
    path = tmp_path / "relu.onnx"
    path.write_bytes(_relu_model().SerializeToString())
    m = ponnx.load(path, "numpy")
    y = m(pyrite.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], device="numpy"))
    assert y.to_list() == [[0.0, 2.0, 0.0], [4.0, 0.0, 6.0]]


def test_missing_file(tmp_path):
    with pytest.raises(OnnxError, match=r"nope\.onnx: no such ONNX file"):
        ponnx.load(tmp_path / "nope.onnx")


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_file(tmp_path, cut):
    blob = _relu_model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(blob[: int(len(blob) * cut)])
    with pytest.raises(OnnxError, match=r"cut\.onnx: not (a valid )?(an )?ONNX model"):
        ponnx.load(path)


def test_wrong_header(tmp_path):
    path = tmp_path / "photo.onnx"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(OnnxError, match=r"photo\.onnx: not"):
        ponnx.load(path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(OnnxError, match="empty"):
        ponnx.load(path)


def test_absurd_shape_is_refused_without_allocating(tmp_path):
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([1_000_000, 1_000_000])  # 10^12 elements, 4 TB
    t.raw_data = b"\0" * 16
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = _model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y], [t])
    path = tmp_path / "huge.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxError, match=r"huge\.onnx: tensor 'w' declares shape "
                                        r"\[1000000, 1000000\].*carries 16 bytes"):
        ponnx.load(path)


def _external_model(location: str):
    t = numpy_helper.from_array(np.ones((2,), np.float32), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "8")):
        e = t.external_data.add()
        e.key, e.value = k, v
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    return _model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y], [t])


def test_external_data_inside_the_folder_loads(tmp_path):
    (tmp_path / "weights.bin").write_bytes(np.array([1.5, 2.5], np.float32).tobytes())
    path = tmp_path / "ext.onnx"
    path.write_bytes(_external_model("weights.bin").SerializeToString())
    y = ponnx.load(path, "numpy")(pyrite.tensor([1.0, 1.0], device="numpy"))
    assert y.to_list() == [2.5, 3.5]


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd", "sub/../../x.bin"])
def test_external_data_leaving_the_folder_is_refused(tmp_path, location):
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\0" * 8)
    path = folder / "ext.onnx"
    path.write_bytes(_external_model(location).SerializeToString())
    with pytest.raises(OnnxError, match="leaves the model's folder"):
        ponnx.load(path)


def test_external_data_missing_or_short(tmp_path):
    path = tmp_path / "ext.onnx"
    path.write_bytes(_external_model("weights.bin").SerializeToString())
    with pytest.raises(OnnxError, match="external data file .*weights.bin is missing"):
        ponnx.load(path)
    (tmp_path / "weights.bin").write_bytes(b"\0" * 4)
    with pytest.raises(OnnxError, match="do not hold the declared 8 bytes"):
        ponnx.load(path)


def test_unsupported_items_are_listed_all_at_once(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("FancyOp", ["a"], ["b"], name="first_bad"),
             helper.make_node("Relu", ["b"], ["c"], name="bad_attr", bogus=3),
             helper.make_node("MyOp", ["c"], ["y"], name="custom", domain="com.example")]
    model = _model(nodes, [x], [y], opset=17)
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxError) as err:
        ponnx.load(path)
    text = str(err.value)
    assert "3 unsupported item(s); nothing was run" in text
    assert "node 'first_bad' (FancyOp, opset 17): operator FancyOp is not supported" in text
    assert "node 'bad_attr' (Relu, opset 17): attribute 'bogus' is not supported" in text
    assert "node 'custom' (MyOp, opset 17): operator domain 'com.example'" in text


def test_unsupported_dtype_names_the_tensor(tmp_path):
    t = helper.make_tensor("s", TensorProto.STRING, [1], [b"hi"])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    model = _model([helper.make_node("Identity", ["x"], ["y"])], [x],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [t])
    path = tmp_path / "str.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxError, match="tensor 's' has element type STRING"):
        ponnx.load(path)


def test_a_control_flow_graph_is_refused_before_running(tmp_path):
    body = helper.make_graph([], "body", [], [])
    x = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    node = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=body,
                            else_branch=body)
    path = tmp_path / "if.onnx"
    path.write_bytes(_model([node], [x], [y]).SerializeToString())
    with pytest.raises(OnnxError, match=r"node 'branch' \(If, opset 13\)"):
        ponnx.load(path)
