"""`pyrite export-web` into a folder it exported to before: only the files that export wrote
are replaced or deleted; the user's files (their own `index.html`, `my.css`, a file changed
since) are kept; an unrelated folder is refused; a failed export leaves the folder as it was."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pyrite.wasm import build, cli, export

pytestmark = pytest.mark.skipif(not (build.PYODIDE_DIR / "pyodide-lock.json").exists(),
                                reason="wasm/node_modules/pyodide missing (make setup)")

MY_PAGE = '<!doctype html><title>mine</title><script type="module" src="./pyrite.js"></script>'


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(["export-web", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def _check_bundle(out: Path, mine: set[str]) -> dict[str, object]:
    """The manifest of the working bundle in `out`: every file it lists is there as built
    (but the user's `mine`, kept in their place), and there is nothing else but `mine`."""
    manifest = json.loads((out / "manifest.json").read_text())
    listed = manifest["files"]
    for rel in export.first_visit_files(out, manifest):
        assert (out / rel).is_file(), rel
    for rel, sha in listed.items():
        if rel.removesuffix(".gz").removesuffix(".br") not in mine:
            assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == sha, rel
    on_disk = set(_tree(out))
    bundle = {rel for rel in listed if rel.removesuffix(".gz").removesuffix(".br") not in mine}
    assert on_disk - mine - {"manifest.json", "manifest.json.gz", "manifest.json.br"} == bundle
    return manifest  # type: ignore[no-any-return]


def test_export_twice_keeps_the_users_page_and_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "site"
    status, _, err = _export(capsys, "--out", str(out), "--model", "mnist")
    assert status == 0, err
    first = json.loads((out / "manifest.json").read_text())
    assert "index.html.gz" in first["files"]  # the example page's copy, the export's
    (out / "index.html").write_text(MY_PAGE)  # the user's page, in place of the example
    (out / "my.css").write_text("body { color: teal }")
    (out / "models" / "README.txt").write_text("my notes on the models")

    status, printed, err = _export(capsys, "--out", str(out), "--model", "charlm")
    assert status == 0, err
    assert "kept: your index.html" in printed
    assert (out / "index.html").read_text() == MY_PAGE
    assert (out / "my.css").read_text() == "body { color: teal }"
    assert (out / "models" / "README.txt").read_text() == "my notes on the models"
    assert not (out / "index.html.gz").exists()  # the old example's copy would hide the page
    manifest = _check_bundle(out, {"index.html", "my.css", "models/README.txt"})
    assert list(manifest["models"]) == ["charlm"]  # type: ignore[call-overload]
    # the previous export's files the new one does not have are gone
    assert not (out / first["models"]["mnist"]["path"]).exists()
    assert not (out / first["models"]["mnist"]["kernels"]["path"]).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
    assert sorted(p.name for p in out.glob(".*")) == []  # no staging folders left

    # a third export with no models: models/ keeps the user's file only, kernels/ goes
    export.export_web(out, [])
    assert sorted(p.name for p in (out / "models").iterdir()) == ["README.txt"]
    assert not (out / "kernels").exists()
    _check_bundle(out, {"index.html", "my.css", "models/README.txt"})


def test_an_unchanged_example_page_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "site"
    export.export_web(out, [])
    (out / "my.css").write_text("p {}")
    done = export.export_web(out, ["mnist"])
    assert done.kept == []
    assert "<pyrite-mnist>" in (out / "index.html").read_text()  # the new example
    _check_bundle(out, {"my.css"})
    assert done.files == len(_tree(out)) - 1  # the bundle's files, not the user's


def test_an_unrelated_folder_is_refused(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "thesis.tex").write_text("chapter 1")
    (out / "figures").mkdir()
    status, _, err = _export(capsys, "--out", str(out), "--model", "mnist")
    assert status == 2
    assert err == (f"python -m pyrite.wasm export-web: error: {out} is not empty and holds no "
                   "web bundle (no pyrite manifest.json): it holds files pyrite did not write "
                   "(figures/, thesis.tex); "
                   "choose an empty or new folder, or a previous export\n")
    assert _tree(out) == {"thesis.tex": b"chapter 1"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis"]


def test_a_bundle_file_the_user_changed_is_not_written_over(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "site"
    export.export_web(out, [])
    (out / "pyrite.js").write_text("// my patched loader")
    before = _tree(out)
    status, _, err = _export(capsys, "--out", str(out))
    assert status == 2
    assert "pyrite.js" in err and "writes over none of them" in err
    assert err.count("\n") == 1
    assert _tree(out) == before  # nothing moved, nothing deleted
    assert sorted(p.name for p in out.glob(".*")) == []


def test_a_failed_export_leaves_the_folder_as_it_was(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "site"
    export.export_web(out, [])
    (out / "my.css").write_text("p {}")
    before = _tree(out)
    replace = os.replace
    moved_in: list[str] = []

    def failing(source: object, target: object) -> None:
        rel = Path(str(target)).relative_to(out).as_posix()
        if not rel.startswith("."):  # into the folder, not into a staging one
            if rel.startswith("models/"):  # halfway through moving the new bundle in
                raise OSError(28, "No space left on device")
            moved_in.append(rel)
        replace(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(export.os, "replace", failing)
    with pytest.raises(OSError, match="No space left"):
        export.export_web(out, ["mnist"])
    monkeypatch.undo()
    assert any(rel.startswith("kernels/") for rel in moved_in)  # the undo had work to do
    assert _tree(out) == before
    assert sorted(p.name for p in out.glob(".*")) == []
    assert not (out / "models").exists()


def test_an_export_made_before_the_file_list_is_replaced(tmp_path: Path) -> None:
    """An older export's manifest has no "files": its listed files, scripts and copies are
    known by name and hash; the rest is the user's."""
    out = tmp_path / "site"
    export.export_web(out, ["mnist"])
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["files"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "manifest.json.gz").unlink()
    (out / "my.css").write_text("p {}")
    done = export.export_web(out, [])
    assert done.kept == []  # the example page, as pyrite writes it, was the export's
    assert not (out / "models").exists() and not (out / "kernels").exists()
    _check_bundle(out, {"my.css"})


def test_build_into_a_named_folder_takes_the_same_care(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m pyrite.wasm build --out DIR`: a folder the user names is not replaced whole
    (only `pyrite serve`'s own folder, the default, is)."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("chapter 1")
    assert cli.main(["build", "--out", str(mine)]) == 2
    assert "holds files pyrite did not write (thesis.tex)" in capsys.readouterr().err
    assert _tree(mine) == {"thesis.tex": b"chapter 1"}
    out = tmp_path / "web"
    assert cli.main(["build", "--out", str(out)]) == 0
    (out / "my.css").write_text("p {}")
    assert cli.main(["build", "--out", str(out)]) == 0
    assert (out / "my.css").read_text() == "p {}"
    _check_bundle(out, {"my.css"})
