"""`pyrite export-web`: the web bundle written for any static host, and what it weighs.

`export_web(out, models)` builds the bundle (build.py) into `out`, which must be missing, empty
or a previous export (a folder with a bundle's manifest.json): a user's other folder is refused,
and nothing in it is touched. In a previous export only the files that export wrote are
replaced or, when the new bundle has no such file, deleted: its manifest lists them with their
sha256 ("files"; for an export made before that list, the files its manifest names, the
scripts and the compressed copies). Everything else stays: the user's own files, and a file of
the old export that the user changed since (the example `index.html` made into their page is
kept, and the new example is then not written). A file of the user's where the new bundle puts
one of its own is an error, before anything is written.

The new bundle is built completely in a folder inside `out` first, then its files are moved in
(renames on one file system), `manifest.json` last; should a move fail, the moves are undone,
so a failed export leaves the old bundle as it was. The result says how large the bundle is on
disk and what a first visit transfers: the files a page fetches to load every model (the
Pyodide runtime, the wheels, the records and kernels, the JavaScript and the manifest), counted
as they are, as the `.gz` copies a host that serves precompressed files sends instead, and
with the `.br` copies (when `brotli` was installed to make them) where the host serves those.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pyrite.errors import PyriteError

from . import build, example

MANIFEST = "manifest.json"
#: the bundle's example page: where the user has their own, it is kept and this one not written
EXAMPLE = "index.html"
_COPIES = (".gz", ".br")  # the precompressed copies beside a file (compress.py)
_SHOWN = 3  # file names an error lists


class ExportError(PyriteError, ValueError):
    """The export's target folder or options are not usable (nothing was written)."""


@dataclass(frozen=True)
class Export:
    """A finished export: where, what it holds and its sizes in bytes."""

    out: Path
    models: list[str]
    files: int  # every file of the bundle on disk, the compressed copies included
    disk_bytes: int
    first_visit_bytes: int  # the files a first visit fetches, uncompressed
    first_visit_gz_bytes: int  # the same, with each file's .gz size where it has one
    #: the same from a host that also serves the .br copies: .br where there is one, else .gz
    first_visit_br_bytes: int
    #: models left out because their files are not installed: name -> why, and where to put them
    unavailable: dict[str, str] = field(default_factory=dict)
    #: the user's files kept where the bundle has a file of its own (their `index.html`)
    kept: list[str] = field(default_factory=list)


def _manifest(folder: Path) -> dict[str, Any] | None:
    """`folder`'s manifest.json when it is a bundle's: naming pyrite's wheels and models (not,
    say, a web app manifest)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if isinstance(manifest, dict) and {"pyrite", "wheels", "models"} <= manifest.keys():
        return manifest
    return None


def is_export(folder: Path) -> bool:
    """Whether `folder` holds a web bundle: a manifest.json naming pyrite's wheels and models
    (not, say, a web app manifest)."""
    return _manifest(folder) is not None


def _names(paths: Collection[str]) -> str:
    """A few of `paths`, for a message.

    >>> _names(["a", "b"]), _names(["a", "b", "c", "d"])
    ('a, b', 'a, b, c, ...')
    """
    listed = sorted(paths)
    return ", ".join(listed[:_SHOWN]) + (", ..." if len(listed) > _SHOWN else "")


def check_target(out: Path) -> None:
    """ExportError unless `out` is missing, an empty folder or a previous export."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder; choose another --out")
    entries = [p.name + ("/" if p.is_dir() else "") for p in out.iterdir()]
    if entries and not is_export(out):
        raise ExportError(f"{out} is not empty and holds no web bundle (no pyrite {MANIFEST}): "
                          f"it holds files pyrite did not write ({_names(entries)}); choose an "
                          f"empty or new folder, or a previous export")


def _relative(path: object) -> str | None:
    """`path` if it is a plain relative path inside the bundle (a manifest is only trusted
    with those), else None.

    >>> _relative("pyodide/pyodide.mjs"), _relative("../x"), _relative("/etc/x"), _relative(3)
    ('pyodide/pyodide.mjs', None, None, None)
    """
    if not isinstance(path, str) or not path or "\\" in path or path.startswith("/"):
        return None
    parts = PurePosixPath(path).parts
    return path if all(p not in ("", ".", "..") for p in parts) else None


def exported_files(out: Path) -> dict[str, str | None] | None:
    """The files the export in `out` wrote: relative path -> sha256 (None where only the
    name is known: the manifest and its copies; for an export older than the manifest's
    "files", its scripts and compressed copies), or None when `out` holds no export."""
    manifest = _manifest(out)
    if manifest is None:
        return None
    written: dict[str, str | None] = {MANIFEST + suffix: None for suffix in ("", *_COPIES)}
    listed = manifest.get("files")
    if isinstance(listed, dict):
        written.update((path, sha) for path, sha in listed.items()
                       if _relative(path) and isinstance(sha, str))
        return written
    return written | _older_export(manifest)


def _older_export(manifest: dict[str, Any]) -> dict[str, str | None]:
    """What an export made before the manifest listed its files wrote, as far as is known: the
    files its manifest names with their sha256, the example page as this pyrite writes it,
    the scripts by name, and the compressed copies of these."""
    found: dict[str, str | None] = {}

    def add(entry: object) -> None:
        if isinstance(entry, dict) and _relative(entry.get("path")):
            sha = entry.get("sha256")
            found[entry["path"]] = sha if isinstance(sha, str) else None

    pyodide = manifest.get("pyodide")
    for entry in pyodide.get("files", []) if isinstance(pyodide, dict) else []:
        add(entry)
    if isinstance(pyodide, dict):
        add(pyodide.get("stdlib"))  # the whole standard library, beside the trimmed one
    add(manifest.get("snapshot"))
    for entry in manifest.get("wheels") or []:
        add(entry)
    models = manifest.get("models")
    for model in models.values() if isinstance(models, dict) else []:
        if isinstance(model, dict):
            add(model)
            add(model.get("kernels"))
            files = model.get("files")
            for entry in files.values() if isinstance(files, dict) else []:
                add(entry)
    for script in build._scripts():
        found[script.name] = None
    if isinstance(models, dict):
        page = example.index_html(list(models)).encode()
        found[EXAMPLE] = hashlib.sha256(page).hexdigest()
    return found | {path + suffix: None for path in found for suffix in _COPIES}


def _plain(out: Path, rel: str) -> bool:
    """Whether `out/rel` and the folders to it are no links (pyrite writes none)."""
    path = out
    for part in PurePosixPath(rel).parts:
        path = path / part
        if path.is_symlink():
            return False
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _still_exported(out: Path, written: dict[str, str | None]) -> set[str]:
    """The files of `written` that are in `out` as the export wrote them (the others are gone,
    or the user's now)."""
    return {rel for rel, sha in written.items()
            if _plain(out, rel) and (out / rel).is_file()
            and (sha is None or _sha256(out / rel) == sha)}


def _in_the_way(out: Path, rel: str, ours: set[str]) -> bool:
    """Whether something that is not the old export's is where the bundle's file `rel` goes:
    at `rel` itself, or a file or link where one of its folders goes."""
    path = out
    for part in PurePosixPath(rel).parent.parts:
        path = path / part
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            return True
    target = out / rel
    return (target.exists() or target.is_symlink()) and rel not in ours


def _move(source: Path, target: Path, made: list[Path] | None = None) -> None:
    """Rename `source` to `target`, making its folders (appended to `made`)."""
    missing = []
    folder = target.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    target.parent.mkdir(parents=True, exist_ok=True)
    if made is not None:
        made += reversed(missing)
    os.replace(source, target)


def _prune(out: Path, paths: Collection[str]) -> None:
    """Remove the folders of `paths` under `out` that are left empty (deepest first)."""
    folders = {out.joinpath(*PurePosixPath(rel).parts[:n]) for rel in paths
               for n in range(1, len(PurePosixPath(rel).parts))}
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:  # not empty: it holds someone's files
            pass


def _move_in(new: Path, out: Path, ours: set[str]) -> tuple[list[str], list[str]]:
    """Move the built bundle `new` into `out`, replacing the old export's files `ours` and
    deleting those the new bundle does not have; (the bundle's files now in `out`, the user's
    files kept in the bundle's place). ExportError, with nothing moved, for a file of the
    user's where the bundle needs to put one of its own; on a failed move, the moves made are
    undone."""
    built = sorted(p.relative_to(new).as_posix() for p in new.rglob("*") if p.is_file())
    kept = [EXAMPLE] if _in_the_way(out, EXAMPLE, ours) else []
    skipped = {EXAMPLE + suffix for suffix in ("", *_COPIES)} if kept else set()
    blocked = [rel for rel in built if rel not in skipped and _in_the_way(out, rel, ours)]
    if blocked:
        raise ExportError(f"{out} holds files pyrite did not write, or changed since, where "
                          f"the web bundle puts its own ({_names(blocked)}); export-web writes "
                          f"over none of them: move them away, or choose an empty or new folder")
    manifest = [rel for rel in built if rel.startswith(MANIFEST)]
    order = [rel for rel in built if rel not in skipped and rel not in manifest] + manifest
    stale = sorted(ours - set(order))
    backup = out / f".pyrite-export-old-{uuid.uuid4().hex[:12]}"  # the old files, till done
    aside: list[str] = []
    moved: list[str] = []
    made: list[Path] = []  # the folders made in `out`, in order
    try:
        for rel in order:
            if rel in ours:
                _move(out / rel, backup / rel)
                aside.append(rel)
            _move(new / rel, out / rel, made)
            moved.append(rel)
        for rel in stale:
            _move(out / rel, backup / rel)
            aside.append(rel)
    except BaseException:
        try:  # undo: the new files back out, the old ones back in, the new folders away
            for rel in reversed(moved):
                _move(out / rel, new / rel)
            for rel in reversed(aside):
                _move(backup / rel, out / rel)
            for folder in reversed(made):
                try:
                    folder.rmdir()
                except OSError:  # someone put a file there meanwhile
                    pass
        finally:  # should the undo fail too, the old files stay in `backup`
            _prune(backup, aside)
            if backup.exists() and not any(backup.iterdir()):
                backup.rmdir()
        raise
    shutil.rmtree(backup, ignore_errors=True)  # absent when nothing was replaced
    _prune(out, stale)
    return order, kept


def first_visit_files(out: Path, manifest: dict[str, object]) -> list[str]:
    """The bundle's files (relative paths) that a first visit loading every model fetches."""
    pyodide = manifest["pyodide"]
    wheels = manifest["wheels"]
    models = manifest["models"]
    assert isinstance(pyodide, dict) and isinstance(wheels, list) and isinstance(models, dict)
    listed = manifest.get("files")
    scripts = (sorted(p for p in listed if "/" not in p and p.endswith(".js"))
               if isinstance(listed, dict) else sorted(p.name for p in out.glob("*.js")))
    paths = [MANIFEST] + scripts
    paths += [f["path"] for f in pyodide["files"]] + [w["path"] for w in wheels]
    for model in models.values():
        paths += [model["path"], model["kernels"]["path"]]
        paths += [f["path"] for f in model.get("files", {}).values()]
    snapshot = manifest.get("snapshot")
    if isinstance(snapshot, dict):  # gzipped already: the same bytes from every host
        paths.append(snapshot["path"])
    return paths


def transfer_sizes(out: Path, paths: Sequence[str]) -> tuple[int, int, int]:
    """(bytes as they are, bytes with each file's `.gz` copy instead where it has one, bytes
    with its `.br` copy where it has one, else its `.gz` copy: what a host that serves both
    sends a browser that accepts both)."""
    plain = packed = brotli = 0
    for rel in paths:
        size = (out / rel).stat().st_size
        gz, br = out / (rel + ".gz"), out / (rel + ".br")
        plain += size
        packed += gz.stat().st_size if gz.is_file() else size
        brotli += (br.stat().st_size if br.is_file() else
                   gz.stat().st_size if gz.is_file() else size)
    return plain, packed, brotli


def export_web(out: Path, models: Sequence[str] | None = None, *, cache: Path | None = None,
               pyodide_dir: Path | None = None, precision: str = "shipped",
               with_snapshot: bool = False) -> Export:
    """Write the web bundle with `models` (default all) into `out`; see the module's text.

    ExportError (nothing written) for an unknown model, a chosen model whose files are not
    installed, a folder that is not an export, or a file of the user's where the bundle puts
    its own. Without `models`, a model whose files are not installed is left out (the manifest
    says why, under "unavailable"). `with_snapshot` ships a Python memory snapshot that a first
    visit restores instead of booting (snapshot.py; it needs Node).
    """
    try:
        names = build.check_models(models)
    except ValueError as exc:
        raise ExportError(str(exc)) from exc
    out = out.resolve() if out.is_symlink() else out  # write into the folder, keep the link
    check_target(out)
    if not out.exists():  # a new folder: built beside it and renamed into place
        manifest = build.build(out, cache, models=names, pyodide_dir=pyodide_dir,
                               precision=precision, with_snapshot=with_snapshot)
        placed = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
        kept: list[str] = []
    else:  # built inside it (one file system, so each move is a rename), then moved in
        written = exported_files(out) or {}
        ours = _still_exported(out, written)
        new = out / f".pyrite-export-new-{uuid.uuid4().hex[:12]}"
        try:
            manifest = build.build(new, cache, models=names, pyodide_dir=pyodide_dir,
                                   precision=precision, with_snapshot=with_snapshot)
            placed, kept = _move_in(new, out, ours)
        finally:
            shutil.rmtree(new, ignore_errors=True)
    plain, packed, brotli = transfer_sizes(out, first_visit_files(out, manifest))
    shipped = list(manifest["models"])  # type: ignore[call-overload]
    return Export(out, shipped, len(placed), sum((out / p).stat().st_size for p in placed),
                  plain, packed, brotli,
                  dict(manifest["unavailable"]),  # type: ignore[call-overload]
                  kept)


__all__ = ["Export", "ExportError", "check_target", "exported_files", "export_web",
           "first_visit_files", "is_export", "transfer_sizes"]
