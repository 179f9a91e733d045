"""SqueezeNet 1.1 from ONNX: the runtime module, the generated module and onnxruntime agree, on
numpy and webgpu, and the imported model fine-tunes. Needs $PYRITE_MODELS (CI sets it)."""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnx")

import pyrite  # noqa: E402
from pyrite import onnx as ponnx  # noqa: E402
from pyrite.interop.onnx.codegen import import_onnx  # noqa: E402
from pyrite.optim import GradientsParams, SgdConfig  # noqa: E402
from pyrite.record import BinFileRecorder  # noqa: E402


def _model_file() -> Path:
    root = os.environ.get("PYRITE_MODELS")
    path = Path(root or ".") / "squeezenet1.1" / "squeezenet1.1.onnx"
    if not root or not path.is_file():
        pytest.skip("SqueezeNet is not installed: set PYRITE_MODELS to a folder holding "
                    "squeezenet1.1/squeezenet1.1.onnx")
    return path


@cache
def _generated(out: str) -> tuple[type, Path]:
    result = import_onnx(_model_file(), out, name="squeezenet", class_name="SqueezeNet")
    spec = importlib.util.spec_from_file_location("test_gen_squeezenet", result.module_path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SqueezeNet, result.record_path


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[type, Path]:
    return _generated(str(tmp_path_factory.mktemp("squeezenet")))


def _pixels(batch: int) -> np.ndarray:
    return np.random.default_rng(1).uniform(-123, 151, (batch, 3, 227, 227)).astype("float32")


@cache
def _reference(batch: int) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(_model_file()), providers=["CPUExecutionProvider"])
    x = _pixels(batch)
    return np.concatenate([session.run(None, {"data": x[i:i + 1]})[0] for i in range(batch)])


@pytest.mark.parametrize("device", ["numpy", "webgpu"])
def test_runtime_and_generated_match_onnxruntime(device: str, generated, device_named) -> None:
    device_named(device)
    batch = 2 if device == "numpy" else 1
    want = _reference(batch)
    x = pyrite.tensor(_pixels(batch), device=device)
    cls, record = generated
    gen = cls(device).load_file(record, BinFileRecorder())
    run = ponnx.load(_model_file(), device)
    for model in (gen, run):
        got = model(x).numpy()
        assert got.shape == (batch, 1000)
        np.testing.assert_allclose(got, want, atol=1e-5)
        assert (got.argmax(1) == want.argmax(1)).all()


def test_generated_source_is_readable(generated) -> None:
    cls, record = generated
    src = record.with_suffix(".py").read_text()
    assert src.count("nn.Conv2dConfig(") == 26
    assert src.count("nn.MaxPool2dConfig(") == 3
    assert "cat([fire2_expand1x1_relu, fire2_expand3x3_relu], 1)" in src
    assert ".reshape([-1, 1000])" in src


def test_one_training_step_lowers_the_loss(generated) -> None:
    dev = "autodiff<numpy>"
    cls, record = generated
    model = cls(dev).load_file(record, BinFileRecorder())
    x = pyrite.tensor(_pixels(1), device=dev)
    target = 7  # the class to move towards ("cock")

    def loss_of(m):
        return (1.0 - m(x).index((slice(None), slice(target, target + 1)))).mean()

    before = loss_of(model)
    grads = GradientsParams.from_grads(before.backward(), model)
    tuned = SgdConfig().init().step(1e-4, model, grads)
    w0, w1 = model.conv10.weight.val.numpy(), tuned.conv10.weight.val.numpy()
    assert not np.array_equal(w0, w1)
    assert loss_of(tuned).into_scalar() < before.into_scalar()


def test_generated_module_replays_as_it_runs_eagerly(generated, device_named) -> None:
    """The generated SqueezeNet's compiled forward: the replay equals the eager forward."""
    device_named("webgpu")
    cls, record = generated
    model = cls("webgpu").load_file(record, BinFileRecorder())
    x = pyrite.tensor(_pixels(1), device="webgpu")
    eager = cls.forward.fn(model, x).numpy()  # its forward is compiled: the function under it
    replays, fallbacks = cls.forward.replays, cls.forward.fallbacks
    got = [model(x).numpy() for _ in range(3)]  # capture, check, replay
    # (at least one: a model loaded from the same record earlier shares the signature)
    assert cls.forward.replays >= replays + 1 and cls.forward.fallbacks == fallbacks
    for out in got:
        np.testing.assert_allclose(out, eager, rtol=1e-6, atol=1e-6)
