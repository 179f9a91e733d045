"""A bundle exported with `--snapshot` (wasm/snapshot.py): a first visit restores the
snapshot made under Node instead of booting Python, and its GPU readbacks (JSPI) work; a
repeat visit restores the copy the first kept; a snapshot that does not fit the manifest, or
that Pyodide refuses, is one console warning and Python boots as without one."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import harness, test_embeds
from .test_embeds import HOST, SUB, StaticServer, export

new_page = test_embeds.new_page  # the same fixture: fresh contexts recording console errors

pytestmark = [pytest.mark.skipif(harness.unavailable() is not None,
                                 reason=str(harness.unavailable())),
              pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")]
_PIXELS = "Array.from({length: 784}, (_, i) => (i % 28 > 12 && i % 28 < 16 ? 255 : 0))"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The bundle exported with --snapshot at /tools/pyrite/, a host page at /."""
    root = tmp_path_factory.mktemp("site")
    done = export(root / SUB, "mnist", "--snapshot")
    assert done.returncode == 0, done.stderr
    (root / "index.html").write_text(HOST.format(bundle=f"/{SUB}/", before=""))
    server = StaticServer(root)
    yield root, server.url
    server.stop()


def _visit(page: Any, url: str) -> tuple[dict[str, Any], list[str]]:
    """Load the host page; (the load's timings, the console's warnings)."""
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    page.goto(url)
    assert page.evaluate("window.computed") == [[1.5], [6.0]]  # webgpu, read back via JSPI
    timings = page.evaluate("pyrite.load().then((got) => got.timings)")
    return timings, warnings


def test_a_first_visit_restores_the_shipped_snapshot(site: tuple[Path, str],
                                                     new_page: Callable[..., Any]) -> None:
    _, url = site
    page = new_page()
    requested: list[str] = []
    page.on("requestfinished", lambda r: requested.append(r.url))
    timings, warnings = _visit(page, f"{url}/")
    assert timings["snapshot"] is True and timings["snapshotFrom"] == "bundle", (timings,
                                                                                 warnings)
    assert any("/snapshot/python." in u for u in requested)
    assert warnings == [] and page.errors == []
    # pyrite was imported in Node; the model still loads and predicts on the page's GPU
    page.evaluate("pyrite.loadModel('mnist')")
    got = page.evaluate(f"pyrite.predict('mnist', {{pixels: {_PIXELS}}})")
    assert got["label"] == 1 and got["backend"] == "webgpu (page)"
    # the wheels were written into site-packages by wheels.js, where the Node run put them
    # too (a module the snapshot had not imported is found beside the ones it had)
    assert timings["wheelFiles"] > 300, timings
    where = page.evaluate("pyrite.run('import pyrite, pyrite.wasm.stdlib_fallback as s\\n"
                          "[pyrite.__file__, s.__file__]')")
    # (as bytecode: a first visit imports them, build._bytecode_wheel)
    assert [p.split("/site-packages/")[1] for p in where] == ["pyrite/__init__.pyc",
                                                              "pyrite/wasm/stdlib_fallback.pyc"]
    # the bundle's standard library is trimmed; the rest comes from the whole one on demand
    where = page.evaluate("pyrite.run('import colorsys\\n"
                          "colorsys.rgb_to_hsv(1.0, 0.0, 0.0), colorsys.__file__')")
    assert where == [[0.0, 1.0, 1.0], "/lib/python_stdlib_full.zip/colorsys.py"]
    # and so does a module of a package it kept (a codec nobody had used); the ones it kept
    # are Pyodide's bytecode (wasm/bytecode.py)
    where = page.evaluate("pyrite.run('import encodings.cp1252 as c, json\\n"
                          "\"\u20ac\".encode(\"cp1252\").hex(), c.__file__, json.__file__')")
    assert where[0] == "80" and where[1] == "/lib/python_stdlib_full.zip/encodings/cp1252.py"
    assert where[2].endswith("/json/__init__.pyc"), where
    # a repeat visit restores the copy the first one kept, and downloads no snapshot
    requested.clear()
    page.reload()
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    timings = page.evaluate("pyrite.load().then((got) => got.timings)")
    assert timings["snapshotFrom"] == "cache", timings
    assert not any("/snapshot/" in u for u in requested)


def _not_fitting(manifest: dict[str, Any], bundle: Path) -> None:
    manifest["snapshot"]["for"]["wheels"][0] = "0" * 64  # made for another wheel


def _not_a_snapshot(manifest: dict[str, Any], bundle: Path) -> None:
    # the right hash for wrong bytes: only Pyodide can tell
    data = gzip.compress(b"not a Python snapshot " * 64)
    (bundle / manifest["snapshot"]["path"]).write_bytes(data)
    manifest["snapshot"].update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))


@pytest.mark.parametrize(("spoil", "said"), [
    (_not_fitting, "made for other files than its manifest names"),
    (_not_a_snapshot, "the bundle's Python snapshot was refused, booting instead"),
])
def test_a_snapshot_that_does_not_fit_boots_with_a_warning(
        site: tuple[Path, str], new_page: Callable[..., Any],
        spoil: Callable[[dict[str, Any], Path], None], said: str) -> None:
    root, url = site
    name = spoil.__name__.strip("_")
    bundle = root / name
    shutil.copytree(root / SUB, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    spoil(manifest, bundle)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    (bundle / "manifest.json.gz").unlink(missing_ok=True)
    (root / f"{name}.html").write_text(HOST.format(bundle=f"/{name}/", before=""))
    page = new_page()
    timings, warnings = _visit(page, f"{url}/{name}.html")
    assert timings["snapshot"] is False, timings
    assert any(said in w for w in warnings), warnings
    page.wait_for_selector("#script[data-state=done]")
    assert "device: webgpu" in page.evaluate(
        "document.getElementById('script').shadowRoot.textContent")
