"""The page's standard library (wasm/stdlib.py): trimmed to the modules pyrite imports, plus
Pyodide's own packages, and precompiled (wasm/bytecode.py); the whole library shipped beside it
for the rest (tests/browser/test_embed_snapshot.py imports from it in Chromium)."""

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


def test_trim_keeps_the_imported_modules_and_pyodides_packages() -> None:
    full = _zip({"json/__init__.py": b"", "json/decoder.py": b"x = 1", "json/tool.py": b"",
                 "json/data.txt": b"", "csv.py": b"", "abc.py": b"", "pyodide/ffi.py": b"",
                 "encodings/__init__.py": b"", "encodings/utf_8.py": b"",
                 "encodings/cp1252.py": b"", "xml/dom/minidom.py": b""})
    trimmed, left = stdlib.trim(full, ["json", "json.decoder", "abc", "encodings",
                                       "encodings.utf_8"])
    # top-level names, and the modules of kept packages that nobody imported
    assert left == ["csv", "encodings.cp1252", "json.tool", "xml"]
    kept = zipfile.ZipFile(io.BytesIO(trimmed))
    assert kept.namelist() == ["json/__init__.py", "json/decoder.py", "json/data.txt",
                               "abc.py", "pyodide/ffi.py", "encodings/__init__.py",
                               "encodings/utf_8.py"]
    assert kept.read("json/decoder.py") == b"x = 1"
    assert stdlib.trim(full, ["json.decoder", "json", "abc"])[0] == \
        stdlib.trim(full, ["abc", "json", "json.decoder"])[0]
    # Pyodide's own packages stay whole; of the rest only what was imported
    assert stdlib.trim(full, [])[1] == ["abc", "csv", "encodings", "encodings.cp1252",
                                        "encodings.utf_8", "json", "xml"]


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
    assert "encodings.cp1252" in whole["modules"]  # a codec nobody imported
    page = zipfile.ZipFile(out / "pyodide" / "python_stdlib.zip")
    names = set(page.namelist())
    # what pyrite and Pyodide import, as Pyodide's bytecode (bytecode.py), every entry stored
    assert {"json/__init__.pyc", "asyncio/__init__.pyc", "pyodide/ffi/__init__.pyc",
            "zipfile/__init__.pyc", "encodings/utf_8.pyc"} <= names
    assert "json/__init__.py" not in names and "encodings/cp1252.py" not in names
    assert all(info.compress_type == zipfile.ZIP_STORED for info in page.infolist())
    assert page.read("json/__init__.pyc")[4:8] == b"\x01\x00\x00\x00"  # unchecked hash
    assert "colorsys.py" not in names and not any(n.startswith("xml/") for n in names)
    # a host's .gz copy compresses it whole: smaller than Pyodide's zip
    gz = out / "pyodide" / "python_stdlib.zip.gz"
    assert gz.stat().st_size < 0.6 * whole["size"]
    # a first visit fetches the trimmed one only
    visit = export.first_visit_files(out, manifest)
    assert "pyodide/python_stdlib.zip" in visit and whole["path"] not in visit
