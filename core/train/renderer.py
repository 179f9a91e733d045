"""Showing training progress: a live view on a terminal, plain log lines elsewhere.

`default_renderer()` picks `TerminalRenderer` when stdout is a TTY (one block repainted in
place, at most 10 times a second: split, epoch, progress bar, iteration, speed, ETA, and each
metric's batch and epoch value) and `PlainRenderer` otherwise (one line every 10 s and one per
finished epoch, fit for log files and CI). Both print a line when an epoch's split ends.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Protocol, TextIO

from .metric import MetricEntry


@dataclass(frozen=True)
class Progress:
    """Where an epoch's split stands after a step."""

    split: str
    epoch: int
    epoch_total: int
    iteration: int
    iterations: int | None
    items: int
    elapsed_s: float

    @property
    def speed(self) -> float:
        """Items per second in this split of this epoch."""
        return self.items / self.elapsed_s if self.elapsed_s > 0 else math.nan

    @property
    def eta_s(self) -> float | None:
        if not self.iterations or self.iteration == 0:
            return None
        per = self.elapsed_s / self.iteration
        return per * max(self.iterations - self.iteration, 0)


class Renderer(Protocol):
    def update(self, progress: Progress, entries: list[MetricEntry]) -> None: ...

    def end_split(self, progress: Progress, values: dict[str, str]) -> None: ...

    def close(self) -> None: ...


def format_duration(seconds: float | None) -> str:
    """`1:02:03`, `2:03`, or `?`."""
    if seconds is None or math.isnan(seconds):
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _count(p: Progress) -> str:
    return f"iteration {p.iteration}/{p.iterations}" if p.iterations else f"iteration {p.iteration}"


def _status(p: Progress) -> str:
    return (f"epoch {p.epoch}/{p.epoch_total} {p.split:<5} {_count(p)} | "
            f"{p.speed:,.0f} items/s | ETA {format_duration(p.eta_s)}")


def _summary_line(p: Progress, values: dict[str, str]) -> str:
    metrics = " | ".join(f"{k} {v}" for k, v in values.items())
    sep = " | " if metrics else ""
    return (f"epoch {p.epoch}/{p.epoch_total} {p.split:<5} done: {metrics}{sep}"
            f"{p.iteration} iterations in {format_duration(p.elapsed_s)} "
            f"({p.speed:,.0f} items/s)")


class PlainRenderer:
    """One status line every `interval_s` seconds, one line per finished split."""

    def __init__(self, stream: TextIO | None = None, *, interval_s: float = 10.0) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.interval_s = interval_s
        self._last = time.monotonic()

    def update(self, progress: Progress, entries: list[MetricEntry]) -> None:
        now = time.monotonic()
        if now - self._last < self.interval_s:
            return
        self._last = now
        metrics = " | ".join(f"{e.name} {e.formatted}" for e in entries)
        self.stream.write(f"{_status(progress)}{' | ' if metrics else ''}{metrics}\n")
        self.stream.flush()

    def end_split(self, progress: Progress, values: dict[str, str]) -> None:
        self.stream.write(_summary_line(progress, values) + "\n")
        self.stream.flush()
        self._last = time.monotonic()

    def close(self) -> None:
        pass


class TerminalRenderer:
    """A block of lines repainted in place with ANSI escapes (a TTY is assumed)."""

    BAR = 24

    def __init__(self, stream: TextIO | None = None, *, fps: float = 10.0) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.min_dt = 1.0 / fps
        self._last = -math.inf
        self._lines = 0

    def _clear(self) -> str:
        if not self._lines:
            return ""
        # up to the block's first line, then clear from there to the end of the screen
        return f"\x1b[{self._lines}F\x1b[J"

    def update(self, progress: Progress, entries: list[MetricEntry]) -> None:
        now = time.monotonic()
        last_step = progress.iterations is not None and progress.iteration >= progress.iterations
        if now - self._last < self.min_dt and not last_step:
            return
        self._last = now
        p = progress
        frac = p.iteration / p.iterations if p.iterations else 0.0
        filled = int(round(frac * self.BAR))
        bar = "█" * filled + "░" * (self.BAR - filled)
        lines = [f"\x1b[1m{p.split:<5}\x1b[0m epoch {p.epoch}/{p.epoch_total} [{bar}] "
                 f"{frac * 100:3.0f}%  {_count(p)}",
                 f"      {p.speed:,.0f} items/s  elapsed {format_duration(p.elapsed_s)}  "
                 f"ETA {format_duration(p.eta_s)}"]
        width = max((len(e.name) for e in entries), default=0)
        lines += [f"      {e.name:<{width}}  {e.formatted}" for e in entries]
        self.stream.write(self._clear() + "\n".join(lines) + "\n")
        self.stream.flush()
        self._lines = len(lines)

    def end_split(self, progress: Progress, values: dict[str, str]) -> None:
        self.stream.write(self._clear() + _summary_line(progress, values) + "\n")
        self.stream.flush()
        self._lines = 0
        self._last = -math.inf

    def close(self) -> None:
        self._lines = 0


class NoRenderer:
    """Shows nothing (metrics still go to the loggers)."""

    def update(self, progress: Progress, entries: list[MetricEntry]) -> None:
        pass

    def end_split(self, progress: Progress, values: dict[str, str]) -> None:
        pass

    def close(self) -> None:
        pass


class MultiRenderer:
    """Hands every call to each of `renderers`, in order: the terminal view and a dashboard.

    >>> MultiRenderer(NoRenderer(), NoRenderer()).close()
    """

    def __init__(self, *renderers: Renderer) -> None:
        self.renderers = renderers

    def update(self, progress: Progress, entries: list[MetricEntry]) -> None:
        for renderer in self.renderers:
            renderer.update(progress, entries)

    def end_split(self, progress: Progress, values: dict[str, str]) -> None:
        for renderer in self.renderers:
            renderer.end_split(progress, values)

    def close(self) -> None:
        for renderer in self.renderers:
            renderer.close()


def default_renderer(stream: TextIO | None = None) -> Renderer:
    """TerminalRenderer on a TTY, PlainRenderer otherwise."""
    out = stream if stream is not None else sys.stdout
    isatty = getattr(out, "isatty", None)
    return TerminalRenderer(out) if isatty is not None and isatty() else PlainRenderer(out)
