"""Where metric values and the training's own log lines go.

Metric loggers receive every `MetricEntry` with its split ("train"/"valid") and epoch.
`FileMetricLogger` writes the book's layout, one line `value,count` per update:
`<artifacts>/train/epoch-1/Loss.log`, `<artifacts>/valid/epoch-1/Accuracy.log`, ...
`InMemoryMetricLogger` keeps them in lists (tests, notebooks). Both can read a metric's
values back per epoch, which is what the summary uses, and `rewind` an epoch to its first
updates: a run resumed from a checkpoint inside an epoch drops what was logged after it.

The application logger is Python's `logging`: `FileApplicationLoggerInstaller` attaches a file
handler writing `<artifacts>/experiment.log` to the "pyrite" logger for the length of `fit`.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import IO, Protocol

from .metric import MetricEntry

Split = str  # "train" or "valid"


class MetricLogger(Protocol):
    def log(self, entry: MetricEntry, epoch: int, split: Split) -> None: ...

    def end_epoch(self, epoch: int) -> None: ...

    def read(self, name: str, epoch: int, split: Split) -> list[tuple[float, int]]: ...

    def close(self) -> None: ...


def epoch_value(values: list[tuple[float, int]]) -> float:
    """The count-weighted mean of (value, count) pairs, NaNs left out."""
    num = sum(v * c for v, c in values if not math.isnan(v))
    den = sum(c for v, c in values if not math.isnan(v))
    return num / den if den else math.nan


class InMemoryMetricLogger:
    """Keeps every entry: `logger.values[(split, epoch, name)] -> [(value, count), ...]`."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, int, str], list[tuple[float, int]]] = {}

    def log(self, entry: MetricEntry, epoch: int, split: Split) -> None:
        self.values.setdefault((split, epoch, entry.name), []).append((entry.value, entry.count))

    def end_epoch(self, epoch: int) -> None:
        pass

    def read(self, name: str, epoch: int, split: Split) -> list[tuple[float, int]]:
        return list(self.values.get((split, epoch, name), []))

    def rewind(self, epoch: int, split: Split, keep: int) -> None:
        """Keep only the first `keep` updates of every metric of `split` in `epoch`."""
        for key in [k for k in self.values if k[:2] == (split, epoch)]:
            del self.values[key][keep:]

    def close(self) -> None:
        pass


_SAFE = re.compile(r"[^A-Za-z0-9_.@+-]+")


class FileMetricLogger:
    """Writes `<directory>/<split>/epoch-<N>/<Metric>.log`, one `value,count` line per update.

    Files are appended to and flushed at each checkpoint and the end of each epoch; a resumed
    run adds its epochs beside the earlier ones.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._files: dict[tuple[str, int, str], IO[str]] = {}

    def path(self, name: str, epoch: int, split: Split) -> Path:
        return self.directory / split / f"epoch-{epoch}" / f"{_SAFE.sub('_', name)}.log"

    def log(self, entry: MetricEntry, epoch: int, split: Split) -> None:
        key = (split, epoch, entry.name)
        f = self._files.get(key)
        if f is None:
            p = self.path(entry.name, epoch, split)
            p.parent.mkdir(parents=True, exist_ok=True)
            f = self._files[key] = p.open("a", encoding="utf-8")
        f.write(entry.serialize() + "\n")

    def end_epoch(self, epoch: int) -> None:
        for key in [k for k in self._files if k[1] == epoch]:
            self._files.pop(key).close()

    def flush(self) -> None:
        """Write out what is buffered (the Learner calls it before each checkpoint, so a
        process killed after it leaves at least the checkpoint's lines to rewind to)."""
        for f in self._files.values():
            f.flush()

    def read(self, name: str, epoch: int, split: Split) -> list[tuple[float, int]]:
        f = self._files.get((split, epoch, name))
        if f is not None:
            f.flush()
        p = self.path(name, epoch, split)
        if not p.exists():
            return []
        out = []
        for line in p.read_text(encoding="utf-8").splitlines():
            value, _, count = line.partition(",")
            out.append((float(value), int(count or 1)))
        return out

    def rewind(self, epoch: int, split: Split, keep: int) -> None:
        """Keep only the first `keep` lines of every metric file of `split` in `epoch`."""
        from ..record.atomic import atomic_write

        folder = self.directory / split / f"epoch-{epoch}"
        for key in [k for k in self._files if k[:2] == (split, epoch)]:
            self._files.pop(key).close()
        for p in sorted(folder.glob("*.log")) if folder.is_dir() else []:
            lines = p.read_text(encoding="utf-8").splitlines(keepends=True)
            if len(lines) > keep:
                kept = "".join(lines[:keep]).encode()

                def write(f: IO[bytes], data: bytes = kept) -> None:
                    f.write(data)
                atomic_write(p, write)

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()


class FileApplicationLoggerInstaller:
    """Sends the "pyrite" logger's records (INFO and up) to `path` while installed."""

    def __init__(self, path: str | Path, level: int = logging.INFO) -> None:
        self.path = Path(path)
        self.level = level
        self._handler: logging.Handler | None = None
        self._old_level = logging.NOTSET

    def install(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.path, encoding="utf-8")
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.setLevel(self.level)
        root = logging.getLogger("pyrite")
        self._old_level = root.level
        if root.level == logging.NOTSET or root.level > self.level:
            root.setLevel(self.level)
        root.addHandler(handler)
        self._handler = handler

    def uninstall(self) -> None:
        if self._handler is not None:
            root = logging.getLogger("pyrite")
            root.removeHandler(self._handler)
            root.setLevel(self._old_level)
            self._handler.close()
            self._handler = None
