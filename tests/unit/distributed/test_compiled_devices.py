"""The compiled data-parallel step (core/distributed/compiled.py): each device's half-steps
captured and replayed, the gradients summed once on the host; equal to the eager step and to one
device stepping the whole batch. Natively on two webgpu devices of one adapter
(PYRITE_WEBGPU_DEVICES=0,0), and on numpy devices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.capture import CompileWarning
from pyrite.dataset import DataLoaderBuilder, MnistDataset, PartialDataset
from pyrite.demos.mnist.data import MnistBatch, MnistBatcher
from pyrite.demos.mnist.model import Model, ModelConfig
from pyrite.distributed.compiled import weighted_sum
from pyrite.errors import BackendUnavailable, ConfigError
from pyrite.optim import AdamConfig
from pyrite.train import Accuracy, LearnerBuilder, Loss, NoRenderer, TrainOutput

from .test_devices import relative


def reads_back(self: Model, batch: MnistBatch) -> TrainOutput[Any]:
    """The guide CNN's step with a readback in its middle: it cannot be captured."""
    item = self.forward_classification(batch.images, batch.targets)
    float(item.loss.detach().to_data().to_list()[0])  # a host read
    return TrainOutput(self, item.loss.backward(), item)


def fit(devices: list[str], path: Path, *, compiled: bool = True, steps: int = 6,
        batch: int = 16, dropout: float = 0.0) -> tuple[Any, Any]:
    """`steps` Adam steps of a small guide CNN on the first MNIST digits."""
    ad = pyrite.device(f"autodiff<{devices[0]}>")
    pyrite.seed(42, device=ad)
    model = ModelConfig(10, 32, dropout=dropout).init(ad)
    loader = (DataLoaderBuilder(MnistBatcher(ad)).batch_size(batch).shuffle(1)
              .build(PartialDataset(MnistDataset.train(), 0, steps * batch)))
    learner = (LearnerBuilder(path).metric_train_numeric(Loss())
               .metric_train_numeric(Accuracy()).renderer(NoRenderer())
               .with_application_logger(None).devices(devices).compile(compiled)
               .build(model, AdamConfig().init(), 1e-3))
    return learner.fit(loader), learner


def logged(path: Path, name: str) -> list[tuple[float, int]]:
    """The (value, items) lines of epoch 1's train log of metric `name`."""
    lines = (path / f"train/epoch-1/{name}.log").read_text().splitlines()
    return [(float(v), int(n)) for v, n in (line.split(",") for line in lines)]


def same_metrics(a: Path, b: Path) -> None:
    """The loss and accuracy each step logged in `a` and `b` agree (whole batches)."""
    for name in ("Loss", "Accuracy"):
        x, y = logged(a, name), logged(b, name)
        assert [n for _, n in x] == [n for _, n in y] and len(x) > 0
        assert [v for v, _ in x] == pytest.approx([v for v, _ in y], rel=1e-5), name


def two_webgpu_devices(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """["webgpu:0", "webgpu:1"], two devices of this machine's first adapter, or a skip."""
    webgpu = pytest.importorskip("pyrite.webgpu")
    try:
        webgpu.adapters()
    except BackendUnavailable as exc:
        pytest.skip(f"webgpu: {exc}")
    monkeypatch.setenv("PYRITE_WEBGPU_DEVICES", "0,0")
    return ["webgpu:0", "webgpu:1"]


def test_numpy_devices_take_the_compiled_step_by_default(tmp_path: Path) -> None:
    compiled, learner = fit(["numpy:0", "numpy:1"], tmp_path / "c", steps=8)
    assert learner.parallel.compiled is not None
    eager, plain = fit(["numpy:0", "numpy:1"], tmp_path / "e", steps=8, compiled=False)
    assert plain.parallel.compiled is None
    one, _ = fit(["numpy"], tmp_path / "one", steps=8)
    assert relative(compiled, eager) < 1e-6 and relative(compiled, one) < 1e-6
    assert relative(compiled, learner.parallel.replicas[1]) == 0.0
    same_metrics(tmp_path / "c", tmp_path / "e")
    same_metrics(tmp_path / "c", tmp_path / "one")


def test_two_webgpu_devices_replay_and_equal_the_eager_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    devices = two_webgpu_devices(monkeypatch)
    compiled, learner = fit(devices, tmp_path / "c")
    both = learner.parallel.compiled
    assert both is not None, "the compiled step fell back to eager"
    # every device's two half-steps were captured and then replayed, none ran eagerly for good
    for fn in (*both.grads, *both.apply):
        assert fn.replays >= 2 and fn.fallbacks == 0, (fn.captures, fn.replays, fn.fallbacks)
    assert learner.parallel.replicas[1].devices()[0].inner.name == "webgpu:1"
    assert relative(compiled, learner.parallel.replicas[1]) == 0.0  # replicas bit-equal
    eager, _ = fit(devices, tmp_path / "e", compiled=False)
    one, _ = fit(devices[:1], tmp_path / "one")
    assert relative(compiled, eager) < 1e-6
    assert relative(compiled, one) < 1e-6
    # the items (loss, outputs packed with the gradients; targets read apart) merged right
    same_metrics(tmp_path / "c", tmp_path / "e")
    same_metrics(tmp_path / "c", tmp_path / "one")


def test_dropout_masks_replay_as_eagerly_on_each_device(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    devices = two_webgpu_devices(monkeypatch)
    compiled, learner = fit(devices, tmp_path / "c", dropout=0.5)
    assert all(fn.replays >= 2 for fn in learner.parallel.compiled.grads)
    eager, _ = fit(devices, tmp_path / "e", dropout=0.5, compiled=False)
    # each device's generator, reseeded per rank, advanced on replays as eagerly
    assert relative(compiled, eager) < 1e-6
    assert relative(compiled, learner.parallel.replicas[1]) == 0.0


def test_a_step_that_cannot_be_captured_falls_back_to_the_eager_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    devices = two_webgpu_devices(monkeypatch)
    monkeypatch.setattr(Model, "train_step", reads_back)
    with pytest.warns(CompileWarning, match="reads a tensor back"):
        fallen, learner = fit(devices, tmp_path / "f", steps=3)
    assert learner.parallel.compiled is None  # the later steps took the eager path
    eager, _ = fit(devices, tmp_path / "e", steps=3, compiled=False)
    assert relative(fallen, eager) < 1e-6


def test_the_host_sum_adds_in_device_order_in_float32() -> None:
    parts = [np.array([1.0, 2.0], np.float32), np.array([0.5, -1.0], np.float32)]
    total = weighted_sum(parts, [3, 1])
    assert total.dtype == np.float32 and total.tolist() == [3.5, 5.0]


def test_webgpu_devices_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrite.webgpu.registration import _adapter_of

    assert _adapter_of(1, "0,0") == 0 and _adapter_of(1, "") == 1
    with pytest.raises(ConfigError, match="give adapter indices"):
        _adapter_of(0, "zero")
    with pytest.raises(ConfigError, match="webgpu:0 to webgpu:1 only"):
        _adapter_of(2, "0,0")


def test_a_step_without_gradients_is_one_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrite.optim import GradientsParams

    def no_grads(self: Model, batch: MnistBatch) -> TrainOutput[Any]:
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, GradientsParams(), item)
    monkeypatch.setattr(Model, "train_step", no_grads)
    with pytest.raises(ConfigError, match="train_step gave no param a gradient"):
        fit(["numpy:0", "numpy:1"], tmp_path, steps=1)


def test_the_charlm_trains_on_two_devices_as_on_one(tmp_path: Path) -> None:
    """`pyrite train charlm --device numpy:0,numpy:1` (a transformer, items of one row per
    character) ends where one device with the same batches ends."""
    from pyrite.cli import main

    for name, device in (("one", "autodiff<numpy>"), ("two", "numpy:0,numpy:1")):
        assert main(["train", "charlm", "--small", "--epochs", "1", "--steps-per-epoch", "3",
                     "--device", device, "--artifacts", str(tmp_path / name)]) == 0
    from pyrite.demos.charlm.generate import load

    one, two = (load("numpy", tmp_path / n / "model.bin", tmp_path / n / "config.json")
                for n in ("one", "two"))
    assert relative(one, two) < 1e-6
    one_loss, two_loss = (logged(tmp_path / n, "Loss") for n in ("one", "two"))
    assert [n for _, n in one_loss] == [n for _, n in two_loss]  # whole batches of characters
    assert [v for v, _ in one_loss] == pytest.approx([v for v, _ in two_loss], rel=1e-5)
