"""`pyrite export-web`: the web bundle written for any static host, and what it weighs.

`export_web(out, models)` builds the bundle (build.py) into `out`, which must be missing, empty
or a previous export (a folder with a bundle's manifest.json): a user's other folder is never
replaced. The new bundle is built beside `out` and swapped in, so a host serving `out` sees the
old bundle or the new one, never half of one. The result says how large the bundle is on disk
and what a first visit transfers: the files a page fetches to load every model (the Pyodide
runtime, the wheels, the records and kernels, the JavaScript and the manifest), counted as
they are and as the `.gz` copies a host that serves precompressed files sends instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyrite.errors import PyriteError

from . import build

MANIFEST = "manifest.json"


class ExportError(PyriteError, ValueError):
    """The export's target folder or options are not usable (nothing was written)."""


@dataclass(frozen=True)
class Export:
    """A finished export: where, what it holds and its sizes in bytes."""

    out: Path
    models: list[str]
    files: int  # every file on disk, the compressed copies included
    disk_bytes: int
    first_visit_bytes: int  # the files a first visit fetches, uncompressed
    first_visit_gz_bytes: int  # the same, with each file's .gz size where it has one
    #: models left out because their files are not installed: name -> why, and where to put them
    unavailable: dict[str, str] = field(default_factory=dict)


def is_export(folder: Path) -> bool:
    """Whether `folder` holds a web bundle: a manifest.json naming pyrite's wheels and models
    (not, say, a web app manifest)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(manifest, dict) and {"pyrite", "wheels", "models"} <= manifest.keys()


def check_target(out: Path) -> None:
    """ExportError unless `out` is missing, an empty folder or a previous export."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder; choose another --out")
    if any(out.iterdir()) and not is_export(out):
        raise ExportError(f"{out} is not empty and holds no web bundle (no pyrite "
                          f"{MANIFEST}); export-web only replaces its own exports: choose "
                          f"a new or empty folder")


def first_visit_files(out: Path, manifest: dict[str, object]) -> list[str]:
    """The bundle's files (relative paths) that a first visit loading every model fetches."""
    pyodide = manifest["pyodide"]
    wheels = manifest["wheels"]
    models = manifest["models"]
    assert isinstance(pyodide, dict) and isinstance(wheels, list) and isinstance(models, dict)
    paths = [MANIFEST] + sorted(p.name for p in out.glob("*.js"))
    paths += [f["path"] for f in pyodide["files"]] + [w["path"] for w in wheels]
    for model in models.values():
        paths += [model["path"], model["kernels"]["path"]]
        paths += [f["path"] for f in model.get("files", {}).values()]
    return paths


def transfer_sizes(out: Path, paths: Sequence[str]) -> tuple[int, int]:
    """(bytes as they are, bytes with each file's `.gz` copy instead where it has one)."""
    plain = packed = 0
    for rel in paths:
        size = (out / rel).stat().st_size
        gz = out / (rel + ".gz")
        plain += size
        packed += gz.stat().st_size if gz.is_file() else size
    return plain, packed


def export_web(out: Path, models: Sequence[str] | None = None, *, cache: Path | None = None,
               pyodide_dir: Path | None = None) -> Export:
    """Write the web bundle with `models` (default all) into `out`; see the module's text.

    ExportError (nothing written) for an unknown model, a chosen model whose files are not
    installed, or a folder that is not an export. Without `models`, a model whose files are
    not installed is left out (the manifest says why, under "unavailable").
    """
    try:
        names = build.check_models(models)
    except ValueError as exc:
        raise ExportError(str(exc)) from exc
    out = out.resolve() if out.is_symlink() else out  # replace the folder, keep the link
    check_target(out)
    manifest = build.build(out, cache, models=names, pyodide_dir=pyodide_dir)
    files = [p for p in out.rglob("*") if p.is_file()]
    plain, packed = transfer_sizes(out, first_visit_files(out, manifest))
    shipped = list(manifest["models"])  # type: ignore[call-overload]
    return Export(out, shipped, len(files), sum(p.stat().st_size for p in files), plain, packed,
                  dict(manifest["unavailable"]))  # type: ignore[call-overload]


__all__ = ["Export", "ExportError", "check_target", "export_web", "first_visit_files",
           "is_export", "transfer_sizes"]
