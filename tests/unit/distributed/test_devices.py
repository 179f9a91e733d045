"""Several devices in one process: `LearnerBuilder.devices(["numpy:0", "numpy:1"])` trains
data-parallel and ends with the parameters of one device stepping the whole batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.dataset import DataLoaderBuilder, MnistDataset, PartialDataset
from pyrite.demos.mnist.data import MnistBatcher
from pyrite.demos.mnist.model import ModelConfig
from pyrite.distributed import merge_items, slice_sizes, split_batch
from pyrite.errors import BackendUnavailable, ConfigError
from pyrite.optim import AdamConfig
from pyrite.train import Accuracy, ClassificationOutput, LearnerBuilder, Loss, NoRenderer

STEPS, BATCH = 20, 32


def guide(devices: list[str], path: Path, *, dropout: float = 0.0) -> Any:
    """20 Adam steps of the guide CNN (small) on the first 640 MNIST digits."""
    ad = pyrite.device(f"autodiff<{devices[0]}>")
    pyrite.seed(42, device=ad)
    model = ModelConfig(10, 64, dropout=dropout).init(ad)
    loader = (DataLoaderBuilder(MnistBatcher(ad)).batch_size(BATCH).shuffle(1)
              .build(PartialDataset(MnistDataset.train(), 0, STEPS * BATCH)))
    learner = (LearnerBuilder(path).metric_train_numeric(Loss()).metric_train(Accuracy())
               .renderer(NoRenderer()).with_application_logger(None).devices(devices)
               .build(model, AdamConfig().init(), 1e-3))
    return learner.fit(loader), learner


def relative(a: Any, b: Any) -> float:
    """The largest relative difference (L2 norms) between two models' params."""
    return max(float(np.linalg.norm(x.val.numpy() - y.val.numpy()) / np.linalg.norm(x.val.numpy()))
               for x, y in zip(a.params(), b.params(), strict=True))


def test_two_numpy_devices_equal_one_device_with_the_whole_batch(tmp_path: Path) -> None:
    one, _ = guide(["numpy"], tmp_path / "one")
    two, learner = guide(["numpy:0", "numpy:1"], tmp_path / "two")
    assert two.devices() == [pyrite.device("autodiff<numpy:0>")]
    replica = learner.parallel.replicas[1]
    assert replica.devices() == [pyrite.device("autodiff<numpy:1>")]
    assert relative(one, two) < 1e-6
    assert relative(two, replica) == 0.0  # every replica took the same step
    # the metrics saw the whole batch: 32 items a step, logged once per step
    lines = (tmp_path / "two/train/epoch-1/Loss.log").read_text().splitlines()
    assert len(lines) == STEPS and all(line.endswith(",32") for line in lines)


def test_a_batch_is_cut_in_slices_and_items_merge_back() -> None:
    assert slice_sizes(5, 2) == [3, 2] and slice_sizes(1, 3) == [1, 0, 0]
    devs = [pyrite.device("numpy:0"), pyrite.device("numpy:1")]
    x = pyrite.tensor(np.arange(10, dtype=np.float32).reshape(5, 2), device="numpy")
    y = pyrite.tensor([0, 1, 2, 3, 4], device="numpy")
    a, b = split_batch((x, y, "label"), [3, 2], devs)
    assert a[0].device == devs[0] and b[1].device == devs[1] and a[2] == "label"
    assert b[1].to_list() == [3, 4] and a[0].shape == (3, 2)
    items = [ClassificationOutput(pyrite.tensor([1.0], device=d), part[0], part[1])
             for d, part in zip(devs, (a, b), strict=True)]
    merged = merge_items(items, [3, 2], devs[0])
    assert merged.targets.to_list() == [0, 1, 2, 3, 4] and merged.output.shape == (5, 2)
    assert merged.loss.to_list() == pytest.approx([1.0])


def test_dropout_streams_differ_per_device_and_repeat_per_seed(tmp_path: Path) -> None:
    first, learner = guide(["numpy:0", "numpy:1"], tmp_path / "a", dropout=0.5)
    draws = [pyrite.random((4,), device=f"numpy:{r}").to_list() for r in (0, 1)]
    again, _ = guide(["numpy:0", "numpy:1"], tmp_path / "b", dropout=0.5)
    assert relative(first, again) == 0.0
    # both devices drew as many numbers, from streams seeded apart
    assert draws[0] != draws[1]


def test_bad_devices_fail_at_once(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="unknown device 'nopu:1'"):
        pyrite.device("nopu:1")
    with pytest.raises(ConfigError, match="named twice"):
        guide(["numpy:0", "numpy:0"], tmp_path / "c")
    with pytest.raises(ConfigError, match="at least one device"):
        LearnerBuilder(tmp_path).devices([])


@pytest.mark.slow
def test_with_dropout_one_epoch_on_two_devices_reaches_one_devices_accuracy(
        tmp_path: Path) -> None:
    """The committed guide config (dropout 0.5), one epoch of the 60,000 digits: two numpy
    devices (per-device dropout streams) validate within 0.5 points of one device."""
    from pyrite.demos.mnist.predict import CONFIG
    from pyrite.demos.mnist.training import TrainingConfig, train

    config = TrainingConfig.load(CONFIG).with_num_epochs(1)
    accuracy = {}
    for devices in ("autodiff<numpy>", "autodiff<numpy:0>,numpy:1"):
        folder = tmp_path / str(len(accuracy))
        train(folder, config, devices)
        lines = (folder / "valid/epoch-1/Accuracy.log").read_text().splitlines()
        right = sum(float(v) * int(n) for v, n in (line.split(",") for line in lines))
        accuracy[devices] = right / sum(int(line.split(",")[1]) for line in lines)
    one, two = accuracy.values()
    assert abs(one - two) <= 0.5, accuracy


def test_a_sharded_loader_gives_each_rank_its_slice_of_every_batch() -> None:
    from pyrite.dataset import DataLoader, InMemDataset
    from pyrite.distributed import ShardedDataLoader

    loader = DataLoader(InMemDataset(list(range(23))), list, batch_size=8, shuffle=True, seed=5)
    whole = list(loader)
    loader.set_epoch(0)
    ranks = [list(ShardedDataLoader(loader, r, 3)) for r in range(3)]
    assert [sum(parts, []) for parts in zip(*ranks, strict=True)] == whole
    assert [len(b) for b in ranks[0]] == [3, 3, 3] and [len(b) for b in ranks[2]] == [2, 2, 2]
    resumed = ShardedDataLoader(loader, 1, 3)
    resumed.set_epoch(0, skip=2)
    assert list(resumed) == ranks[1][2:]
    with pytest.raises(ConfigError, match="cannot give each of 9 workers an item"):
        ShardedDataLoader(loader, 0, 9)


def test_webgpu_devices_are_named_by_adapter_index() -> None:
    webgpu = pytest.importorskip("pyrite.webgpu")
    try:
        found = webgpu.adapters()
    except BackendUnavailable as exc:
        pytest.skip(f"webgpu: {exc}")
    first = pyrite.device("webgpu:0")
    assert first.name == "webgpu:0" and pyrite.device("autodiff<webgpu:0>").inner is first
    with pytest.raises(BackendUnavailable, match=f"webgpu:{len(found)}: wgpu lists "
                       f"{len(found)} adapter"):
        pyrite.device(f"webgpu:{len(found)}")
    from pyrite.info import report_backends
    # webgpu's entry alone: every registered backend would boot the test suite's page-webgpu
    # (Chromium and Pyodide, 14 s of this test's 26 s) and make a second raw webgpu device
    assert "(webgpu:0)" in report_backends(["webgpu"])
