"""The Pyodide runtime a page loads, as the web bundle ships it (see build.py).

The npm package (pinned in wasm/package.json, installed by `make setup`) holds more than a
page needs: type declarations, source maps, a console page, a CommonJS copy. A page that loads
pyrite fetches exactly `RUNTIME_FILES` (observed in Chromium: the page's and the worker's
requests while `load({device: "webgpu", models: ["mnist"]})` runs), so the bundle copies only
those into `pyodide/`. The pure-Python wheels the page needs besides pyrite (micropip) come
from PyPI at the versions Pyodide's lock file names, since the npm package does not carry them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pyrite.errors import DownloadError

HERE = Path(__file__).resolve().parent
PYODIDE_DIR = HERE / "node_modules" / "pyodide"
#: what `loadPyodide()` fetches: its module, the Emscripten glue and binary, the standard
#: library and the lock file (which it reads even when no package is loaded)
RUNTIME_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                 "pyodide-lock.json")


def _missing(source: Path, name: str) -> FileNotFoundError:
    return FileNotFoundError(f"wasm: {source / name} is missing: install the pinned Pyodide "
                             f"first (`make setup`, or `npm ci` in {HERE})")


def runtime_files(source: Path | None = None) -> list[Path]:
    """The Pyodide files a page loads, in `source` (default the npm package), all present."""
    source = source or PYODIDE_DIR
    files = [source / name for name in RUNTIME_FILES]
    for path in files:
        if not path.is_file():
            raise _missing(source, path.name)
    return files


def lock(source: Path | None = None) -> dict[str, object]:
    """Pyodide's lock file (`pyodide-lock.json`) in `source`, parsed."""
    path = (source or PYODIDE_DIR) / "pyodide-lock.json"
    if not path.is_file():
        raise _missing(path.parent, path.name)
    data: dict[str, object] = json.loads(path.read_text())
    return data


def version(source: Path | None = None) -> str:
    """The Pyodide version in `source`: its npm `package.json`, else the lock file's, else
    `"unknown"` (a folder copied from a Pyodide release may have neither)."""
    source = source or PYODIDE_DIR
    package = source / "package.json"
    if package.is_file():
        return str(json.loads(package.read_text())["version"])
    info = lock(source).get("info")
    return str(info.get("version", "unknown")) if isinstance(info, dict) else "unknown"


def page_wheel(name: str, cache: Path, source: Path | None = None) -> Path:
    """The wheel of a pure-Python dependency at the version the Pyodide lock file pins, from
    `cache` or else downloaded once from PyPI with pip. (PyPI's file is not byte-equal to the
    one Pyodide's own build ships, so its sha256 is the bundle's own, in the manifest.)"""
    data = lock(source)
    packages, info = data["packages"], data.get("info")
    assert isinstance(packages, dict)
    entry = packages[name]
    python = str(info.get("python", "3.14")) if isinstance(info, dict) else "3.14"
    file_name = str(entry["file_name"])
    path = cache / file_name
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                 "--only-binary=:all:", "--python-version", ".".join(python.split(".")[:2]),
                 "-d", tmp, f"{name}=={entry['version']}"], capture_output=True, text=True)
            got = Path(tmp) / file_name
            if run.returncode != 0 or not got.exists():
                raise DownloadError(f"wasm: could not fetch {file_name} from PyPI for the page "
                                   f"({run.stderr.strip()[-400:]}); put the file in {cache}")
            os.replace(got, path)
    return path


__all__ = ["PYODIDE_DIR", "RUNTIME_FILES", "lock", "page_wheel", "runtime_files", "version"]
