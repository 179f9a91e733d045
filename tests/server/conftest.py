"""Fixtures for the server tests: a fake web bundle, Pyodide folder and demo page, built in a
temporary directory so the tests never depend on a build or `npm ci`, and a TestClient on them.

Layout under `tmp_path`: `secret.txt` (outside every served folder: traversal tests try to
reach it), `web/` (the bundle, with its Pyodide in `web/pyodide/` and a precompressed
`pyrite.js.gz`), `page/` (the mnist demo's page folder).
"""

from __future__ import annotations

import gzip
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning

from pyrite.server import create_app

with warnings.catch_warnings():
    # starlette 1.x's TestClient prefers the httpx2 package; the dev extra installs httpx
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`",
                            StarletteDeprecationWarning)
    from starlette.testclient import TestClient

HASH = "0123456789abcdef"
WHEEL = f"wheels/{HASH}/pyrite-0.1.0-py3-none-any.whl"
RECORD = f"models/mnist.{HASH}.bin"
KERNELS = f"kernels/mnist.{HASH}.json"
PYRITE_JS = "export async function load() {}\n" * 40  # long enough to compress well
SECRET = "the secret outside every served folder"


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file beside the served folders, never to be served."""
    return _write(tmp_path / "secret.txt", SECRET)


@pytest.fixture
def web_dir(tmp_path: Path) -> Path:
    """A fake web bundle with the layout pyrite.wasm.build writes (its Pyodide included)."""
    web = tmp_path / "web"
    _write(web / "pyrite.js", PYRITE_JS)
    _write(web / "pyrite.js.gz", gzip.compress(PYRITE_JS.encode(), mtime=0))
    _write(web / "worker.js", "self.onmessage = () => {};\n")
    _write(web / "manifest.json", '{"files": {}}\n')
    _write(web / "index.html", "<!doctype html><title>example</title>\n")
    _write(web / WHEEL, b"PK\x03\x04 fake wheel")
    _write(web / RECORD, b"\x00\x01 fake record")
    _write(web / KERNELS, '[{"entry": "main", "source": "@compute"}]\n')
    _pyodide(web / "pyodide")
    return web


def _pyodide(pyodide: Path) -> Path:
    _write(pyodide / "pyodide.mjs", "export function loadPyodide() {}\n")
    _write(pyodide / "pyodide.asm.mjs", "// emscripten glue\n")
    _write(pyodide / "pyodide.asm.wasm", b"\x00asm\x01\x00\x00\x00")
    _write(pyodide / "pyodide-lock.json", '{"packages": {}}\n')
    _write(pyodide / "python_stdlib.zip", b"PK\x05\x06" + b"\x00" * 18)
    return pyodide


@pytest.fixture
def pyodide_dir(web_dir: Path) -> Path:
    """The fake bundle's Pyodide runtime folder (the files a page loads)."""
    return web_dir / "pyodide"


@pytest.fixture
def npm_pyodide(tmp_path: Path) -> Path:
    """A fake Pyodide runtime folder outside the bundle, as the npm package is."""
    npm = _pyodide(tmp_path / "npm-pyodide")
    _write(npm / "package.json", '{"name": "pyodide", "version": "0.0.1"}\n')
    _write(npm / "pyodide.d.ts", "export {};\n")  # the package has more than a page loads
    return npm


@pytest.fixture
def page_dir(tmp_path: Path) -> Path:
    """A fake mnist demo page folder."""
    page = tmp_path / "page"
    _write(page / "index.html", "<!doctype html><title>mnist</title><script src="
           '"/demos/mnist/app.js" type="module"></script>\n')
    _write(page / "app.js", "import '/pyrite.js';\n")
    _write(page / "style.css", "body { margin: 0 }\n")
    return page


@pytest.fixture
def app(web_dir: Path, page_dir: Path, secret: Path) -> Starlette:
    """The server's app over the fake folders, with a 10,000-byte body limit (an MNIST input
    takes up to 4 kB)."""
    return create_app(web_dir, demo_pages={"mnist": page_dir}, max_body=10_000)


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    """A TestClient on `app`."""
    with TestClient(app) as c:
        yield c
