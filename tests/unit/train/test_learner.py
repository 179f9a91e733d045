"""The Learner trains, writes the book's artifact layout, keeps the last checkpoints, resumes
exactly, accumulates gradients, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import io
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyrite.errors import ConfigError, RecordError
from pyrite.optim import AdamConfig, GradientsAccumulator, LinearLrSchedulerConfig, SgdConfig
from pyrite.record import NamedMpkFileRecorder
from pyrite.train import (
    Accuracy,
    InMemoryMetricLogger,
    KeepLastNCheckpoints,
    LearnerBuilder,
    LearningRate,
    Loss,
    Metric,
    MetricCheckpointingStrategy,
    NoRenderer,
    PlainRenderer,
)


def builder(path: Path, epochs: int = 3) -> LearnerBuilder:
    return (LearnerBuilder(path)
            .metric_train_numeric(Accuracy()).metric_valid_numeric(Accuracy())
            .metric_train_numeric(Loss()).metric_valid_numeric(Loss())
            .metric_train(LearningRate())
            .with_file_checkpointer(NamedMpkFileRecorder())
            .renderer(NoRenderer())
            .num_epochs(epochs))


def test_fit_trains_and_writes_the_artifact_layout(tmp_path: Path, tiny: Any,
                                                    loaders: tuple) -> None:
    learner = builder(tmp_path).build(tiny(), AdamConfig().init(), 0.05)
    model = learner.fit(*loaders)
    assert learner.summary is not None
    rows = {(r.split, r.metric): r for r in learner.summary.rows}
    assert rows[("Valid", "Accuracy")].max > 90.0
    assert rows[("Train", "Loss")].min_epoch == 3
    assert ("Train", "LearningRate") not in rows  # not numeric: logged, not summarised
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert files == sorted([
        "experiment.log", "checkpoint/checkpoints.json",
        "checkpoint/model-2.mpk", "checkpoint/optim-2.mpk", "checkpoint/scheduler-2.mpk",
        "checkpoint/model-3.mpk", "checkpoint/optim-3.mpk", "checkpoint/scheduler-3.mpk",
        *[f"train/epoch-{e}/{m}.log" for e in (1, 2, 3) for m in ("Accuracy", "Loss",
                                                                  "LearningRate")],
        *[f"valid/epoch-{e}/{m}.log" for e in (1, 2, 3) for m in ("Accuracy", "Loss")],
    ])
    lines = (tmp_path / "train/epoch-1/Loss.log").read_text().splitlines()
    assert len(lines) == 6 and all(line.endswith(",16") for line in lines)
    log = (tmp_path / "experiment.log").read_text()
    assert "checkpoint: saved epoch 3" in log and "deleted epoch 1" in log
    # the returned model is the one in the last checkpoint
    saved = model.load_file(tmp_path / "checkpoint/model-3.mpk")
    np.testing.assert_array_equal(saved.w.val.numpy(), model.w.val.numpy())


def test_resume_from_a_checkpoint_is_exact(tmp_path: Path, tiny: Any, loaders: tuple) -> None:
    schedule = LinearLrSchedulerConfig(0.1, 0.01, 20)
    straight = builder(tmp_path / "a").build(tiny(), AdamConfig().init(), schedule).fit(*loaders)

    builder(tmp_path / "b", epochs=2).build(tiny(), AdamConfig().init(), schedule).fit(*loaders)
    train, valid = loaders
    train.set_epoch(0)  # a fresh process would start from 0; fit moves it on
    resumed = (builder(tmp_path / "b", epochs=3).checkpoint(2)
               .build(tiny(), AdamConfig().init(), schedule).fit(train, valid))
    for a, b in zip(straight.params(), resumed.params(), strict=True):
        np.testing.assert_array_equal(a.val.numpy(), b.val.numpy())
    assert (tmp_path / "b/train/epoch-3/Loss.log").exists()


def test_resume_from_a_missing_checkpoint_says_which_exist(tmp_path: Path, tiny: Any,
                                                           loaders: tuple) -> None:
    builder(tmp_path, epochs=1).build(tiny(), AdamConfig().init(), 0.1).fit(*loaders)
    learner = builder(tmp_path).checkpoint(5).build(tiny(), AdamConfig().init(), 0.1)
    with pytest.raises(RecordError, match=r"the checkpoint of epoch 5 is missing or incomplete "
                                          r"\(complete epochs: \[1\]\); resume from epoch 1"):
        learner.fit(*loaders)
    with pytest.raises(ConfigError, match="with_file_checkpointer"):
        LearnerBuilder(tmp_path).checkpoint(1).build(tiny(), AdamConfig().init(), 0.1)


def test_keep_best_and_last(tmp_path: Path, tiny: Any, loaders: tuple) -> None:
    learner = (builder(tmp_path, epochs=4)
               .with_checkpointing_strategy(KeepLastNCheckpoints(1),
                                            MetricCheckpointingStrategy("Loss", split="valid"))
               .build(tiny(), SgdConfig().init(), 0.5))
    learner.fit(*loaders)
    kept = learner.checkpointers["model"].epochs()  # type: ignore[index]
    best = min(range(1, 5), key=lambda e: learner._read_metric("Loss", "valid", e))
    assert kept == sorted({4, best})


def test_grad_accumulation_matches_a_hand_loop(tmp_path: Path, tiny: Any,
                                               loaders: tuple) -> None:
    train, _ = loaders
    learner = (builder(tmp_path, epochs=1).grad_accumulation(4)
               .build(tiny(), SgdConfig().init(), 0.1))
    got = learner.fit(train)

    train.set_epoch(0)
    model, optim, acc = tiny(), SgdConfig().init(), GradientsAccumulator()
    for batch in train:
        acc.accumulate(model, model.train_step(batch).grads)
        if acc.count == 4:
            model = optim.step(0.1, model, acc.grads())
    model = optim.step(0.1, model, acc.grads())  # the epoch's last 2 batches
    np.testing.assert_allclose(got.w.val.numpy(), model.w.val.numpy(), rtol=1e-6)


class InterruptAt(Metric):
    """Sends this process SIGINT (Ctrl-C) at one iteration of epoch 1."""

    name = "Interrupt"

    def __init__(self, iteration: int) -> None:
        super().__init__()
        self.iteration = iteration

    def _measure(self, item: Any, metadata: Any) -> tuple[float, int]:
        if metadata.epoch == 1 and metadata.iteration == self.iteration:
            os.kill(os.getpid(), signal.SIGINT)
        return 0.0, 1


def test_ctrl_c_finishes_the_step_checkpoints_and_returns(tmp_path: Path, tiny: Any,
                                                          loaders: tuple) -> None:
    before = signal.getsignal(signal.SIGINT)
    learner = builder(tmp_path).metric_train(InterruptAt(3)).build(
        tiny(), AdamConfig().init(), 0.05)
    model = learner.fit(*loaders)
    assert signal.getsignal(signal.SIGINT) is before
    assert len((tmp_path / "train/epoch-1/Loss.log").read_text().splitlines()) == 3
    assert not (tmp_path / "valid").exists()  # stopped before validating
    assert learner.checkpointers["model"].epochs() == [1]  # type: ignore[index]
    saved = model.load_file(tmp_path / "checkpoint/model-1.mpk")
    np.testing.assert_array_equal(saved.w.val.numpy(), model.w.val.numpy())
    assert "interrupted (Ctrl-C) during epoch 1" in (tmp_path / "experiment.log").read_text()
    assert learner.summary is not None and learner.summary.epochs == 1  # not num_epochs


def test_interrupter_handle_and_in_memory_logger(tmp_path: Path, tiny: Any,
                                                 loaders: tuple) -> None:
    logger = InMemoryMetricLogger()
    b = builder(tmp_path).metric_loggers(logger).with_application_logger(None)
    stop = b.interrupter()

    class StopAt(Metric):
        name = "Stop"

        def _measure(self, item: Any, metadata: Any) -> tuple[float, int]:
            if metadata.epoch == 2 and metadata.iteration == 1:
                stop.stop("enough")
            return 1.0, 1
    learner = b.metric_train(StopAt()).build(tiny(), AdamConfig().init(), 0.05)
    learner.fit(*loaders)
    assert len(logger.read("Loss", 1, "train")) == 6
    assert len(logger.read("Loss", 2, "train")) == 1
    assert not (tmp_path / "experiment.log").exists()
    assert not (tmp_path / "train").exists()  # the file logger was replaced


def test_summary_is_printed(tmp_path: Path, tiny: Any, loaders: tuple,
                            capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    (builder(tmp_path, epochs=1).renderer(PlainRenderer(out)).summary()
     .build(tiny(), AdamConfig().init(), 0.05).fit(*loaders))
    printed = capsys.readouterr().out
    assert "| Split | Metric   | Min." in printed and "| Valid | Accuracy |" in printed
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("epoch 1/1 train done: Accuracy ")
    assert lines[1].startswith("epoch 1/1 valid done: Accuracy ")


def test_builder_checks_the_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="train_step"):
        LearnerBuilder(tmp_path).build(object(), AdamConfig().init(), 0.1)
    with pytest.raises(ConfigError, match="named twice"):
        LearnerBuilder(tmp_path).devices(["numpy", "numpy"])
