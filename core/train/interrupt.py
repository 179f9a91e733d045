"""Stopping training early: an `Interrupter` flag checked after every step, and Ctrl-C wired to it.

While `Learner.fit` runs (on the main thread), the first Ctrl-C (SIGINT) only sets the flag:
the current step finishes, a checkpoint is written and `fit` returns the model. A second
Ctrl-C raises KeyboardInterrupt at once, as usual. The previous handler comes back when `fit`
ends.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

log = logging.getLogger("pyrite.train")


class Interrupter:
    """`interrupter.stop()` from anywhere (a metric, another thread, a signal) ends `fit`
    after the current step. `watch(check, reason)` adds a request polled after each step,
    for a stop that arrives where no Python code can call `stop()`: a web page's Stop button
    sets a flag that the page's worker reads (see pyrite/wasm/training.py)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._checks: list[tuple[Callable[[], bool], str]] = []
        self.reason = ""

    def stop(self, reason: str = "stopped") -> None:
        self.reason = reason
        self._event.set()

    def watch(self, check: Callable[[], bool], reason: str = "stopped") -> None:
        """Stop (with `reason`) once `check()` returns True; it is called after every step."""
        self._checks.append((check, reason))

    def should_stop(self) -> bool:
        if not self._event.is_set():
            for check, reason in self._checks:
                if check():
                    self.stop(reason)
                    break
        return self._event.is_set()

    def reset(self) -> None:
        self._event.clear()
        self.reason = ""


class SigintHandler:
    """Context manager: SIGINT -> `interrupter.stop()` once, KeyboardInterrupt the second time.
    Does nothing off the main thread (Python only delivers signals there)."""

    def __init__(self, interrupter: Interrupter) -> None:
        self.interrupter = interrupter
        self._previous: Any = None
        self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.interrupter.should_stop():
            raise KeyboardInterrupt
        log.warning("Ctrl-C: stopping after the current step (press again to abort now)")
        self.interrupter.stop("interrupted (Ctrl-C)")

    def __enter__(self) -> SigintHandler:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
