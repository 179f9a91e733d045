"""wasm/restore.js under Node (restore_run.mjs gives it an in-memory Cache Storage): a repeat
visit uses the snapshot read, the imports and the WebAssembly compile that began before the
manifest arrived only where they fit the manifest that did; with a snapshot on record, the
restore itself starts ahead (a stand-in Pyodide, fake_pyodide/) and is taken only when it fits."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
RUN = Path(__file__).with_name("restore_run.mjs")
SCRIPT = REPO / "wasm" / "restore.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")


def _run(case: str) -> dict[str, Any]:
    done = subprocess.run(["node", str(RUN), SCRIPT.as_uri(), case], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    assert out["key"], out  # the key is always the arriving manifest's
    assert out["answer"] == 7 and out["restored"], out  # instantiated; the hook is gone after
    return out


def test_the_same_bundle_takes_the_early_read_and_the_early_compile() -> None:
    got = _run("same")
    assert got["compiledAhead"] and got["hooked"], got
    assert got["ownCalls"] == 0, got  # Pyodide's call did not compile the file again
    assert got["snapshot"] == [1, 2, 3] and got["snapshotReads"] == 1, got


def test_new_wheels_drop_the_early_snapshot_read() -> None:
    got = _run("newWheels")
    # the snapshot under the new key is looked for (there is none); same Pyodide: the
    # compile still serves
    assert got["snapshot"] is None and got["snapshotReads"] == 2, got
    assert got["compiledAhead"] and got["ownCalls"] == 0, got


def test_another_webassembly_file_is_compiled_by_pyodide_itself() -> None:
    got = _run("newWasm")
    assert not got["compiledAhead"] and not got["hooked"] and got["ownCalls"] == 1, got
    assert got["snapshot"] == [1, 2, 3], got


def test_a_first_visit_has_nothing_ahead() -> None:
    got = _run("none")  # no manifest kept: the normal path, one read of the snapshot's key
    assert not got["compiledAhead"] and got["ownCalls"] == 1, got
    assert got["snapshot"] == [1, 2, 3] and got["snapshotReads"] == 1, got


def test_the_restore_starts_before_the_manifest_and_is_taken_when_it_fits() -> None:
    got = _run("early-same")
    assert got["startedEarly"] and got["hookedEarly"], got
    # Pyodide's memory was sized by the record and held the stored bytes when it restored
    assert got["restoredPyodide"] == {"restored": [1, 2, 3], "heap": 3, "indexURL": got[
        "restoredPyodide"]["indexURL"], "stdout": "function"}, got
    assert got["restoredPyodide"]["indexURL"].endswith("/fake_pyodide/")
    assert got["marks"] == ["moduleMs", "snapshotReadMs"], got
    assert got["compiledAhead"] and got["ownCalls"] == 0, got


def test_an_early_restore_for_other_wheels_is_not_taken() -> None:
    got = _run("early-newWheels")
    assert got["startedEarly"] and got["restoredPyodide"] is None, got
    assert got["snapshot"] is None, got  # the new key has none: the visit boots
    # the same WebAssembly: the compile is handed to the boot's call
    assert got["compiledAhead"] and got["hooked"] and got["ownCalls"] == 0, got


def test_an_early_restore_for_another_webassembly_gives_its_hook_back() -> None:
    got = _run("early-newWasm")
    assert got["startedEarly"] and got["hookedEarly"] and got["restoredPyodide"] is None, got
    # the stand-in never instantiated: the hook was still there, and take() removed it
    assert not got["hooked"] and got["ownCalls"] == 1, got


def test_no_early_restore_without_a_stored_snapshot() -> None:
    got = _run("early-none")  # no manifest kept
    assert not got["startedEarly"] and got["restoredPyodide"] is None, got
