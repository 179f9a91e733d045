"""Publishing a rebuilt bundle into a folder that running servers are serving from.

Several `pyrite serve` processes may share one bundle folder (`~/.cache/pyrite/web` unless
PYRITE_WEB_DIR says otherwise), and each rebuilds it when it starts. Replacing the folder with
two renames leaves a moment with no folder at all, and deleting the old one breaks the
requests that were reading it, so the other servers answer 404s or cut responses short.

So the bundle folder is a symbolic link to a versioned sibling, `.web.v-<12 hex digits>`:

    stage (the finished build) -> renamed to a new version
    a new link to that version -> renamed over the folder's link   (one atomic step)

A server resolves the link once per request (`server/static.py`: `safe_file` resolves the
path), so each request reads one whole version. The version the link pointed to before stays
for the requests still reading it; older versions are deleted once they are `GRACE_S`
seconds old (a concurrent build's version, just renamed and about to be linked, is younger).

A real folder in its place (a bundle built by an older pyrite) is moved aside once, to a
version, and linked: that one publish has the short gap of two renames.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

GRACE_S = 60.0  # how old a version that no link names must be before it is deleted


def _versions(out: Path) -> list[Path]:
    prefix = f".{out.name}.v-"
    if not out.parent.is_dir():
        return []
    return [p for p in out.parent.iterdir() if p.name.startswith(prefix) and p.is_dir()
            and not p.is_symlink()]


def _new_name(out: Path, kind: str) -> Path:
    return out.parent / f".{out.name}.{kind}-{uuid.uuid4().hex[:12]}"


def current(out: Path) -> Path | None:
    """The version folder the bundle link `out` names, or None (no link, or a real folder)."""
    if not out.is_symlink():
        return None
    return out.parent / os.readlink(out)


def publish(stage: Path, out: Path) -> Path:
    """Make the finished bundle in `stage` the one served at `out` (see the module's text) and
    return its version folder; `stage` must be on `out`'s file system (a sibling)."""
    version = _new_name(out, "v")
    os.replace(stage, version)
    previous = current(out)
    if previous is None and out.exists():  # an older pyrite's real folder: moved aside once
        previous = _new_name(out, "v")
        os.replace(out, previous)
    link = _new_name(out, "link")
    os.symlink(version.name, link)  # relative: the folder and its versions move together
    try:
        os.replace(link, out)
    except BaseException:
        link.unlink(missing_ok=True)
        raise
    keep = {version.name, previous.name if previous is not None else ""}
    now = time.time()
    for old in _versions(out):
        try:
            if old.name not in keep and now - old.stat().st_mtime > GRACE_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:  # another build removed it first
            continue
    return version


__all__ = ["GRACE_S", "current", "publish"]
