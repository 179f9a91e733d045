"""Burn's guide as shipped in pyrite.demos.mnist: the model's shape, a short Learner run on a
slice of MNIST, and inference printing the book's line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pyrite
from pyrite.dataset import DataLoader, MnistDataset, PartialDataset
from pyrite.demos.mnist import MnistBatcher, ModelConfig
from pyrite.demos.mnist.cli import main as guide_main
from pyrite.demos.mnist.inference import SHIPPED
from pyrite.optim import AdamConfig
from pyrite.record import BinFileRecorder
from pyrite.train import Accuracy, LearnerBuilder, Loss, NoRenderer

REPO = Path(__file__).resolve().parents[3]
DATA = next((p for p in (os.environ.get("PYRITE_TEST_DATA"), REPO / "shared/data",
                         REPO.parent / "shared/data") if p and (Path(p) / "mnist").is_dir()), None)
needs_mnist = pytest.mark.skipif(DATA is None, reason="no MNIST files (shared/data/mnist)")


@pytest.fixture
def mnist_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYRITE_DATA", str(DATA))


def test_the_model_is_the_books() -> None:
    model = ModelConfig(10, 512).init("numpy")
    assert model.num_params() == 531178
    text = repr(model)
    assert "linear1: Linear {d_input: 1024, d_output: 512" in text
    assert "dropout: Dropout {prob: 0.5}" in text
    images = pyrite.zeros((2, 28, 28), device="numpy")
    assert model.forward(images).shape == (2, 10)


@needs_mnist
def test_a_short_learner_run_on_an_mnist_slice(tmp_path: Path, mnist_env: None) -> None:
    ad = pyrite.device("autodiff<numpy>")
    pyrite.seed(1)
    train = DataLoader(PartialDataset(MnistDataset("train"), 0, 256), MnistBatcher(ad),
                       batch_size=64, shuffle=True, seed=1)
    valid = DataLoader(PartialDataset(MnistDataset("test"), 0, 128), MnistBatcher("numpy"),
                       batch_size=64)
    learner = (LearnerBuilder(tmp_path)
               .metric_train_numeric(Loss()).metric_valid_numeric(Accuracy())
               .with_file_checkpointer(BinFileRecorder()).renderer(NoRenderer())
               .num_epochs(2).build(ModelConfig(10, 64).init(ad), AdamConfig().init(), 1e-3))
    learner.fit(train, valid)
    rows = {(r.split, r.metric): r for r in learner.summary.rows}  # type: ignore[union-attr]
    assert rows[("Train", "Loss")].min_epoch == 2  # it learns
    assert (tmp_path / "checkpoint/model-2.bin").exists()


@needs_mnist
@pytest.mark.skipif(not SHIPPED.exists(), reason="the trained record is not committed yet")
def test_infer_with_the_shipped_record(mnist_env: None, capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrite.demos.mnist import cli

    # an --artifacts folder without a model is refused, not silently replaced by the shipped one
    assert guide_main(["infer", "mnist", "--index", "42", "--artifacts", str(tmp_path)]) == 2
    assert "holds no trained model" in capsys.readouterr().err
    monkeypatch.setattr(cli, "DEFAULT_ARTIFACTS", str(tmp_path / "none"))  # no trained model
    assert guide_main(["infer", "mnist", "--index", "42"]) == 0
    assert capsys.readouterr().out == "Predicted 4 Expected 4\n"


@needs_mnist
def test_custom_training_loop_example_runs(mnist_env: None,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("custom_training_loop",
                                                  REPO / "examples/custom_training_loop.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)  # dataclasses look their module up
    spec.loader.exec_module(example)
    example.run(epochs=1, limit=2, split_rates=True)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("]")[0] for line in lines] == [
        "[Train - Epoch 1 - Iteration 0", "[Train - Epoch 1 - Iteration 1",
        "[Valid - Epoch 1 - Iteration 0", "[Valid - Epoch 1 - Iteration 1"]
    assert " | Accuracy " in lines[0]


@needs_mnist
@pytest.mark.skipif(not SHIPPED.exists(), reason="the trained record is not committed yet")
def test_evaluate_batches_on_the_models_own_device(mnist_env: None, tmp_path: Path,
                                                   backend: pyrite.Backend) -> None:
    # export after training on webgpu once evaluated with numpy batches: a device mismatch
    from pyrite.demos.mnist.inference import evaluate, load_model
    model = load_model(tmp_path, backend.name)
    assert evaluate(model, limit=200) >= 97.0
