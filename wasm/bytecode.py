"""The page's standard library as bytecode: the modules a page imports, precompiled.

Pyodide's `python_stdlib.zip` holds Python sources, so every page that boots Python compiles
each module it imports, Pyodide's own start-up included, and compiling is slow in
WebAssembly. Measured under Node (Pyodide 314.0.7, this 2-core machine, busy): booting took
2.2-5.0 s from sources and 0.92-0.94 s from bytecode, and importing pyrite.wasm.preload after
it 0.72-1.0 s and 0.44-0.48 s.

`precompile(...)` runs `bytecode.mjs` under Node on the trimmed zip (stdlib.py): Pyodide's
own Python compiles each module the page imports (the list stdlib.py found) into `NAME.pyc`
in place of `NAME.py` (unchecked-hash pycs, which zipimport takes without looking for a
source; optimize level 2, as `python -OO`: no docstrings and no asserts, which the page has
no use for), and every entry is stored rather than deflated, so the host's `.gz`/`.br` copy
compresses the zip as a whole (smaller than deflating it entry by entry). The modules nobody
imported stay sources; the whole library beside it (stdlib.FULL) stays as Pyodide ships it.
A traceback through a precompiled module names its file and line, without the line's text.

The result is kept in the cache folder by what it was made from (the script, Pyodide's
WebAssembly, the zip, the module list), so a rebuild runs no Node. Without Node it is None:
the zip stays as stdlib.py left it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "bytecode.mjs"


def precompile(pyodide_dir: Path, zipped: bytes, modules: Sequence[str],
               cache: Path | None, *, where: str = "", optimize: int = 2) -> bytes | None:
    """`zipped` (a standard library zip) with `modules` as Pyodide's bytecode and every entry
    stored; None without Node. RuntimeError with Node's last words when it fails.
    `where`: "site-packages" for a wheel's modules (named for Pyodide's site-packages folder,
    where the page installs it); `optimize`: compile()'s level (2 drops asserts too)."""
    node = shutil.which("node")
    if node is None:
        return None
    names = json.dumps(sorted(modules))
    digest = hashlib.sha256(SCRIPT.read_bytes() + zipped + names.encode()
                            + f"{where}\n{optimize}".encode())
    # the bytecode is CPython's inside the WebAssembly (stdlib.imported keys its list alike)
    digest.update(hashlib.sha256((pyodide_dir / "pyodide.asm.wasm").read_bytes()).digest())
    kept = cache / f"{digest.hexdigest()}.zip" if cache is not None else None
    if kept is not None and kept.is_file():
        return kept.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        source, target, listed = (Path(tmp) / n for n in ("in.zip", "out.zip", "modules.json"))
        source.write_bytes(zipped)
        listed.write_text(names)
        run = subprocess.run([node, str(SCRIPT), str(pyodide_dir), str(source), str(target),
                              str(listed), where, str(optimize)], capture_output=True,
                             text=True, timeout=600)
        if run.returncode != 0 or not target.is_file():
            said = " ".join(run.stderr.split())[-400:] or f"exit status {run.returncode}"
            what = "the page's wheel" if where else "the standard library"
            raise RuntimeError(f"precompiling {what} under Node failed: {said}")
        data = target.read_bytes()
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        fd, part = tempfile.mkstemp(prefix=".tmp-", dir=kept.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(part, kept)
    return data


__all__ = ["precompile"]
