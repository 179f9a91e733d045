"""The training page's notes on its run (pyrite.wasm.page_run): how the run last stood, and the
speed and memory per step that a reloaded page redraws (the metric logs do not hold them)."""

from __future__ import annotations

from pathlib import Path

from pyrite.demos.train.run import PAGE_RUN
from pyrite.wasm import page_run


def _step(step: int, rate: float, memory: int) -> dict[str, object]:
    return {"type": "step", "split": "train", "step": step, "items_per_s": rate,
            "memory_bytes": memory, "metrics": {"Loss": 1.0}}


def test_notes_round_trip_and_fill_the_replayed_events(tmp_path: Path) -> None:
    notes = page_run.PageRun(tmp_path, resume=False)
    for step in (1, 2, 3):
        notes.observe(_step(step, 100.0 * step, 1000 * step))
    notes.observe({"type": "epoch", "split": "valid", "step": 3, "epoch": 1,
                   "items_per_s": 900.0})
    notes.observe({"type": "step", "split": "valid", "step": 3, "items_per_s": 5.0})  # ignored
    notes.save("running")
    stored = page_run.read(tmp_path)
    assert stored == {"state": "running", "speed": [[1, 100.0], [2, 200.0], [3, 300.0]],
                      "valid_speed": [[3, 900.0, 1.0]],
                      "memory": [[1, 1000.0], [2, 2000.0], [3, 3000.0]]}
    replayed = page_run.with_notes(
        [{"type": "step", "split": "train", "step": s, "metrics": {}} for s in (1, 2, 3, 4)]
        + [{"type": "epoch", "split": "valid", "step": 3, "metrics": {}}], stored)
    assert [e.get("items_per_s") for e in replayed] == [100.0, 200.0, 300.0, None, 900.0]
    assert [e.get("memory_bytes") for e in replayed[:4]] == [1000.0, 2000.0, 3000.0, None]


def test_a_resumed_run_goes_over_its_last_steps_again(tmp_path: Path) -> None:
    first = page_run.PageRun(tmp_path, resume=False)
    for step in (1, 2, 3, 4):
        first.observe(_step(step, 10.0, 1))
    first.save("running")
    again = page_run.PageRun(tmp_path, resume=True)
    again.observe(_step(3, 99.0, 1))  # resumed after the checkpoint at step 2
    again.save("stopped")
    stored = page_run.read(tmp_path)
    assert stored is not None and stored["state"] == "stopped"
    assert stored["speed"] == [[1, 10.0], [2, 10.0], [3, 99.0]]
    assert page_run.PageRun(tmp_path, resume=False).speed == []  # a new run starts empty


def test_damaged_notes_are_ignored(tmp_path: Path) -> None:
    assert page_run.read(tmp_path) is None
    for text in ("{", "[]", '{"format": 2, "state": "running"}', '{"format": 1, "state": "x"}',
                 "[" * 10_000):
        (tmp_path / PAGE_RUN).write_text(text)
        assert page_run.read(tmp_path) is None, text
    (tmp_path / PAGE_RUN).write_text('{"format": 1, "state": "done", "speed": [[1, "x"], '
                                     '[2, 5.0], [3, NaN]], "memory": 7}')
    assert page_run.read(tmp_path) == {"state": "done", "speed": [[2, 5.0]], "valid_speed": [],
                                       "memory": []}
