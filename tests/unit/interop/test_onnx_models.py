"""Models as PyTorch's exporter writes them (fixtures made by make_onnx_fixtures.py): a
BERT-like encoder and a MobileNetV2-style block run through `pyrite.onnx.load` and through
`pyrite import-onnx` code, equal to onnxruntime at several batch sizes, on numpy and webgpu."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
ort = pytest.importorskip("onnxruntime")

import pyrite  # noqa: E402
from pyrite import onnx as ponnx  # noqa: E402
from pyrite.interop.onnx.codegen import import_onnx  # noqa: E402
from pyrite.record import BinFileRecorder  # noqa: E402

FIXTURES = Path(__file__).with_name("fixtures")
SHAPES = {"encoder": (7, 16), "mobile": (3, 32, 32)}


@pytest.fixture(scope="module", params=sorted(SHAPES))
def model(request, tmp_path_factory):
    name = request.param
    path = FIXTURES / f"{name}.onnx"
    result = import_onnx(path, tmp_path_factory.mktemp(name), name=name,
                         input_shapes={"x": [1, *SHAPES[name]]})
    spec = importlib.util.spec_from_file_location(f"gen_{name}", result.module_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return name, path, result, getattr(mod, result.class_name)


@pytest.mark.parametrize("device", ["numpy", "webgpu"])
def test_matches_onnxruntime(model, device, device_named):
    name, path, result, cls = model
    device_named(device)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    generated = cls(device).load_file(result.record_path, BinFileRecorder())
    runtime = ponnx.load(path, device)
    rng = np.random.default_rng(3)
    for batch in (1, 3):
        x = rng.standard_normal((batch, *SHAPES[name])).astype("float32")
        want = session.run(None, {"x": x})[0]
        for m in (generated, runtime):
            got = m(pyrite.tensor(x, device=device)).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_generated_code_reads_like_pyrite(model):
    name, _, result, _ = model
    src = result.module_path.read_text()
    assert max(len(line) for line in src.splitlines()) <= 100
    if name == "mobile":
        assert "groups=24" in src  # the depthwise conv is an nn.Conv2d
        assert "nn.LinearConfig(8, 10)" in src
    else:
        assert ".softmax(" in src and "nn.LinearConfig(16, 32" in src
        assert "O.Shape" not in src  # the exporter's shape arithmetic is folded
