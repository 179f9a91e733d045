"""`pyrite export-web` (wasm/export.py, wasm/cli.py): the chosen models only, a user's folder
never replaced, a previous export's files replaced (test_export_keeps_user_files.py for the
files a user adds), and printed sizes that are the real ones."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyrite import cli as pyrite_cli
from pyrite.wasm import build, cli, export

pytestmark = pytest.mark.skipif(not (build.PYODIDE_DIR / "pyodide-lock.json").exists(),
                                reason="wasm/node_modules/pyodide missing (make setup)")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(["export-web", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_export_writes_the_bundle_and_prints_its_real_sizes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "site"
    status, printed, err = _export(capsys, "--out", str(out), "--model", "mnist")
    assert status == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["models"]) == ["mnist"]
    files = [p for p in out.rglob("*") if p.is_file()]
    numbers = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) bytes", printed)]
    assert numbers[0] == sum(p.stat().st_size for p in files)  # on disk
    assert f"in {len(files)} files" in printed
    visit = export.first_visit_files(out, manifest)
    assert {"manifest.json", "pyrite.js", "worker.js", "pyodide/pyodide.asm.wasm",
            manifest["models"]["mnist"]["path"]} <= set(visit)
    plain = sum((out / f).stat().st_size for f in visit)

    def sent(f: str, *suffixes: str) -> int:  # what a host serving these copies sends
        return next((out / (f + s)).stat().st_size for s in (*suffixes, "")
                    if (out / (f + s)).exists())
    packed = sum(sent(f, ".gz") for f in visit)
    brotli = sum(sent(f, ".br", ".gz") for f in visit)
    if any((out / (f + ".br")).exists() for f in visit):  # brotli is installed
        assert numbers[1:] == [packed, brotli, plain]
        assert brotli < packed
    else:
        assert numbers[1:] == [packed, plain] and "pip install brotli" in printed
    assert packed < 0.7 * plain  # the WebAssembly and JavaScript compress well
    assert '<script type="module" src="./pyrite.js"></script>' in printed
    assert "display(x @ x)" in printed and "<pyrite-mnist></pyrite-mnist>" in printed
    # the optional preload lines: pyrite.js and the modules it imports, relative like it
    assert ('<link rel="modulepreload" href="./pyrite.js">\n'
            '<link rel="modulepreload" href="./elements.js">\n'
            '<link rel="modulepreload" href="./mnist-input.js">') in printed


def test_base_url_makes_the_snippet_absolute(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    status, printed, _ = _export(capsys, "--out", str(tmp_path / "site"), "--base-url",
                                 "https://cdn.example.org/pyrite")
    assert status == 0
    assert 'src="https://cdn.example.org/pyrite/pyrite.js"' in printed
    assert '<link rel="modulepreload" href="https://cdn.example.org/pyrite/elements.js">' \
        in printed
    assert "--allow-origin" in printed  # the cross-origin advice
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'src="./pyrite.js"' in index and "cdn.example.org" not in index  # stays relative


def test_only_the_chosen_models_are_shipped(tmp_path: Path) -> None:
    done = export.export_web(tmp_path / "site", [])
    assert done.models == []
    assert json.loads((tmp_path / "site" / "manifest.json").read_text())["models"] == {}
    assert not (tmp_path / "site" / "models").exists()
    assert not (tmp_path / "site" / "kernels").exists()


def test_an_unknown_model_is_refused_before_writing(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    status, printed, err = _export(capsys, "--out", str(tmp_path / "site"), "--model", "nope")
    assert status == 2
    assert err.strip() == ("python -m pyrite.wasm export-web: error: unknown model 'nope'; "
                           "the known models are: charlm, mnist, squeezenet")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("contents", [
    {"notes.txt": b"my notes"},
    {"manifest.json": b'{"name": "My PWA", "start_url": "/"}'},  # not a bundle's manifest
    {"manifest.json": b"\xff not json"},
])
def test_a_foreign_folder_is_left_untouched(tmp_path: Path, contents: dict[str, bytes],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine"
    for name, data in contents.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    status, _, err = _export(capsys, "--out", str(out))
    assert status == 2
    assert "is not empty and holds no web bundle" in err
    assert _tree(out) == contents
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_a_file_is_not_a_target(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(export.ExportError, match="exists and is not a folder"):
        export.export_web(tmp_path / "file")


def test_a_previous_export_is_replaced_and_added_files_kept(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()  # an empty folder is a fine target
    export.export_web(out, [])
    (out / "notes.txt").write_text("added after the export")  # not the export's: kept
    first = _tree(out)
    export.export_web(out, ["mnist"])
    assert (out / "notes.txt").read_text() == "added after the export"
    assert "manifest.json" in first and any(f.startswith("models/") for f in _tree(out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no temporary leftovers
    assert sorted(p.name for p in out.glob(".*")) == []


def test_a_symlinked_target_keeps_its_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    export.export_web(tmp_path / "link", [])
    assert (tmp_path / "link").is_symlink()
    assert (tmp_path / "real" / "pyrite.js").is_file()


def test_export_web_joins_the_pyrite_command(tmp_path: Path) -> None:
    args = pyrite_cli.build_parser().parse_args(
        ["export-web", "--out", str(tmp_path), "--model", "mnist", "--model", "mnist",
         "--base-url", "https://x.example/"])
    assert args.run is cli.run_export
    assert args.models == ["mnist", "mnist"] and args.base_url == "https://x.example/"
    run = subprocess.run([sys.executable, "-m", "pyrite.wasm", "export-web", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "--base-url URL" in run.stdout


@pytest.mark.parametrize("name", ["build", "cli", "compress", "example", "export",
                                  "pyodide_dist"])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"pyrite.wasm.{name}")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


#: what a first visit of the MNIST bundle may transfer from a host serving the .gz copies: the
#: target of issue 24; measured at 6,953,588 bytes when set (Pyodide 314.0.7, its standard
#: library trimmed, pyrite's wheel 0.65 MB). A bigger number means the bundle grew: trim it.
FIRST_VISIT_GZ_BUDGET = 7_000_000
#: the same from a host that also serves the .br copies (brotli installed at export time):
#: measured at 5,981,002 bytes when set (the .gz bundle then 6,949,161)
FIRST_VISIT_BR_BUDGET = 6_100_000


@pytest.mark.skipif(shutil.which("node") is None,
                    reason="no Node.js: the standard library is not trimmed without it")
def test_a_first_visit_stays_within_its_byte_budget(tmp_path: Path) -> None:
    done = export.export_web(tmp_path / "site", ["mnist"])
    assert done.first_visit_gz_bytes <= FIRST_VISIT_GZ_BUDGET, (
        f"a first visit now transfers {done.first_visit_gz_bytes:,} bytes from a gzip host, "
        f"over the budget of {FIRST_VISIT_GZ_BUDGET:,}")
    if importlib.util.find_spec("brotli") is not None:  # the .br copies: pyrite[web]
        assert done.first_visit_br_bytes <= FIRST_VISIT_BR_BUDGET, (
            f"a first visit now transfers {done.first_visit_br_bytes:,} bytes from a host "
            f"serving the .br copies, over the budget of {FIRST_VISIT_BR_BUDGET:,}")
