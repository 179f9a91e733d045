"""EventRenderer turns a real Learner run into the dashboard's events: their order, global step
numbers (continued by a resumed run), throttling that never drops a split's last step, JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pyrite.optim import AdamConfig
from pyrite.record import NamedMpkFileRecorder
from pyrite.train import (
    Accuracy,
    EventRenderer,
    LearnerBuilder,
    LearningRate,
    Loss,
    MetricEntry,
    MultiRenderer,
    NoRenderer,
    Progress,
    start_event,
)

TRAIN_STEPS = 6  # 96 items in batches of 16 (see conftest.py)
VALID_STEPS = 3  # 48 items


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fit(path: Path, tiny: Any, loaders: tuple, renderer: Any, *, epochs: int = 2,
        resume: int | None = None) -> Any:
    builder = (LearnerBuilder(path)
               .metric_train_numeric(Accuracy()).metric_valid_numeric(Accuracy())
               .metric_train_numeric(Loss()).metric_valid_numeric(Loss())
               .metric_train(LearningRate())
               .with_file_checkpointer(NamedMpkFileRecorder())
               .with_application_logger(None)
               .renderer(renderer)
               .num_epochs(epochs))
    if resume is not None:
        builder = builder.checkpoint(resume)
    return builder.build(tiny(), AdamConfig().init(), 0.05).fit(*loaders)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [f"{e['type']}:{e.get('split', e.get('state'))}" for e in events]


def test_a_run_gives_steps_then_epochs_then_end(tmp_path: Path, tiny: Any, loaders: tuple
                                                ) -> None:
    events: list[dict[str, Any]] = []
    fit(tmp_path, tiny, loaders, EventRenderer(events.append, memory=lambda: 1234,
                                               interval_s=0))
    one_epoch = ["step:train"] * TRAIN_STEPS + ["epoch:train"] + \
                ["step:valid"] * VALID_STEPS + ["epoch:valid"]
    assert kinds(events) == one_epoch * 2 + ["end:done"]

    steps = [e for e in events if e["type"] == "step" and e["split"] == "train"]
    assert [e["step"] for e in steps] == list(range(1, 2 * TRAIN_STEPS + 1))
    first = steps[0]
    assert (first["epoch"], first["epochs"], first["iteration"], first["iterations"]) == \
        (1, 2, 1, TRAIN_STEPS)
    assert first["items"] == 16 and first["memory_bytes"] == 1234
    assert first["items_per_s"] > 0 and first["elapsed_s"] > 0
    assert set(first["metrics"]) == {"Accuracy", "Loss", "LearningRate"}
    assert first["metrics"]["LearningRate"] == pytest.approx(0.05)
    assert first["epoch_metrics"]["Loss"] == pytest.approx(first["metrics"]["Loss"])

    valid = [e for e in events if e.get("split") == "valid"]
    assert {e["step"] for e in valid if e["epoch"] == 1} == {TRAIN_STEPS}
    assert {e["step"] for e in valid if e["epoch"] == 2} == {2 * TRAIN_STEPS}
    assert set(valid[0]["metrics"]) == {"Accuracy", "Loss"}

    epochs = {(e["split"], e["epoch"]): e for e in events if e["type"] == "epoch"}
    train1 = epochs[("train", 1)]
    last_step = steps[TRAIN_STEPS - 1]
    assert train1["step"] == TRAIN_STEPS and train1["iterations"] == TRAIN_STEPS
    # the epoch's value is the metrics' epoch value (numbers, not the formatted text)
    assert train1["metrics"]["Loss"] == pytest.approx(last_step["epoch_metrics"]["Loss"])
    assert epochs[("valid", 2)]["metrics"]["Accuracy"] > 90.0
    assert epochs[("train", 2)]["metrics"]["Loss"] < train1["metrics"]["Loss"]

    for event in events:
        json.dumps(event, allow_nan=False)  # valid JSON: no NaN anywhere


def test_steps_are_throttled_but_a_splits_last_step_is_always_sent(
        tmp_path: Path, tiny: Any, loaders: tuple) -> None:
    events: list[dict[str, Any]] = []
    clock = Clock()  # never moves: only the first step of each split is due
    fit(tmp_path, tiny, loaders, EventRenderer(events.append, interval_s=1.0, clock=clock),
        epochs=1)
    assert kinds(events) == ["step:train", "step:train", "epoch:train",
                             "step:valid", "step:valid", "epoch:valid", "end:done"]
    assert [e["iteration"] for e in events if e["type"] == "step"] == \
        [1, TRAIN_STEPS, 1, VALID_STEPS]


def test_throttling_follows_the_clock() -> None:
    events: list[dict[str, Any]] = []
    clock = Clock()
    r = EventRenderer(events.append, interval_s=0.05, clock=clock)
    for i in range(1, 11):
        clock.now = i * 0.02  # 20 ms a step: about every third step is due
        r.update(Progress("train", 1, 1, i, 10, 8 * i, clock.now), [])
    assert [e["iteration"] for e in events] == [1, 4, 7, 10]


def test_a_throttled_last_step_of_unknown_length_is_sent_at_the_end_of_the_split() -> None:
    events: list[dict[str, Any]] = []
    r = EventRenderer(events.append, interval_s=10.0, clock=Clock())
    for i in range(1, 5):
        r.update(Progress("train", 1, 1, i, None, 8 * i, 0.1 * i), [])
    r.end_split(Progress("train", 1, 1, 4, None, 32, 0.4), {})
    assert [(e["type"], e.get("iteration"), e["step"]) for e in events] == \
        [("step", 1, 1), ("step", 4, 4), ("epoch", None, 4)]


def test_a_resumed_run_continues_the_step_count(tmp_path: Path, tiny: Any, loaders: tuple
                                                ) -> None:
    fit(tmp_path, tiny, loaders, NoRenderer(), epochs=1)
    events: list[dict[str, Any]] = []
    fit(tmp_path, tiny, loaders, EventRenderer(events.append, interval_s=0), epochs=2,
        resume=1)
    train = [e for e in events if e["type"] == "step" and e["split"] == "train"]
    assert [e["step"] for e in train] == list(range(TRAIN_STEPS + 1, 2 * TRAIN_STEPS + 1))
    assert {e["epoch"] for e in events if "epoch" in e} == {2}
    assert events[-1] == {"type": "end", "state": "done", "message": ""}


def test_non_finite_values_become_none() -> None:
    events: list[dict[str, Any]] = []
    r = EventRenderer(events.append)
    entry = MetricEntry("CpuUse", "nan %", math.nan, 1, math.inf)
    progress = Progress("train", 1, 1, 1, 1, 8, 0.0)  # no time yet: the speed is NaN
    r.update(progress, [entry])
    r.end_split(progress, {"CpuUse": "nan %"})
    assert events[0]["metrics"] == {"CpuUse": None}
    assert events[0]["epoch_metrics"] == {"CpuUse": None}
    assert events[0]["items_per_s"] is None
    assert events[1]["metrics"] == {"CpuUse": None}
    for event in events:
        json.dumps(event, allow_nan=False)


def test_the_end_reports_finish_stop_and_errors(tmp_path: Path, tiny: Any, loaders: tuple
                                                ) -> None:
    events: list[dict[str, Any]] = []
    r = EventRenderer(events.append)
    r.finish("stopped", "Stop pressed")
    r.close()
    r.close()  # once only
    assert events == [{"type": "end", "state": "stopped", "message": "Stop pressed"}]
    with pytest.raises(ValueError, match="state must be one of"):
        r.finish("paused")

    class Boom(Accuracy):
        def _measure(self, item: Any, metadata: Any) -> tuple[float, int]:
            raise RuntimeError("metric broke")

    events.clear()
    learner = (LearnerBuilder(tmp_path).metric_train(Boom()).with_application_logger(None)
               .renderer(EventRenderer(events.append)).build(tiny(), AdamConfig().init(), 0.1))
    with pytest.raises(RuntimeError, match="metric broke"):
        learner.fit(*loaders)
    assert events[-1] == {"type": "end", "state": "error",
                          "message": "RuntimeError: metric broke"}


def test_an_interrupted_run_ends_stopped(tmp_path: Path, tiny: Any, loaders: tuple) -> None:
    events: list[dict[str, Any]] = []
    builder = (LearnerBuilder(tmp_path).metric_train(Loss()).with_application_logger(None)
               .num_epochs(3))
    interrupter = builder.interrupter()

    class StopAtThree(Loss):
        name = "Stopper"

        def _measure(self, item: Any, metadata: Any) -> tuple[float, int]:
            if metadata.iteration == 3:
                interrupter.stop("Stop pressed")
            return super()._measure(item, metadata)

    learner = (builder.metric_train(StopAtThree())
               .renderer(EventRenderer(events.append, interval_s=60, interrupter=interrupter))
               .build(tiny(), AdamConfig().init(), 0.1))
    learner.fit(*loaders)
    # throttled, yet the step the run stopped at is sent before the epoch's summary
    assert kinds(events) == ["step:train", "step:train", "epoch:train", "end:stopped"]
    assert events[1]["step"] == 3 and events[2]["step"] == 3
    assert events[-1]["message"] == "Stop pressed"


def test_multi_renderer_feeds_every_renderer_and_start_event_is_json() -> None:
    a: list[dict[str, Any]] = []
    b: list[dict[str, Any]] = []
    r = MultiRenderer(EventRenderer(a.append), NoRenderer(), EventRenderer(b.append))
    r.update(Progress("train", 1, 1, 1, 1, 8, 0.1), [])
    r.close()
    assert kinds(a) == kinds(b) == ["step:train", "end:done"]
    event = start_event(2, {"batch_size": 64, "lr": 1e-3}, "mnist guide CNN")
    assert json.loads(json.dumps(event)) == {"type": "start", "epochs": 2, "model":
                                             "mnist guide CNN",
                                             "config": {"batch_size": 64, "lr": 1e-3}}
