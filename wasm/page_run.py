"""What the training page keeps about its run beside the Learner's files: how the run last
stood (running, stopped or done), and its speed and memory in use at each step.

The Learner's metric logs hold the curves a reloaded page redraws, but not the images per second
or the memory in use, and nothing in them says whether the run ended or the page went away in
the middle of it. So the page writes `page-run.json` into the run's folder at every checkpoint
(state "running") and when the run ends ("stopped" or "done"), and stores it with the
checkpoint:

    {"format": 1, "state": "running", "speed": [[step, images/s], ...],
     "valid_speed": [[step, images/s, epoch], ...], "memory": [[step, bytes], ...]}

After a reload, a stored state of "running" means the page was reloaded or closed while it
trained: the run was interrupted at its last checkpoint. Pure Python: tested natively.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyrite.demos.train.run import PAGE_RUN
from pyrite.record.atomic import atomic_write

_FORMAT = 1
STATES = ("running", "stopped", "done")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _points(value: object, width: int) -> list[list[float]]:
    """The well-formed points of a stored series (lists of `width` finite numbers)."""
    if not isinstance(value, list):
        return []
    return [p for p in value if isinstance(p, list) and len(p) == width
            and all(_number(v) for v in p)]


def read(folder: str | Path) -> dict[str, Any] | None:
    """The stored notes of the run in `folder`, or None when there are none or they are
    damaged (the page then shows the run without them: they are a convenience)."""
    path = Path(folder) / PAGE_RUN
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or raw.get("format") != _FORMAT \
            or raw.get("state") not in STATES:
        return None
    speed, valid, memory = (_points(raw.get(key), n) for key, n in
                            (("speed", 2), ("valid_speed", 3), ("memory", 2)))
    return {"state": raw["state"], "speed": speed, "valid_speed": valid, "memory": memory}


class PageRun:
    """The notes of the run being trained: fed every training event, saved by the page."""

    def __init__(self, folder: str | Path, resume: bool) -> None:
        self.folder = Path(folder)
        old = read(self.folder) if resume else None
        self.speed: list[list[float]] = old["speed"] if old else []
        self.valid_speed: list[list[float]] = old["valid_speed"] if old else []
        self.memory: list[list[float]] = old["memory"] if old else []

    def observe(self, event: dict[str, Any]) -> None:
        """Keep a training event's speed and memory (a step at or before the last one kept
        replaces the points from there: a resumed run goes over its last steps again)."""
        if not _number(event.get("step")):
            return
        step = int(event["step"])
        train = event.get("type") == "step" and event.get("split") == "train"
        valid = event.get("type") == "epoch" and event.get("split") == "valid"
        if train and _number(event.get("items_per_s")):
            _put(self.speed, [step, float(event["items_per_s"])])
        if train and _number(event.get("memory_bytes")):
            _put(self.memory, [step, float(event["memory_bytes"])])
        if valid and _number(event.get("items_per_s")):
            _put(self.valid_speed, [step, float(event["items_per_s"]),
                                    float(event.get("epoch", 0))])

    def save(self, state: str) -> None:
        """Write the notes with the run's `state` (one of STATES), atomically."""
        assert state in STATES, state
        text = json.dumps({"format": _FORMAT, "state": state, "speed": self.speed,
                           "valid_speed": self.valid_speed, "memory": self.memory})
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.folder / PAGE_RUN, lambda f: f.write(text.encode()))


def _put(series: list[list[float]], point: list[float]) -> None:
    while series and series[-1][0] >= point[0]:
        series.pop()
    series.append(point)


def with_notes(events: Sequence[dict[str, Any]], notes: dict[str, Any] | None
               ) -> list[dict[str, Any]]:
    """`events` (a stored run's curve, replayed after a reload) with the images per second and
    memory in use the notes hold for their steps."""
    if notes is None:
        return list(events)
    speed = {int(p[0]): p[1] for p in notes["speed"]}
    memory = {int(p[0]): p[1] for p in notes["memory"]}
    valid = {int(p[0]): p[1] for p in notes["valid_speed"]}
    out = []
    for event in events:
        step, added = event.get("step"), {}
        if event.get("type") == "step" and event.get("split") == "train":
            if step in speed:
                added["items_per_s"] = speed[step]
            if step in memory:
                added["memory_bytes"] = memory[step]
        elif event.get("type") == "epoch" and event.get("split") == "valid" and step in valid:
            added["items_per_s"] = valid[step]
        out.append({**event, **added})
    return out


__all__ = ["STATES", "PageRun", "read", "with_notes"]
