"""wasm/wheels.js under Node with the real Pyodide: the files it makes in Pyodide's MEMFS
site-packages (nodes given the wheel's bytes, no stream per file) are files like any other to
Python (read, stat, appended to, written in place without touching another file's bytes; a
file there before is written over), and a Python restored from a snapshot gets them again and
imports a module that nobody imported before the snapshot."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
RUNNER = Path(__file__).with_name("wheels_pyodide_run.mjs")

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (REPO / "wasm/node_modules/pyodide").is_dir(),
    reason="no Node.js or no npm Pyodide (make setup)")


@pytest.fixture(scope="module")
def got(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    wheel = tmp_path_factory.mktemp("wheel") / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/__init__.py", "")
        z.writestr("pkg/a.py", "VALUE = 1\n")
        z.writestr("pkg/b.py", "VALUE = 2\n", compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("pkg/data.txt", "data")
        z.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
    done = subprocess.run(["node", str(RUNNER), str(REPO / "wasm"), str(wheel)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_python_reads_and_changes_the_files_like_any_other(got: dict[str, Any]) -> None:
    value, read, sizes, appended, in_place, other, listing = ast.literal_eval(got["read"])
    assert got["count"] == 5
    assert value == 1
    assert read == ["VALUE = 1\n", "VALUE = 2\n", "data", "kept"]  # data.txt written over
    assert sizes == [10, 10, 4]
    assert appended == "data+more"
    assert in_place == "VALUE = 7\n" and other == "VALUE = 2\n"
    assert listing == ["__init__.py", "a.py", "b.py", "data.txt", "old.txt"]


def test_a_restored_python_imports_what_nobody_imported_before(got: dict[str, Any]) -> None:
    assert got["restoredCount"] == 5
    assert ast.literal_eval(got["restored"]) == [True, 1, 2]
