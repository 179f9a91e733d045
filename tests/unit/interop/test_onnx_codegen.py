"""`pyrite import-onnx`: generated modules use nn layers, fold shape arithmetic into literals,
leave the batch free, and compute what the runtime module computes."""

from __future__ import annotations

import importlib.util
import sys

import pytest

onnx = pytest.importorskip("onnx")
np = pytest.importorskip("numpy")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import pyrite  # noqa: E402
from pyrite import onnx as ponnx  # noqa: E402
from pyrite.errors import OnnxError  # noqa: E402
from pyrite.interop.onnx import cli, codegen  # noqa: E402
from pyrite.record import BinFileRecorder  # noqa: E402

RNG = np.random.default_rng(0)


def _init(name, shape):
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def _save(tmp_path, nodes, inputs, outputs, inits, name="m", opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _mlp(tmp_path):
    """Gemm(transB) -> Relu -> MatMul + Add -> LayerNorm -> BatchNorm-free head, with a
    Shape/Gather/Unsqueeze/Concat/Reshape chain that folds away."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])
    inits = [_init("w1", (6, 8)), _init("b1", (6,)), _init("w2", (6, 5)), _init("b2", (5,)),
             _init("g", (5,)), _init("beta", (5,)),
             numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0")]
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"], name="shape"),
        helper.make_node("Gather", ["sx", "zero"], ["n"], name="batch_size", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="n1"),
        helper.make_node("Concat", ["n1", "minus1"], ["flat_shape"], name="cat_shape", axis=0),
        helper.make_node("Reshape", ["x", "flat_shape"], ["xf"], name="flatten"),
        helper.make_node("Gemm", ["xf", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["hr"], name="act"),
        helper.make_node("MatMul", ["hr", "w2"], ["m"], name="fc2"),
        helper.make_node("Add", ["m", "b2"], ["o"], name="fc2_bias"),
        helper.make_node("LayerNormalization", ["o", "g", "beta"], ["y"], name="norm",
                         axis=-1, epsilon=1e-5),
    ]
    return _save(tmp_path, nodes, [x], [y], inits, name="mlp")


def _import(tmp_path, path, **kw):
    out = tmp_path / "out"
    result = codegen.import_onnx(path, out, **kw)
    spec = importlib.util.spec_from_file_location(f"gen_{path.stem}", result.module_path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return result, getattr(mod, result.class_name)


def test_mlp_uses_layers_and_folds_shapes(tmp_path):
    path = _mlp(tmp_path)
    result, cls = _import(tmp_path, path)
    src = result.module_path.read_text()
    assert "nn.LinearConfig(8, 6).init(device)" in src  # Gemm with transB
    assert "nn.LinearConfig(6, 5).init(device)" in src  # MatMul + Add
    assert "nn.LayerNormConfig(5, epsilon=1e-05)" in src
    assert "hr = consuming.relu(h)" in src  # h dies here: its memory takes the ReLU
    assert "del h" in src
    assert ".reshape([-1, 8])" in src  # Shape/Gather/Unsqueeze/Concat folded, batch free
    assert "Shape" not in src.split("class")[1] and "Gather" not in src
    compile(src, str(result.module_path), "exec")
    model = cls("numpy").load_file(result.record_path, BinFileRecorder())
    runtime = ponnx.load(path, "numpy")
    for batch in (1, 3):
        x = pyrite.tensor(RNG.standard_normal((batch, 2, 4)).astype(np.float32), device="numpy")
        a, b = model(x).numpy(), runtime(x).numpy()
        assert a.shape == (batch, 5)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", ["numpy", "webgpu"])
def test_generated_module_trains(tmp_path, device, device_named):
    device_named(device)
    path = _mlp(tmp_path)
    result, cls = _import(tmp_path, path)
    dev = f"autodiff<{device}>"
    model = cls(dev).load_file(result.record_path, BinFileRecorder())
    x = pyrite.tensor(RNG.standard_normal((4, 2, 4)).astype(np.float32), device=dev)
    runtime = ponnx.load(path, dev)
    for _ in range(3):  # both forwards are compiled: tracked calls stay eager, graph and all
        y = model(x)
        grads = (y * y).mean().backward()
        assert model.fc1.weight.val.grad(grads).shape == (8, 6)
        grads = (runtime(x) ** 2).mean().backward()
        assert runtime.w1.val.grad(grads).shape == (6, 8)


def test_generated_forward_replays_on_webgpu(tmp_path, device_named):
    device_named("webgpu")
    path = _mlp(tmp_path)
    result, cls = _import(tmp_path, path)
    assert "    @pyrite.compile(warn=False, inference=True)\n    def forward(" in \
        result.module_path.read_text()
    model = cls("webgpu").load_file(result.record_path, BinFileRecorder())
    replays = cls.forward.replays
    for _ in range(3):  # capture, check, replay
        x = RNG.standard_normal((3, 2, 4)).astype(np.float32)
        eager = cls.forward.fn(model, pyrite.tensor(x, device="webgpu")).numpy()
        got = model(pyrite.tensor(x, device="webgpu")).numpy()
        np.testing.assert_allclose(got, eager, rtol=1e-6, atol=1e-6)
    assert cls.forward.replays == replays + 1


def test_half_precision_record_and_recorders(tmp_path):
    path = _mlp(tmp_path)
    result = codegen.import_onnx(path, tmp_path / "h", precision="half", recorder="mpk")
    assert result.record_path.name == "mlp.mpk"
    with pytest.raises(OnnxError, match="unknown recorder"):
        codegen.import_onnx(path, tmp_path / "x", recorder="zip")


def test_cli_writes_module_and_record(tmp_path, capsys):
    path = _mlp(tmp_path)
    from pyrite.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["import-onnx", str(path), "--out", str(tmp_path / "c"),
                              "--class-name", "Mlp"])
    assert args.run(args) == 0
    assert "class Mlp" in (tmp_path / "c" / "mlp.py").read_text()
    assert (tmp_path / "c" / "mlp.bin").is_file()
    assert "wrote" in capsys.readouterr().out
    args = parser.parse_args(["import-onnx", str(path), "--check"])
    assert args.run(args) == 0
    assert cli._shapes(["x=1,2,4"]) == {"x": [1, 2, 4]}


def test_unsupported_model_is_refused_with_every_problem(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Foo", ["x"], ["a"], name="f1"),
             helper.make_node("Bar", ["a"], ["y"], name="f2")]
    graph = helper.make_graph(nodes, "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxError, match=r"2 unsupported item\(s\)(.|\n)*Foo(.|\n)*Bar"):
        codegen.import_onnx(path, tmp_path / "o")
    assert not (tmp_path / "o" / "bad.py").exists()


def test_cli_refusal_is_one_line_that_reads_naturally(tmp_path, capsys, monkeypatch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Foo", ["x"], ["a"], name="f1"),
             helper.make_node("Relu", ["a"], ["y"], name="r1", bogus=1)]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    from pyrite.cli import main

    monkeypatch.delenv("PYRITE_DEBUG", raising=False)
    assert main(["import-onnx", str(path), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        f"pyrite import-onnx: error: {path}: 2 unsupported item(s); nothing was run: "
        f"node 'f1' (Foo, opset 17): operator Foo is not supported; "
        f"node 'r1' (Relu, opset 17): attribute 'bogus' is not supported\n")
    assert not (tmp_path / "o").exists()
