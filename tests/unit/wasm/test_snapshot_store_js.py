"""wasm/snapshot_store.js under Node (snapshot_store_run.mjs gives it an in-memory IndexedDB):
the next visit's Python snapshot is written memory first, record last; found again; refused
when torn (no record, memory cut short, another format); replaced by a new one; not kept when
the quota refuses it; and a new export's snapshot prunes the old one of the same bundle only."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
RUN = Path(__file__).with_name("snapshot_store_run.mjs")
SCRIPT = REPO / "wasm" / "snapshot_store.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")


@pytest.fixture(scope="module")
def got() -> dict[str, Any]:
    done = subprocess.run(["node", str(RUN), SCRIPT.as_uri()], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_stored_memory_first_then_record_and_found_again(got: dict[str, Any]) -> None:
    assert got["available"] and got["before"] is None
    assert got["stored"] is True
    assert got["order"] == [["delete", "record"], ["put", "memory"], ["put", "record"]], got
    assert got["found"] == [1, 2, 3, 4] and got["memoryIsBlob"], got


def test_a_torn_snapshot_is_not_restored(got: dict[str, Any]) -> None:
    assert got["noRecord"] is None  # closed before the record was written
    assert got["cutShort"].startswith("rejected: the stored Python snapshot is 2 bytes, not 4")
    assert got["warned"]
    assert got["otherFormat"] is None


def test_a_new_snapshot_replaces_the_old(got: dict[str, Any]) -> None:
    assert got["restored"] is True and got["replaced"] == [5, 6, 7]


def test_a_quota_error_keeps_nothing(got: dict[str, Any]) -> None:
    assert got["quotaStored"] is False
    assert got["afterQuota"] is None and got["keysAfterQuota"] == 0, got


def test_a_new_export_prunes_the_old_snapshot_of_its_bundle_only(got: dict[str, Any]) -> None:
    assert got["pruned"] == 2  # the old record and memory
    assert got["oldAfterPrune"] is None and got["newAfterPrune"] == [2]
    assert got["otherAfterPrune"] == [3]  # another bundle on the origin keeps its own
