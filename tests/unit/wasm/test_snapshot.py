"""`pyrite export-web --snapshot` (wasm/snapshot.py, snapshot.mjs): the bundle ships a Python
memory snapshot made under Node, gzipped, keyed by the manifest's Pyodide version and wheel
hashes, counted in the first visit's bytes; without Node the export says so and writes
nothing. (tests/browser/test_embeds.py restores it in Chromium, and refuses a mismatched one.)"""

from __future__ import annotations

import gzip
import json
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyrite.wasm import build, cli, export, snapshot

pytestmark = [
    pytest.mark.skipif(not (build.PYODIDE_DIR / "pyodide-lock.json").exists(),
                       reason="wasm/node_modules/pyodide missing (make setup)"),
    pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js (make setup)"),
]
_MAGIC = 1886286592  # the first word of a Pyodide snapshot (its makeSnapshot)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, object],
                                                                          str]]:
    out = tmp_path_factory.mktemp("snap") / "site"
    status = cli.main(["export-web", "--out", str(out), "--model", "mnist", "--snapshot"])
    assert status == 0
    yield out, json.loads((out / "manifest.json").read_text()), str(out)


def test_the_snapshot_is_shipped_gzipped_and_keyed(
        exported: tuple[Path, dict[str, object], str]) -> None:
    out, manifest, _ = exported
    entry = manifest["snapshot"]
    assert isinstance(entry, dict)
    path = out / entry["path"]
    assert entry["path"].startswith("snapshot/python.") and path.name.endswith(".snapshot.gz")
    packed = path.read_bytes()
    assert packed[:2] == b"\x1f\x8b" and len(packed) == entry["size"]
    raw = gzip.decompress(packed)
    assert len(raw) == entry["memory"] and len(packed) < len(raw) / 2  # gzip saves most
    magic, header = struct.unpack_from("<II", raw)
    assert magic == _MAGIC and header < len(raw)
    pyodide, wheels = manifest["pyodide"], manifest["wheels"]
    assert isinstance(pyodide, dict) and isinstance(wheels, list)
    assert entry["for"] == {"pyodide": pyodide["version"], "wheels": [w["sha256"] for w in wheels]}
    assert snapshot.fits(entry["for"], pyodide["version"], [w["sha256"] for w in wheels])
    assert entry["trampoline"] > 0
    # a first visit downloads it: the printed sizes count it, and no .gz of a .gz is written
    assert entry["path"] in export.first_visit_files(out, manifest)
    assert not (out / (entry["path"] + ".gz")).exists()
    assert manifest["files"][entry["path"]] == entry["sha256"]  # type: ignore[index]


def test_without_the_option_there_is_no_snapshot(tmp_path: Path) -> None:
    export.export_web(tmp_path / "site", [])
    assert "snapshot" not in json.loads((tmp_path / "site" / "manifest.json").read_text())
    assert not (tmp_path / "site" / "snapshot").exists()


def test_a_rebuild_reuses_the_kept_snapshot(exported: tuple[Path, dict[str, object], str],
                                            tmp_path: Path) -> None:
    _, manifest, _ = exported
    again = tmp_path / "again"
    export.export_web(again, ["mnist"], with_snapshot=True)
    second = json.loads((again / "manifest.json").read_text())
    assert second["snapshot"] == manifest["snapshot"]  # the same bytes: taken from the cache


def test_without_node_the_export_says_so_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(snapshot, "_cache_key", lambda *_: "never-made")
    monkeypatch.setattr(snapshot.shutil, "which", lambda _: None)
    status = cli.main(["export-web", "--out", str(tmp_path / "site"), "--snapshot"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Node.js" in err and "without --snapshot" in err
    assert list(tmp_path.iterdir()) == []
