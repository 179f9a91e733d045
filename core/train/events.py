"""Training as a stream of events: plain JSON-able dicts for a live dashboard.

`EventRenderer(sink)` is a `Renderer` (see `renderer.py`) that turns the Learner's progress into
dicts and hands each to `sink`, which may print them, send them to a page (the native dashboard,
`pyrite.server.dashboard`) or post them from a Pyodide worker (the training page). The same
format serves both places, so one dashboard draws either:

    {"type": "start", "epochs", "config", "model"}                 # start_event(...), by the caller
    {"type": "step", "split", "epoch", "epochs", "iteration", "iterations", "step", "items",
     "items_per_s", "elapsed_s", "memory_bytes", "metrics", "epoch_metrics"}
    {"type": "epoch", "split", "epoch", "epochs", "step", "iterations", "items_per_s",
     "elapsed_s", "metrics"}                                        # when a split ends
    {"type": "end", "state": "done" | "stopped" | "error", "message"}   # from close()

`step` is the global train step, `(epoch - 1) * iterations + iteration`, so a resumed run
continues its curve where the checkpoint left it; a valid event carries the train step at the
end of its epoch. `elapsed_s` and `items_per_s` are the split's (this epoch's train or valid
half). Metrics are keyed by the metrics' names (`Loss`, `Accuracy`, `LearningRate`, ...): a
step's `metrics` are the batch's values, `epoch_metrics` the epoch's running values. NaN and
infinities become None, so `json.dumps(event, allow_nan=False)` works.

Step events are throttled to one per `interval_s` per split; the last step of a split is always
sent. Pure Python with no threads: it runs inside Pyodide as it does natively.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from .interrupt import Interrupter
from .metric import MetricEntry
from .renderer import Progress

Event = dict[str, Any]
"""One event: a dict of str, int, float, None, and dicts of those (JSON as is)."""

END_STATES = ("done", "stopped", "error")


def finite(value: float | None) -> float | None:
    """`value` as a float, or None for NaN, infinities and None (JSON has no NaN).

    >>> finite(0.5), finite(float("nan")), finite(None)
    (0.5, None, None)
    """
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def start_event(epochs: int, config: Mapping[str, Any] | None = None, model: str = "") -> Event:
    """The event that opens a run: how many epochs, its config (JSON-able) and the model's name
    or description. Whoever starts the run sends it, before `Learner.fit`.

    >>> start_event(2, {"lr": 0.001}, "mlp")["type"]
    'start'
    """
    return {"type": "start", "epochs": int(epochs), "config": dict(config or {}),
            "model": str(model)}


class EventRenderer:
    """A `Renderer` that sends training events (see the module docstring) to `sink`.

    `memory()` gives the bytes in use for step events (None: unknown); `interval_s` is the least
    time between two step events of one split; `clock` (seconds) is for tests. `interrupter`,
    when given, makes `close()` report a stopped run as "stopped" with its reason. Call
    `finish(state, message)` before `close()` to report the end yourself.

    >>> events = []
    >>> r = EventRenderer(events.append)
    >>> r.update(Progress("train", 1, 1, 1, 1, 8, 0.5), [])
    >>> r.end_split(Progress("train", 1, 1, 1, 1, 8, 0.5), {})
    >>> r.close()
    >>> [e["type"] for e in events], events[0]["step"], events[0]["items_per_s"]
    (['step', 'epoch', 'end'], 1, 16.0)
    """

    def __init__(self, sink: Callable[[Event], None], *,
                 memory: Callable[[], int | None] | None = None, interval_s: float = 0.05,
                 interrupter: Interrupter | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.memory = memory
        self.interval_s = interval_s
        self.interrupter = interrupter
        self.clock = clock
        self._last_sent: dict[str, float] = {}
        self._entries: dict[str, list[MetricEntry]] = {}
        self._pending: dict[str, Event] = {}  # a throttled step event, sent if it was the last
        self._train_iterations: int | None = None
        self._train_step = 0  # the last global train step seen
        self._end: tuple[str, str] | None = None
        self._closed = False

    # ---- steps -------------------------------------------------------------------------------
    def _step(self, p: Progress) -> int:
        if p.split == "train":
            if p.iterations:
                self._train_iterations = p.iterations
                self._train_step = (p.epoch - 1) * p.iterations + p.iteration
            else:  # a loader without a length: count the steps this run has taken
                self._train_step += 1
            return self._train_step
        if self._train_iterations:
            return p.epoch * self._train_iterations
        return self._train_step

    def update(self, progress: Progress, entries: list[MetricEntry]) -> None:
        p = progress
        step = self._step(p)
        self._entries[p.split] = entries
        now = self.clock()
        last = p.iterations is not None and p.iteration >= p.iterations
        due = now - self._last_sent.get(p.split, -math.inf) >= self.interval_s
        event: Event = {
            "type": "step", "split": p.split, "epoch": p.epoch, "epochs": p.epoch_total,
            "iteration": p.iteration, "iterations": p.iterations, "step": step,
            "items": p.items, "items_per_s": finite(p.speed), "elapsed_s": finite(p.elapsed_s),
            "memory_bytes": None,
            "metrics": {e.name: finite(e.value) for e in entries},
            "epoch_metrics": {e.name: finite(e.epoch_value) for e in entries},
        }
        if not (due or last):
            self._pending[p.split] = event
            return
        self._send_step(event)
        self._last_sent[p.split] = now

    def _send_step(self, event: Event) -> None:
        self._pending.pop(event["split"], None)
        if self.memory is not None:
            event["memory_bytes"] = self.memory()
        self.sink(event)

    # ---- splits and the end ------------------------------------------------------------------
    def end_split(self, progress: Progress, values: dict[str, str]) -> None:
        p = progress
        pending = self._pending.get(p.split)
        if pending is not None:  # the split's last step was throttled (an unknown length, a stop)
            self._send_step(pending)
        entries = self._entries.pop(p.split, [])
        self.sink({
            "type": "epoch", "split": p.split, "epoch": p.epoch, "epochs": p.epoch_total,
            "step": self._step_at_end(p), "iterations": p.iteration,
            "items_per_s": finite(p.speed), "elapsed_s": finite(p.elapsed_s),
            "metrics": {e.name: finite(e.epoch_value) for e in entries},
        })
        self._last_sent.pop(p.split, None)  # the next epoch's first step is sent at once

    def _step_at_end(self, p: Progress) -> int:
        if p.split == "train" or not self._train_iterations:
            return self._train_step
        return p.epoch * self._train_iterations

    def finish(self, state: str, message: str = "") -> None:
        """Report how the run ended ("done", "stopped" or "error"); `close()` sends it."""
        if state not in END_STATES:
            raise ValueError(f"EventRenderer.finish: state must be one of {END_STATES}, "
                             f"got {state!r}")
        self._end = (state, message)

    def _default_end(self) -> tuple[str, str]:
        # close() runs in the Learner's `finally`: an exception on its way out is visible here
        exc = sys.exc_info()[1]
        if isinstance(exc, KeyboardInterrupt):
            return "stopped", "interrupted (Ctrl-C)"
        if exc is not None:
            return "error", f"{type(exc).__name__}: {exc}"
        if self.interrupter is not None and self.interrupter.should_stop():
            return "stopped", self.interrupter.reason or "stopped"
        return "done", ""

    def close(self) -> None:
        """Send the `end` event (once)."""
        if self._closed:
            return
        self._closed = True
        state, message = self._end if self._end is not None else self._default_end()
        self.sink({"type": "end", "state": state, "message": message})


__all__ = ["END_STATES", "Event", "EventRenderer", "finite", "start_event"]
