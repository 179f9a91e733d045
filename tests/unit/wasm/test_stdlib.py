"""The page's standard library (wasm/stdlib.py): trimmed to the top-level modules and whole
packages pyrite imports, plus Pyodide's own; the whole library shipped beside it for the rest
(tests/browser/test_embed_snapshot.py imports from it in Chromium)."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from pyrite.wasm import build, export, stdlib

pytestmark = pytest.mark.skipif(not (build.PYODIDE_DIR / "pyodide-lock.json").exists(),
                                reason="wasm/node_modules/pyodide missing (make setup)")


def _zip(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


def test_trim_keeps_whole_packages_of_the_imported_modules() -> None:
    full = _zip({"json/__init__.py": b"", "json/tool.py": b"x = 1", "csv.py": b"",
                 "abc.py": b"", "pyodide/ffi.py": b"", "encodings/utf_8.py": b"",
                 "xml/dom/minidom.py": b""})
    trimmed, left = stdlib.trim(full, ["json.decoder", "abc"])
    assert left == ["csv", "xml"]
    kept = zipfile.ZipFile(io.BytesIO(trimmed))
    assert kept.namelist() == ["json/__init__.py", "json/tool.py", "abc.py", "pyodide/ffi.py",
                               "encodings/utf_8.py"]
    assert kept.read("json/tool.py") == b"x = 1"
    assert stdlib.trim(full, ["json.decoder", "abc"]) == stdlib.trim(full, ["abc", "json"])
    assert stdlib.trim(full, [])[1] == ["abc", "csv", "json", "xml"]


@pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js (make setup)")
def test_the_bundle_ships_the_trimmed_library_and_the_whole_one(tmp_path: Path) -> None:
    out = tmp_path / "site"
    export.export_web(out, ["mnist"])
    manifest = json.loads((out / "manifest.json").read_text())
    whole = manifest["pyodide"]["stdlib"]
    assert whole["path"] == f"pyodide/{stdlib.FULL}"
    assert "colorsys" in whole["modules"] and "json" not in whole["modules"]
    assert (out / whole["path"]).read_bytes() == (build.PYODIDE_DIR / "python_stdlib.zip")\
        .read_bytes()
    page = zipfile.ZipFile(out / "pyodide" / "python_stdlib.zip").namelist()
    assert {"json/__init__.py", "asyncio/__init__.py", "pyodide/ffi/__init__.py",
            "zipfile/__init__.py"} <= set(page)  # what pyrite and Pyodide import
    assert "colorsys.py" not in page and not any(n.startswith("xml/") for n in page)
    assert (out / "pyodide" / "python_stdlib.zip").stat().st_size < 0.6 * whole["size"]
    # a first visit fetches the trimmed one only
    visit = export.first_visit_files(out, manifest)
    assert "pyodide/python_stdlib.zip" in visit and whole["path"] not in visit
