"""The app as a whole (server/app.py): setup checks, JSON errors, headers on every response."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pyrite.server import ServeSetupError, create_app
from pyrite.server.folders import default_pyodide_dir


def test_missing_pyodide_is_a_clear_setup_error(tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match=r"run `make setup`, or `npm ci` in wasm/"):
        create_app(pyodide_dir=tmp_path / "nowhere")  # checked before building a bundle


def test_a_given_bundle_carries_its_own_pyodide(web_dir: Path, npm_pyodide: Path) -> None:
    with pytest.raises(ServeSetupError, match="a bundle given with --web carries its own"):
        create_app(web_dir, pyodide_dir=npm_pyodide)


def test_a_folder_without_pyrite_js_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match=r"is not a web bundle \(no pyrite.js\)"):
        create_app(tmp_path)


def test_a_bundle_without_pyodide_is_refused(web_dir: Path) -> None:
    shutil.rmtree(web_dir / "pyodide")
    with pytest.raises(ServeSetupError, match=r"has no pyodide/pyodide.mjs .* rebuild it"):
        create_app(web_dir)


def test_missing_packages_folder_is_a_setup_error(web_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match="--pyodide-packages .*: no such folder"):
        create_app(web_dir, pyodide_packages=str(tmp_path / "none"))


def test_bad_max_body_is_a_setup_error(web_dir: Path) -> None:
    with pytest.raises(ServeSetupError, match="positive number of bytes"):
        create_app(web_dir, max_body=0)


def test_bad_origin_is_a_setup_error(web_dir: Path) -> None:
    with pytest.raises(ServeSetupError, match="--allow-origin 'example.org': give an origin"):
        create_app(web_dir, allow_origins=["example.org"])


def test_default_pyodide_dir_is_the_npm_package() -> None:
    assert default_pyodide_dir().parts[-3:] == ("wasm", "node_modules", "pyodide")


def test_pyodide_is_served_from_the_bundle(client: TestClient, web_dir: Path) -> None:
    wasm = client.head("/pyodide/pyodide.asm.wasm")
    assert wasm.status_code == 200
    assert wasm.headers["content-type"] == "application/wasm"
    assert client.get("/pyodide/pyodide.mjs").content == (
        web_dir / "pyodide" / "pyodide.mjs").read_bytes()
    assert client.get("/web/pyodide/pyodide.mjs").status_code == 200
    assert client.get("/pyodide/package.json").status_code == 404  # not a page's file


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
