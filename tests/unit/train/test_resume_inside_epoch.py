"""A checkpoint taken inside an epoch (a stop, `checkpoint_every`) resumes with the next step
of that epoch, and the resumed run ends where an uninterrupted one does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyrite.errors import ConfigError, RecordError
from pyrite.optim import AdamConfig, LinearLrSchedulerConfig
from pyrite.record import NamedMpkFileRecorder
from pyrite.train import LearnerBuilder, Loss, Metric, NoRenderer

SCHEDULE = LinearLrSchedulerConfig(0.1, 0.01, 20)


def builder(path: Path, epochs: int = 3) -> LearnerBuilder:
    return (LearnerBuilder(path).metric_train_numeric(Loss()).metric_valid_numeric(Loss())
            .with_file_checkpointer(NamedMpkFileRecorder()).renderer(NoRenderer())
            .num_epochs(epochs))


class Crash(Exception):
    pass


class At(Metric):
    """Calls `action()` at one step (1-based epoch and iteration)."""

    name = "At"

    def __init__(self, epoch: int, iteration: int, action: Any) -> None:
        super().__init__()
        self.where, self.action = (epoch, iteration), action

    def _measure(self, item: Any, metadata: Any) -> tuple[float, int]:
        if (metadata.epoch, metadata.iteration) == self.where:
            self.action()
        return 0.0, 1


def same(a: Any, b: Any) -> None:
    for x, y in zip(a.params(), b.params(), strict=True):
        np.testing.assert_array_equal(x.val.numpy(), y.val.numpy())


def test_stop_inside_an_epoch_resumes_at_the_next_step(tmp_path: Path, tiny: Any,
                                                      loaders: tuple) -> None:
    train, valid = loaders
    straight = builder(tmp_path / "a").build(tiny(), AdamConfig().init(), SCHEDULE).fit(
        train, valid)

    b = builder(tmp_path / "b")
    stop = b.interrupter()
    learner = b.metric_train(At(2, 4, lambda: stop.stop("button"))).build(
        tiny(), AdamConfig().init(), SCHEDULE)
    train.set_epoch(0)
    learner.fit(train, valid)
    position = tmp_path / "b/checkpoint/position-2.json"
    assert position.exists() and '"iteration": 4' in position.read_text()
    assert len((tmp_path / "b/train/epoch-2/Loss.log").read_text().splitlines()) == 4

    train.set_epoch(0)  # as in a fresh process
    calls: list[tuple[int, int | None]] = []
    resumed = (builder(tmp_path / "b").checkpoint(2)
               .on_checkpoint(lambda e, s: calls.append((e, s)))
               .build(tiny(), AdamConfig().init(), SCHEDULE).fit(train, valid))
    same(straight, resumed)
    assert calls == [(2, None), (3, None)]
    assert not position.exists()  # epoch 2's checkpoint is whole again
    log = (tmp_path / "b/experiment.log").read_text()
    assert "epoch 2 resumes after step 4" in log


def test_checkpoint_every_survives_a_crash(tmp_path: Path, tiny: Any, loaders: tuple) -> None:
    train, valid = loaders
    straight = builder(tmp_path / "a").build(tiny(), AdamConfig().init(), SCHEDULE).fit(
        train, valid)

    def crash() -> None:
        raise Crash

    calls: list[tuple[int, int | None]] = []
    learner = (builder(tmp_path / "b").checkpoint_every(2)
               .on_checkpoint(lambda e, s: calls.append((e, s)))
               .metric_train(At(2, 6, crash)).build(tiny(), AdamConfig().init(), SCHEDULE))
    train.set_epoch(0)
    with pytest.raises(Crash):
        learner.fit(train, valid)
    # 6 steps an epoch: inside epoch 1 at 2 and 4, the whole epoch, then epoch 2 at 2 and 4
    assert calls == [(1, 2), (1, 4), (1, None), (2, 2), (2, 4)]
    # the crashed run had logged epoch 2's step 5, after its last checkpoint (step 4)
    assert len((tmp_path / "b/train/epoch-2/Loss.log").read_text().splitlines()) == 5
    train.set_epoch(0)
    resumed = (builder(tmp_path / "b").checkpoint(2)
               .build(tiny(), AdamConfig().init(), SCHEDULE).fit(train, valid))
    same(straight, resumed)
    for split, epoch in (("train", 2), ("train", 3), ("valid", 2)):
        for name in ("Loss", "At") if split == "train" else ("Loss",):
            a = (tmp_path / f"a/{split}/epoch-{epoch}/{name}.log")
            b = (tmp_path / f"b/{split}/epoch-{epoch}/{name}.log")
            if a.exists():
                assert b.read_text() == a.read_text(), (split, epoch, name)


def test_any_iterable_loader_resumes_too(tmp_path: Path, tiny: Any, loaders: tuple) -> None:
    train, valid = loaders
    straight = builder(tmp_path / "a", 1).build(tiny(), AdamConfig().init(), 0.05).fit(
        train, valid)
    batches = list(iter(train.__class__(train.dataset, train.batcher,
                                        batch_size=train.batch_size, shuffle=train.shuffle,
                                        seed=train.seed)))
    b = builder(tmp_path / "b", 1)
    stop = b.interrupter()
    b.metric_train(At(1, 3, lambda: stop.stop())).build(
        tiny(), AdamConfig().init(), 0.05).fit(batches, valid)
    resumed = builder(tmp_path / "b", 1).checkpoint(1).build(
        tiny(), AdamConfig().init(), 0.05).fit(batches, valid)
    same(straight, resumed)


def test_watch_polls_a_stop_request(tmp_path: Path, tiny: Any, loaders: tuple) -> None:
    b = builder(tmp_path, 2)
    steps = []
    b.interrupter().watch(lambda: len(steps) >= 2, "the page's Stop button")
    learner = b.metric_train(At(9, 9, None)).build(tiny(), AdamConfig().init(), 0.05)
    learner.renderer = type("R", (NoRenderer,), {
        "update": lambda self, p, e: steps.append(p.iteration)})()
    learner.fit(*loaders)
    assert steps == [1, 2]
    assert learner.interrupter.reason == "the page's Stop button"


def test_bad_positions_and_options_are_refused(tmp_path: Path, tiny: Any,
                                               loaders: tuple) -> None:
    with pytest.raises(ConfigError, match="steps must be >= 1"):
        LearnerBuilder(tmp_path).checkpoint_every(0)
    with pytest.raises(ConfigError, match="with_file_checkpointer"):
        LearnerBuilder(tmp_path).checkpoint_every(5).build(tiny(), AdamConfig().init(), 0.1)
    builder(tmp_path, 1).build(tiny(), AdamConfig().init(), 0.1).fit(*loaders)
    (tmp_path / "checkpoint/position-1.json").write_text("{not json")
    with pytest.raises(RecordError, match="position-1.json: not a checkpoint position file"):
        builder(tmp_path, 2).checkpoint(1).build(tiny(), AdamConfig().init(), 0.1).fit(*loaders)
