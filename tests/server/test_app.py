"""The app as a whole (server/app.py): setup checks, JSON errors, headers on every response."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pyrite.server import ServeSetupError, create_app
from pyrite.server.folders import default_pyodide_dir


def test_missing_pyodide_is_a_clear_setup_error(web_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match=r"run `make setup`, or `npm ci` in wasm/"):
        create_app(web_dir, pyodide_dir=tmp_path / "nowhere")


def test_a_folder_without_pyrite_js_is_not_a_bundle(pyodide_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match=r"is not a web bundle \(no pyrite.js\)"):
        create_app(tmp_path, pyodide_dir=pyodide_dir)


def test_missing_packages_folder_is_a_setup_error(web_dir: Path, pyodide_dir: Path,
                                                  tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match="--pyodide-packages .*: no such folder"):
        create_app(web_dir, pyodide_dir=pyodide_dir, pyodide_packages=str(tmp_path / "none"))


def test_bad_max_body_is_a_setup_error(web_dir: Path, pyodide_dir: Path) -> None:
    with pytest.raises(ServeSetupError, match="positive number of bytes"):
        create_app(web_dir, pyodide_dir=pyodide_dir, max_body=0)


def test_default_pyodide_dir_is_the_npm_package() -> None:
    assert default_pyodide_dir().parts[-3:] == ("wasm", "node_modules", "pyodide")


def test_the_real_pyodide(web_dir: Path) -> None:
    if not (default_pyodide_dir() / "pyodide.mjs").is_file():
        pytest.skip("wasm/node_modules/pyodide missing (make setup installs it)")
    with TestClient(create_app(web_dir)) as c:
        wasm = c.head("/pyodide/pyodide.asm.wasm")
        assert wasm.status_code == 200
        assert wasm.headers["content-type"] == "application/wasm"
        assert c.get("/pyodide/pyodide.mjs").headers["content-type"].startswith(
            "text/javascript")
        assert c.get("/pyodide/package.json").json()["name"] == "pyodide"


@pytest.mark.parametrize("url", ["/nope", "/api/nope", "/pyodide/nope.js", "/wheels/x/y.whl",
                                 "/models/nope.bin"])
def test_unknown_paths_are_json_404s(client: TestClient, url: str) -> None:
    r = client.get(url)
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/json"
    assert r.json()["error"].startswith(f"nothing at {url}")


@pytest.mark.parametrize("url", ["/", "/healthz", "/pyrite.js", "/nope"])
def test_every_response_says_nosniff(client: TestClient, url: str) -> None:
    assert client.get(url).headers["x-content-type-options"] == "nosniff"


def test_bundle_files_are_served(client: TestClient, web_dir: Path) -> None:
    for name in ["pyrite.js", "worker.js", "manifest.json",
                 "wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl",
                 "models/mnist.0123456789abcdef.bin"]:
        r = client.get("/" + name)
        assert r.status_code == 200, name
        assert r.content == (web_dir / name).read_bytes()
