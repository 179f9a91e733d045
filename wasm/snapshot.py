"""The web bundle's Python memory snapshot, made at export time (`export-web --snapshot`).

A first visit without one boots Pyodide and imports pyrite in the page (about 2.5 s of a
4.5 s first visit on SwiftShader); with one it restores Python's memory instead. `make` runs
`snapshot.mjs` under Node: Pyodide from the bundle's own runtime files boots, the bundle's
wheels are unpacked and `pyrite.wasm.preload` is imported, then Pyodide's
`makeMemorySnapshot` is written out and gzipped here (gzip level 9, no timestamp; the worker
decompresses it with `DecompressionStream`, so a host that serves files as they are still
sends it compressed).

The manifest names what it was made for under `"snapshot": {"path", "sha256", "size",
"memory", "trampoline", "for": {"pyodide", "wheels"}}`: the Pyodide version and the sha256 of
every wheel, in the manifest's order. The worker restores it only when those equal the
manifest's own (`snapshotFits` in snapshot.js); Pyodide itself refuses a snapshot of another
build. A refused or failing snapshot is warned about on the console and Python boots as
without one. "trampoline" is where CPython's call trampoline sits in the function table of a
browser with WebAssembly GC (snapshot.mjs says why the worker needs it).

Snapshots are kept in the cache folder by what they were made from (Pyodide's files, the
wheels, the Node scripts), so a rebuild with the same sources takes no Node run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyrite.errors import PyriteError

from . import pyodide_dist

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "snapshot.mjs"
WHEELS_JS = HERE / "wheels.js"  # which it runs, as the worker does: part of the cache key
#: the snapshot's file in the bundle, before its hash is put in the name
NAME = "python.snapshot.gz"


class SnapshotError(PyriteError, RuntimeError):
    """The snapshot could not be made (no Node, or Pyodide failed under it)."""


def fits(made_for: dict[str, object], pyodide_version: str, wheel_hashes: Sequence[str]) -> bool:
    """Whether a snapshot made for `made_for` ({"pyodide", "wheels"}) fits this Pyodide and
    these wheels (the worker's `snapshotFits` is the same rule).

    >>> fits({"pyodide": "1.0", "wheels": ["a", "b"]}, "1.0", ["a", "b"])
    True
    >>> fits({"pyodide": "1.0", "wheels": ["a", "b"]}, "1.0", ["a", "c"])
    False
    """
    return made_for == {"pyodide": pyodide_version, "wheels": list(wheel_hashes)}


def _cache_key(runtime: Sequence[Path], wheels: Sequence[Path]) -> str:
    digest = hashlib.sha256(SCRIPT.read_bytes() + WHEELS_JS.read_bytes())
    for path in [*runtime, *wheels]:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _node() -> list[str]:
    """Node's command line, with JSPI: the snapshot keeps whether Pyodide had it, and pages
    need it (every GPU readback waits through it)."""
    node = shutil.which("node")
    if node is None:
        raise SnapshotError("the Python snapshot is made by Pyodide under Node.js, which is "
                            "not installed (no `node` on PATH); install Node 20 or later, or "
                            "export without --snapshot")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    major = int(version.strip().lstrip("v").split(".")[0] or 0)
    # JSPI is on by default from Node 24 (V8 13.6); before, behind this flag
    return [node] if major >= 24 else [node, "--experimental-wasm-stack-switching",
                                             "--experimental-wasm-gc",
                                             "--experimental-wasm-typed-funcref"]


@dataclass(frozen=True)
class Snapshot:
    """A snapshot as the bundle ships it."""

    packed: bytes  # gzipped
    memory: int  # bytes of memory it restores
    #: the function-table index of CPython's call trampoline that it holds (see snapshot.mjs)
    trampoline: int


def make(wheels: Sequence[Path], pyodide_dir: Path | None = None,
         cache: Path | None = None) -> Snapshot:
    """The snapshot of Pyodide (`pyodide_dir`, default the npm package) with `wheels`
    installed and `pyrite.wasm.preload` imported.

    SnapshotError, with Node's last lines, when Node is missing or the snapshot fails."""
    runtime = pyodide_dist.runtime_files(pyodide_dir)
    key = _cache_key(runtime, wheels)
    if cache is not None and (cache / f"{key}.gz").is_file() and (cache / f"{key}.json").is_file():
        facts = json.loads((cache / f"{key}.json").read_text())
        return Snapshot((cache / f"{key}.gz").read_bytes(), int(facts["memory"]),
                        int(facts["trampoline"]))
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "python.snapshot"
        run = subprocess.run([*_node(), str(SCRIPT), str(runtime[0].parent), str(raw),
                              *map(str, wheels)], capture_output=True, text=True,
                             timeout=600)
        if run.returncode != 0 or not raw.is_file():
            said = " ".join(run.stderr.split())[-400:] or f"exit status {run.returncode}"
            raise SnapshotError(f"making the Python snapshot under Node failed: {said}")
        data = raw.read_bytes()
    made = Snapshot(gzip.compress(data, compresslevel=9, mtime=0), len(data),
                    int(json.loads(run.stdout.strip().splitlines()[-1])["trampoline"]))
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        _write(cache / f"{key}.gz", made.packed)  # the data first: the facts say it is there
        _write(cache / f"{key}.json",
               json.dumps({"memory": made.memory, "trampoline": made.trampoline}).encode())
    return made


def _write(path: Path, data: bytes) -> None:
    fd, part = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(part, path)


__all__ = ["NAME", "Snapshot", "SnapshotError", "fits", "make"]
