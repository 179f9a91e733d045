"""Artifact folders: a training run's folder, where pyrite deletes only the files it wrote.

A run that starts over (`pyrite train mnist --artifacts DIR`, the demos' `train(...)`) first
calls `prepare_artifact_dir(DIR, files)`, which

- creates a missing folder, and takes an empty one;
- in a folder pyrite made (it holds the marker file `.pyrite-artifacts`), deletes the files an
  earlier run wrote, so the new run's logs and summary are its own, and keeps any other file;
- refuses any other folder that is not empty with a ConfigError that names what it holds,
  deleting nothing (`check_artifact_dir` is that check alone, for a command to run early).

A run's files are the Learner's layout (learner.py)

    experiment.log
    checkpoint/{model,optim,scheduler}-<epoch><ext>, checkpoint/position-<epoch>.json
    checkpoint/checkpoints.json (the index of complete epochs: checkpoint_index.py)
    {train,valid}/epoch-<N>/<Metric>.log

the `files` the caller writes beside them (`config.json`, `model.bin`), and the temporary files
an interrupted atomic write leaves beside any of these (`.NAME.<8 hex digits>.tmp`). Files of
other names, also inside `checkpoint/`, `train/` or `valid/`, are kept, and so are the folders
holding them. The marker is JSON; it lists the caller's `files`, so a later run also clears
those an earlier run of another command wrote. A folder a pyrite without the marker wrote is
recognised by holding nothing but a run's files, `experiment.log` among them.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp()) / "run"
>>> _ = prepare_artifact_dir(folder, ["config.json"])   # a new folder: created and marked
>>> for name in ("config.json", "experiment.log", "notes.txt"):
...     _ = (folder / name).write_text("x")
>>> _ = prepare_artifact_dir(folder, ["config.json"])   # pyrite's files go, the rest stays
>>> sorted(p.name for p in folder.iterdir())
['.pyrite-artifacts', 'notes.txt']
>>> (folder.parent / "mine").mkdir(); _ = (folder.parent / "mine" / "thesis.tex").write_text("x")
>>> prepare_artifact_dir(folder.parent / "mine")
Traceback (most recent call last):
...
pyrite.errors.ConfigError: artifact folder ... holds files pyrite did not write (thesis.tex); \
choose an empty or new folder, or one pyrite made
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterator
from pathlib import Path

from ..errors import ConfigError
from ..record.atomic import atomic_write

#: the file that marks a folder as pyrite's artifact folder
MARKER = ".pyrite-artifacts"
#: the Learner's files, relative to the folder (learner.py, checkpoint.py, logger.py)
_LEARNER_FILES = re.compile(
    r"experiment\.log"
    r"|checkpoint/(model|optim|scheduler)-\d+\.(bin|mpk|json)(\.gz)?"
    r"|checkpoint/position-\d+\.json|checkpoint/checkpoints\.json"
    r"|(train|valid)/epoch-\d+/[A-Za-z0-9_.@+-]+\.log")
#: the folders the Learner makes, the only ones looked into
_LEARNER_DIRS = re.compile(r"checkpoint|train|valid|(train|valid)/epoch-\d+")
#: what atomic_write leaves when interrupted before its rename: `.NAME.<hex>.tmp`
_TEMPORARY = re.compile(r"\.(.+)\.[0-9a-f]{8}\.tmp")
_SHOWN = 3  # foreign names an error lists


def _plain_names(names: Collection[object]) -> set[str]:
    """The names in `names` that are file names in the folder itself (a marker's list is not
    trusted with paths)."""
    return {n for n in names if isinstance(n, str) and n and "/" not in n and "\\" not in n
            and n not in (".", "..", MARKER)}


def _is_runs(rel: str, files: Collection[str]) -> bool:
    """Whether the file at `rel` (relative, `/`-separated) is one a run writes."""
    parent, _, name = rel.rpartition("/")
    temporary = _TEMPORARY.fullmatch(name)
    if temporary:
        name = temporary[1]
        rel = f"{parent}/{name}" if parent else name
    if "/" not in rel and (rel in files or rel == MARKER):
        return True
    return bool(_LEARNER_FILES.fullmatch(rel))


def _walk(folder: Path, files: Collection[str], rel: str = "") -> Iterator[tuple[str, bool]]:
    """(path relative to `folder`, whether a run wrote it) for each entry, a run's folders
    looked into (depth first, their entries before them) and every other entry as it is."""
    with os.scandir(folder / rel if rel else folder) as entries:
        found = sorted(entries, key=lambda e: e.name)
    for entry in found:
        path = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_dir(follow_symlinks=False):
            if _LEARNER_DIRS.fullmatch(path):
                yield from _walk(folder, files, path)
                yield path + "/", True
            else:
                yield path + "/", False
        else:  # pyrite writes no links: a link is someone else's, even under a run's name
            yield path, entry.is_file(follow_symlinks=False) and _is_runs(path, files)


def _marker(folder: Path) -> set[str] | None:
    """The file names a marked folder's runs wrote (besides the Learner's), or None when the
    folder holds no marker."""
    path = folder / MARKER
    if not path.is_file() or path.is_symlink():
        return None
    try:
        listed = json.loads(path.read_text(encoding="utf-8")).get("files", [])
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, RecursionError):
        return set()  # still pyrite's folder; an unreadable list names no extra files
    return _plain_names(listed) if isinstance(listed, list) else set()


def _foreign(folder: Path, files: Collection[str]) -> list[str]:
    """The entries at the top of `folder` holding anything a run did not write (sorted,
    folders with a trailing `/`)."""
    tops = {path.split("/", 1)[0] + ("/" if "/" in path else "")
            for path, runs in _walk(folder, files) if not runs}
    return sorted(tops)


def check_artifact_dir(folder: str | Path, files: Collection[str] = (), *,
                       what: str = "artifact folder") -> None:
    """ConfigError unless `prepare_artifact_dir(folder, files)` may use `folder`: missing,
    empty, marked as pyrite's, or holding only a run's files (see the module's text). `what`
    names the folder in the message (a command passes its option: "--artifacts")."""
    folder = Path(folder)
    if not folder.exists() and not folder.is_symlink():
        return
    if not folder.is_dir():
        raise ConfigError(f"{what} {folder} is not a folder; choose a new or empty folder")
    if _marker(folder) is not None:
        return
    files = _plain_names(files)
    foreign = _foreign(folder, files)
    if not foreign:
        written = [path for path, runs in _walk(folder, files)
                   if runs and not path.endswith("/")]
        if not written or "experiment.log" in written:
            return
        foreign = sorted({path.split("/", 1)[0] + ("/" if "/" in path else "")
                          for path in written})
    shown = ", ".join(foreign[:_SHOWN]) + (", ..." if len(foreign) > _SHOWN else "")
    raise ConfigError(f"{what} {folder} holds files pyrite did not write ({shown}); choose an "
                      f"empty or new folder, or one pyrite made")


def prepare_artifact_dir(folder: str | Path, files: Collection[str] = (), *,
                         clear: bool = True) -> Path:
    """Make `folder` ready for a run that writes the Learner's files and `files` (names in the
    folder) and return it: created if missing, marked as pyrite's, and with `clear` (a new
    run; False to resume one) an earlier run's files deleted and every other file kept.
    ConfigError, deleting nothing, for a folder pyrite did not make (`check_artifact_dir`)."""
    folder = Path(folder)
    check_artifact_dir(folder, files)
    names = _plain_names(files)
    earlier = _marker(folder)
    if folder.is_dir():
        if earlier is None:  # a folder made before the marker: it holds only a run's files
            earlier = set()
        if clear:
            _delete_runs(folder, names | earlier)
        else:
            names |= earlier
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"about": "a pyrite artifact folder: a new run deletes only the files "
                       "runs write here (the Learner's, and these files); others are kept",
                       "files": sorted(names)}, indent=1) + "\n"
    atomic_write(folder / MARKER, lambda f: f.write(text.encode()))
    return folder


def remove_temporaries(folder: str | Path) -> list[str]:
    """Delete the temporary files that interrupted atomic writes of a run left in `folder`
    (`.NAME.<8 hex digits>.tmp` beside a run's file, checkpoints included); return their paths
    relative to `folder`. The Learner calls it when it starts, so a `kill -9` leaves no orphan
    behind the next run. Nothing else is touched."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    removed = []
    for path, runs in list(_walk(folder, _marker(folder) or set())):
        if runs and not path.endswith("/") and _TEMPORARY.fullmatch(path.rpartition("/")[2]):
            (folder / path).unlink(missing_ok=True)
            removed.append(path)
    return removed


def _delete_runs(folder: Path, files: Collection[str]) -> None:
    """Delete what a run wrote in `folder`: its files, then its folders left empty."""
    for path, runs in list(_walk(folder, files)):  # entries before their folder
        if not runs or path == MARKER:
            continue
        if path.endswith("/"):
            try:
                (folder / path).rmdir()
            except OSError:  # it holds someone else's files
                pass
        else:
            (folder / path).unlink(missing_ok=True)


__all__ = ["MARKER", "check_artifact_dir", "prepare_artifact_dir", "remove_temporaries"]
