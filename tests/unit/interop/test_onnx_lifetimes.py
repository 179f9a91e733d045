"""Generated code frees its values after their last use and gives owned temporaries to
`pyrite.consuming`: the plan itself, and a generated module that computes what the runtime does
without touching its input."""

from __future__ import annotations

import pytest

from pyrite.interop.onnx.lifetimes import Reuse, plan

onnx = pytest.importorskip("onnx")
np = pytest.importorskip("numpy")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import pyrite  # noqa: E402
from pyrite import onnx as ponnx  # noqa: E402
from pyrite.interop.onnx import codegen  # noqa: E402

PAD = " " * 8


def _reuse(target: str, fn: str, *operands: str) -> dict[str, Reuse]:
    return {target: Reuse({o: f"{PAD}{target} = consuming.{fn}({o})" for o in operands})}


def test_a_value_is_deleted_after_its_last_read() -> None:
    body = [f"{PAD}a = self.conv(x)", f"{PAD}b = activation.relu(a)", f"{PAD}c = b + a",
            f"{PAD}d = self.fc(c)"]
    out = plan(body, "d", {"x"}, {"a", "b", "c", "d"}, {})
    assert out == [body[0], body[1], body[2], f"{PAD}del b, a", body[3], f"{PAD}del c"]


def test_an_owned_temporary_is_consumed_at_its_last_read() -> None:
    body = [f"{PAD}a = self.conv(x)", f"{PAD}b = activation.relu(a)", f"{PAD}y = self.fc(b)"]
    out = plan(body, "y", {"x"}, {"a", "b", "y"}, _reuse("b", "relu", "a"))
    assert out[1] == f"{PAD}b = consuming.relu(a)" and out[2] == f"{PAD}del a"


@pytest.mark.parametrize("case", ["read later", "viewed", "a feed", "returned", "read twice",
                                  "not fresh"])
def test_what_is_not_consumed(case: str) -> None:
    body = {
        "read later": [f"{PAD}a = self.conv(x)", f"{PAD}b = activation.relu(a)",
                       f"{PAD}y = b + a"],
        # a reshape's result shares a's memory: a must stay as it is while v lives
        "viewed": [f"{PAD}a = self.conv(x)", f"{PAD}v = a.reshape([-1])",
                   f"{PAD}b = activation.relu(a)", f"{PAD}y = v + 1.0"],
        "a feed": [f"{PAD}b = activation.relu(x)", f"{PAD}y = self.fc(b)"],
        "returned": [f"{PAD}a = self.conv(x)", f"{PAD}b = activation.relu(a)"],
        "read twice": [f"{PAD}a = self.conv(x)", f"{PAD}b = a * a"],
        "not fresh": [f"{PAD}a: Tensor = O.Slice(x, [0], [1])", f"{PAD}b = activation.relu(a)"],
    }[case]
    feeds, ret = {"x"}, "(a, b)" if case == "returned" else ("b" if "y" not in body[-1]
                                                             else "y")
    fresh = {"b", "y", "v"} | ({"a"} if case != "not fresh" else set())
    fresh.discard("v")
    reuse = _reuse("b", "relu", "a", "x")
    out = plan(body, ret, feeds, fresh, reuse)
    assert not any("consuming" in line for line in out), out
    assert f"{PAD}del x" not in out  # a feed is the caller's


def _model(tmp_path):
    """Conv -> Relu (fused), Conv -> Add(with the first ReLU) -> Relu (consumed) ->
    Reshape (a view) -> Sigmoid, and the input added to a constant at the end."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 6, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 120])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 3, 6, 5])
    rng = np.random.default_rng(2)

    def init(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    inits = [init("w1", (4, 3, 3, 3)), init("b1", (4,)), init("w2", (4, 4, 1, 1)),
             init("k", (1, 3, 6, 5)),
             numpy_helper.from_array(np.array([-1, 120], np.int64), "shape")]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
        helper.make_node("Add", ["c2", "r1"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("Reshape", ["r2", "shape"], ["f"], name="flat"),
        helper.make_node("Sigmoid", ["f"], ["y"], name="sig"),
        helper.make_node("Add", ["x", "k"], ["z"], name="shift"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y, z], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_generated_module_frees_consumes_and_leaves_its_input_alone(tmp_path) -> None:
    path = _model(tmp_path)
    from pyrite.interop.onnx.reader import read

    gen = codegen.generate(read(path), class_name="M")
    src = gen.source
    assert "activation='relu'" in src  # Conv + Relu as one op
    assert "r2 = consuming.relu(s)" in src  # s dies at the ReLU
    assert "s = consuming.add(c2, r1)" in src  # both die at the Add: the first is given up
    assert "consuming.sigmoid" not in src  # f is a view of r2
    assert "consuming.add(x" not in src  # the input is the caller's
    assert "del c2, r1" in src or "del r1, c2" in src
    model = codegen.build(gen, "numpy")
    runtime = ponnx.load(path, "numpy")
    for batch in (1, 3):
        data = np.random.default_rng(batch).standard_normal((batch, 3, 6, 5)).astype(np.float32)
        x = pyrite.tensor(data.copy(), device="numpy")
        got = [t.numpy() for t in model(x)]
        np.testing.assert_array_equal(x.numpy(), data)  # the input is untouched
        want = [t.numpy() for t in runtime(pyrite.tensor(data, device="numpy"))]
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_generated_module_trains_through_the_consuming_forms(tmp_path) -> None:
    """On Autodiff the consuming forms are the plain ops: gradients flow through them."""
    from pyrite.interop.onnx.reader import read

    gen = codegen.generate(read(_model(tmp_path)), class_name="M")
    model = codegen.build(gen, "autodiff<numpy>")
    x = pyrite.tensor(np.ones((2, 3, 6, 5), np.float32), device="autodiff<numpy>")
    y, _ = model(x)
    grads = (y * y).mean().backward()
    g = model.conv1.weight.val.grad(grads)
    assert g.shape == (4, 3, 3, 3) and float(g.abs().sum().item()) > 0
