"""Which epochs' checkpoints are complete: `checkpoint/checkpoints.json`, published last.

An epoch's checkpoint is several files (model, optim, scheduler, and a position file for one
taken inside its epoch), each written atomically, but a `kill -9` can land between two of them.
So the Learner publishes an epoch only after all its files are written, by rewriting this index
(one atomic rename), and withdraws it from the index before it rewrites or deletes any of them:

    withdraw(epoch)   -> write position, model, optim, scheduler -> publish(epoch, files)

A crash anywhere leaves the epoch either complete, with the files the index lists, or absent
from the index, so a resume takes the newest epoch the index lists whose files all exist.

A folder without an index was written by a pyrite from before it: there, an epoch counts as
complete when its model, optim and scheduler files all exist (the old rule), and the first
publish seeds the index with those epochs.

The index is JSON: `{"format": 1, "epochs": {"3": ["model-3.mpk", "optim-3.mpk", ...]}}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import RecordError
from ..record.atomic import atomic_write

INDEX = "checkpoints.json"
_FORMAT = 1
_NAMES = ("model", "optim", "scheduler")


class CheckpointIndex:
    """The index of complete epochs in one checkpoint folder."""

    def __init__(self, directory: str | Path, extension: str) -> None:
        self.directory = Path(directory)
        self.extension = extension  # the recorder's, for the folders without an index
        self.path = self.directory / INDEX

    def _read(self) -> dict[int, list[str]] | None:
        """The index's epochs and files; None when the folder has no index."""
        if not self.path.exists():
            return None
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("format") != _FORMAT:
                raise ValueError(f"format {raw.get('format')!r}, expected {_FORMAT}")
            epochs = {int(k): [str(f) for f in v] for k, v in raw["epochs"].items()}
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError,
                AttributeError, RecursionError) as err:
            raise RecordError(f"{self.path}: not a checkpoint index ({str(err)[:200]}); delete "
                              f"it to fall back to the epochs whose files are all there") from err
        if any("/" in f or "\\" in f or f.startswith(".") for files in epochs.values()
               for f in files):
            raise RecordError(f"{self.path}: the index names a file outside its folder")
        return epochs

    def _legacy(self) -> dict[int, list[str]]:
        """Epochs whose model, optim and scheduler files all exist (no index: the old rule)."""
        pattern = re.compile(rf"(model)-(\d+){re.escape(self.extension)}")
        found: dict[int, list[str]] = {}
        if not self.directory.is_dir():
            return found
        for p in self.directory.iterdir():
            match = pattern.fullmatch(p.name)
            if match:
                epoch = int(match[2])
                files = [f"{n}-{epoch}{self.extension}" for n in _NAMES]
                if all((self.directory / f).is_file() for f in files):
                    found[epoch] = files
        return found

    def complete(self) -> list[int]:
        """The epochs a resume may use, oldest first: listed and with every file present."""
        epochs = self._read()
        if epochs is None:
            return sorted(self._legacy())
        return sorted(e for e, files in epochs.items()
                      if all((self.directory / f).is_file() for f in files))

    def newest(self) -> int | None:
        """The newest complete epoch, or None."""
        found = self.complete()
        return found[-1] if found else None

    def publish(self, epoch: int, files: Iterable[str]) -> None:
        """Mark `epoch` complete with `files` (names in the folder): the last step of a save."""
        epochs = self._read()
        if epochs is None:
            epochs = self._legacy()
        epochs[epoch] = sorted(files)
        self._write(epochs)

    def withdraw(self, epoch: int) -> None:
        """Mark `epoch` incomplete: the first step before its files are rewritten or deleted."""
        epochs = self._read()
        if epochs is None:
            epochs = self._legacy()
        if epochs.pop(epoch, None) is not None or not self.path.exists():
            self._write(epochs)

    def _write(self, epochs: dict[int, list[str]]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": _FORMAT,
                           "epochs": {str(e): epochs[e] for e in sorted(epochs)}}, indent=1)
        atomic_write(self.path, lambda f: f.write(text.encode() + b"\n"))
