"""Checkpoints: the model, optimizer and scheduler records saved at the end of each epoch,
with a strategy deciding which ones to keep.

`FileCheckpointer(directory, recorder, "model")` writes `<directory>/model-<epoch><ext>`
(the recorder's extension: `model-3.mpk`); the Learner keeps three of them, for `model`,
`optim` and `scheduler`. Writes are atomic (the recorders write a temporary file and rename).

A checkpoint taken before its epoch ended (training stopped, or `checkpoint_every(steps)`)
also writes `<directory>/position-<epoch>.json`, `{"epoch", "iteration", "iterations"}`: how
many of the epoch's training steps it holds, so a resume continues with the next step of that
epoch instead of the next epoch. An epoch checkpoint without it is complete.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from ..errors import RecordError
from ..record import FileRecorder, Record
from ..record.atomic import atomic_write


class FileCheckpointer:
    """Saves and restores one kind of record per epoch under `directory`."""

    def __init__(self, directory: str | Path, recorder: FileRecorder, name: str) -> None:
        self.directory = Path(directory)
        self.recorder = recorder
        self.name = name

    def path(self, epoch: int) -> Path:
        return self.recorder.path_for(self.directory / f"{self.name}-{epoch}")

    def save(self, epoch: int, record: Record) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.recorder.save(record, self.path(epoch), item_type=self.name)

    def restore(self, epoch: int) -> Record:
        p = self.path(epoch)
        if not p.exists():
            have = sorted(self.epochs())
            raise RecordError(f"{p}: no {self.name} checkpoint for epoch {epoch}; the folder has "
                              f"epochs {have or 'none'}")
        return self.recorder.load(p)

    def delete(self, epoch: int) -> None:
        self.path(epoch).unlink(missing_ok=True)

    def epochs(self) -> list[int]:
        """Epochs with a checkpoint on disk."""
        found = []
        ext = self.recorder.extension
        for p in self.directory.glob(f"{self.name}-*{ext}"):
            stem = p.name[len(self.name) + 1: len(p.name) - len(ext)]
            if stem.isdigit():
                found.append(int(stem))
        return sorted(found)


class PositionFile:
    """Where inside its epoch a checkpoint was taken: `position-<epoch>.json` in `directory`."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path(self, epoch: int) -> Path:
        return self.directory / f"position-{epoch}.json"

    def save(self, epoch: int, iteration: int, iterations: int | None) -> Path:
        """Record that epoch `epoch`'s checkpoint holds its first `iteration` steps."""
        self.directory.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"epoch": epoch, "iteration": iteration, "iterations": iterations})
        return atomic_write(self.path(epoch), lambda f: f.write(text.encode()))

    def load(self, epoch: int) -> int | None:
        """How many steps of epoch `epoch` its checkpoint holds; None when it holds all."""
        p = self.path(epoch)
        if not p.exists():
            return None
        try:
            data = json.loads(p.read_text())
            iteration = int(data["iteration"])
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise RecordError(f"{p}: not a checkpoint position file ({exc}); delete it to "
                              f"resume from the start of epoch {epoch + 1}") from exc
        return iteration

    def delete(self, epoch: int) -> None:
        self.path(epoch).unlink(missing_ok=True)


# read(metric name, split, epoch) -> the metric's value for that epoch (NaN when not logged)
MetricReader = Callable[[str, str, int], float]


class CheckpointingStrategy(Protocol):
    """Decides which of the saved epochs to keep; the Learner deletes the others (an epoch any
    strategy keeps stays)."""

    def keep(self, epochs: Sequence[int], read: MetricReader) -> set[int]: ...


class KeepLastNCheckpoints:
    """Keep the `n` most recent checkpoints (Burn's default keeps 2)."""

    def __init__(self, n: int = 2) -> None:
        if n < 1:
            raise ValueError(f"KeepLastNCheckpoints: n must be at least 1, got {n}")
        self.n = n

    def keep(self, epochs: Sequence[int], read: MetricReader) -> set[int]:
        return set(sorted(epochs)[-self.n:])

    def __repr__(self) -> str:
        return f"KeepLastNCheckpoints({self.n})"


class MetricCheckpointingStrategy:
    """Keep the checkpoint with the best epoch value of a numeric metric, e.g.
    `MetricCheckpointingStrategy("Loss", split="valid", mode="min")`."""

    def __init__(self, metric: str, *, split: str = "valid", mode: str = "min") -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"MetricCheckpointingStrategy: mode is 'min' or 'max', got {mode!r}")
        self.metric, self.split, self.mode = metric, split, mode

    def keep(self, epochs: Sequence[int], read: MetricReader) -> set[int]:
        scored = [(read(self.metric, self.split, e), e) for e in epochs]
        scored = [(v, e) for v, e in scored if not math.isnan(v)]
        if not scored:
            return set()
        best = min(scored) if self.mode == "min" else max(scored)
        return {best[1]}

    def __repr__(self) -> str:
        return f"MetricCheckpointingStrategy({self.metric!r}, {self.split}, {self.mode})"
