"""The standard library a page loads: Pyodide's `python_stdlib.zip` trimmed to what pyrite
imports, the whole of it beside it for the rest (see stdlib_fallback.py, the page's side).

`imported(...)` runs `stdlib_imports.mjs` under Node: Pyodide boots with the bundle's wheels
and imports what a page imports; the standard library modules that came from the zip are the
answer (kept in the cache folder by what they were found from, so a rebuild runs no Node).
`trim(...)` keeps the zip's entries whose top-level name is one of theirs plus `ALWAYS`, byte
for byte in the zip's order, so the same inputs give the same zip; of a kept package it
leaves out the modules nobody imported (the codecs of `encodings` but a few, most of `email`),
except in Pyodide's own packages (`WHOLE`). What it left out, top-level names and the dotted
names of those modules, the page finds in the whole library when something imports it
(stdlib_fallback.py). Measured on Pyodide 314.0.7: 375 of 614 entries, 1.39 of 2.55 MB when
it kept whole packages; the modules it then leaves out weighed 0.36 MB of the zip's .gz copy
once bytecode.py precompiled the rest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Collection, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "stdlib_imports.mjs"
#: the whole library's file name in the bundle's pyodide/ folder
FULL = "python_stdlib-full.zip"
#: kept whatever the page imports: Pyodide's own packages, and the codecs Python looks up by name
ALWAYS = ("pyodide", "_pyodide", "encodings")
#: kept whole: Pyodide imports its own modules as it needs them
WHOLE = ("pyodide", "_pyodide")


def imported(pyodide_dir: Path, wheels: Sequence[Path], cache: Path | None) -> list[str] | None:
    """The standard library modules a page with `wheels` imports, or None without Node."""
    node = shutil.which("node")
    if node is None:
        return None
    digest = hashlib.sha256(SCRIPT.read_bytes())
    for path in [pyodide_dir / "python_stdlib.zip", pyodide_dir / "pyodide.asm.wasm", *wheels]:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    kept = cache / f"{digest.hexdigest()}.json" if cache is not None else None
    if kept is not None and kept.is_file():
        return list(json.loads(kept.read_text()))
    run = subprocess.run([node, str(SCRIPT), str(pyodide_dir), *map(str, wheels)],
                         capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        said = " ".join(run.stderr.split())[-400:]
        raise RuntimeError(f"finding the standard library pyrite imports under Node failed: "
                           f"{said}")
    names = sorted(json.loads(run.stdout.strip().splitlines()[-1]))
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        fd, part = tempfile.mkstemp(prefix=".tmp-", dir=kept.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(names, f)
        os.replace(part, kept)
    return names


def _top(entry: str) -> str:
    """An entry's top-level module name.

    >>> _top("asyncio/tasks.py"), _top("csv.py"), _top("__phello__/")
    ('asyncio', 'csv', '__phello__')
    """
    return entry.split("/")[0].removesuffix(".py")


def _module(entry: str) -> str | None:
    """The module a `.py` entry holds, else None.

    >>> _module("email/parser.py"), _module("json/__init__.py"), _module("pyodide/py.typed")
    ('email.parser', 'json', None)
    """
    if not entry.endswith(".py"):
        return None
    return entry.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def trim(full: bytes, modules: Collection[str]) -> tuple[bytes, list[str]]:
    """(the zip `full` with the packages and top-level modules of `modules` and `ALWAYS`, less
    the modules of those packages that nobody imported (but `WHOLE`'s), the names it left out:
    top-level names and the dotted names of the modules left out of kept packages)."""
    tops = {m.partition(".")[0] for m in modules} | set(ALWAYS)
    wanted = set(modules)
    out = io.BytesIO()
    left: set[str] = set()
    with zipfile.ZipFile(io.BytesIO(full)) as source, zipfile.ZipFile(out, "w") as kept:
        for info in source.infolist():
            top, module = _top(info.filename), _module(info.filename)
            if top not in tops:
                left.add(top)
            elif module is not None and top not in WHOLE and module not in wanted:
                left.add(module)  # a package's module nobody imported (encodings' codecs)
            else:
                kept.writestr(info, source.read(info), compress_type=info.compress_type)
    return out.getvalue(), sorted(left)


__all__ = ["ALWAYS", "FULL", "WHOLE", "imported", "trim"]
