"""Metrics against hand-computed values; system metrics from fake /proc files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import pyrite
from pyrite.train import (
    Accuracy,
    ClassificationOutput,
    CpuMemory,
    CpuTemperature,
    CpuUse,
    LearningRate,
    Loss,
    MetricMetadata,
    RegressionOutput,
    TopKAccuracy,
)
from pyrite.train.system import read_cpu_times, read_memory

META = MetricMetadata(epoch=1, epoch_total=2, iteration=1, iterations=10, lr=1e-3)


def item(targets: list[int]) -> ClassificationOutput:
    logits = pyrite.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5],
                            [0.3, 0.4, 0.3]])
    return ClassificationOutput(pyrite.tensor([0.5]), logits, pyrite.tensor(targets))


def test_accuracy_batch_and_epoch_values() -> None:
    acc = Accuracy()
    first = acc.update(item([1, 0, 2, 0]), META)  # 3 of 4
    assert (first.value, first.count, first.epoch_value) == (75.0, 4, 75.0)
    second = acc.update(item([0, 1, 1, 1]), META)  # 1 of 4
    assert second.value == 25.0 and second.epoch_value == 50.0
    assert second.formatted == "25.00 % (epoch 50.00 %)"
    assert second.serialize() == "25.0,4"
    acc.clear()
    assert math.isnan(acc.value())


def test_accuracy_leaves_out_pad_tokens() -> None:
    entry = Accuracy(pad_token=0).update(item([1, 0, 2, 0]), META)
    assert (entry.value, entry.count) == (100.0, 2)


def test_top_k_accuracy() -> None:
    # best classes per row: 1, 0, 2, 1; second best: 2, 1, 1, (0 or 2: a tie)
    assert TopKAccuracy(1).update(item([1, 1, 1, 2]), META).value == 25.0
    top2 = TopKAccuracy(2).update(item([2, 2, 1, 1]), META)
    assert top2.value == 75.0 and TopKAccuracy(2).name == "Top2Accuracy"
    assert TopKAccuracy(5).update(item([2, 1, 1, 0]), META).value == 100.0  # k > classes


def test_loss_and_learning_rate() -> None:
    loss = Loss().update(item([0, 0, 0, 0]), META)
    assert (loss.value, loss.count) == (0.5, 4)
    regression = RegressionOutput(pyrite.tensor([2.0]), pyrite.zeros((3, 2)), pyrite.ones((3, 2)))
    assert Loss().update(regression, META).count == 3
    lr = LearningRate().update(item([0, 0, 0, 0]), META)
    assert lr.value == 1e-3 and lr.formatted == "1.000e-03"


def test_metric_errors_name_the_missing_attribute() -> None:
    with pytest.raises(AttributeError, match="no 'loss'"):
        Loss().update(object(), META)
    with pytest.raises(AttributeError, match="ClassificationOutput"):
        Accuracy().update(object(), META)


def test_cpu_use_reads_proc_stat(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
    assert read_cpu_times(str(stat)) == (200, 1000)
    metric = CpuUse(str(stat))
    stat.write_text("cpu  400 0 100 1100 0 0 0 0 0 0\n")  # +300 busy of +600
    assert metric.update(None, META).value == pytest.approx(50.0)
    assert math.isnan(CpuUse(str(tmp_path / "missing")).update(None, META).value)


def test_cpu_memory_reads_proc_meminfo(tmp_path: Path) -> None:
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       8388608 kB\nMemFree:  1 kB\nMemAvailable:   2097152 kB\n")
    assert read_memory(str(info)) == (6.0, 8.0)
    entry = CpuMemory(str(info)).update(None, META)
    assert entry.value == 6.0 and entry.formatted == "6.00 / 8.00 GiB"


def test_cpu_temperature(tmp_path: Path) -> None:
    (tmp_path / "thermal_zone0").mkdir()
    (tmp_path / "thermal_zone0/temp").write_text("45500\n")
    assert CpuTemperature(str(tmp_path)).update(None, META).value == 45.5
    assert math.isnan(CpuTemperature(str(tmp_path / "none")).update(None, META).value)


def test_real_proc_files_when_present() -> None:
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc here")
    assert read_cpu_times() is not None and read_memory() is not None
