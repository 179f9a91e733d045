"""The web bundle as the server sees it (server/bundle.py): caching, location, building."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyrite.server import ServeSetupError, bundle, create_app
from pyrite.server.folders import default_pyodide_dir


@pytest.mark.parametrize(("path", "immutable"), [
    ("wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl", True),
    ("models/mnist.0123456789abcdef.bin", True),
    ("pyrite.js", False),
    ("worker.js", False),
    ("manifest.json", False),
    ("wheels/0123456789ABCDEF/x.whl", False),  # hashes are lowercase hex
    ("wheels/0123456789abcde/x.whl", False),  # 15 digits
    ("wheels/0123456789abcdef/sub/x.whl", False),
    ("models/mnist.bin", False),
    ("x/models/mnist.0123456789abcdef.bin", False),
])
def test_cache_control(path: str, immutable: bool) -> None:
    expected = "public, max-age=31536000, immutable" if immutable else "no-cache"
    assert bundle.cache_control(path) == expected


def test_default_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYRITE_WEB_DIR", str(tmp_path / "web"))
    assert bundle.default_dir() == tmp_path / "web"
    monkeypatch.delenv("PYRITE_WEB_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert bundle.default_dir() == Path.home() / ".cache" / "pyrite" / "web"


def test_build_calls_the_wasm_builder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[Path] = []

    def build(out: Path) -> dict[str, object]:
        calls.append(out)
        out.mkdir(parents=True)
        (out / "pyrite.js").write_text("// built\n")
        return {}

    monkeypatch.setattr(bundle.wasm_build, "build", build)
    monkeypatch.setenv("PYRITE_WEB_DIR", str(tmp_path / "cache" / "web"))
    assert bundle.build() == tmp_path / "cache" / "web"
    assert bundle.build(tmp_path / "elsewhere") == tmp_path / "elsewhere"
    assert calls == [tmp_path / "cache" / "web", tmp_path / "elsewhere"]


def test_create_app_without_a_folder_builds_one(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path, web_dir: Path,
                                                pyodide_dir: Path) -> None:
    built: list[Path] = []
    monkeypatch.setattr(bundle, "build", lambda: built.append(web_dir) or web_dir)
    create_app(pyodide_dir=pyodide_dir)
    assert built == [web_dir]


def test_build_failure_is_a_setup_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def build(out: Path) -> dict[str, object]:
        raise FileNotFoundError("wasm: pyodide-lock.json is missing: install the pinned Pyodide")

    monkeypatch.setattr(bundle.wasm_build, "build", build)
    with pytest.raises(ServeSetupError, match="building the web bundle in .* failed: "
                       "FileNotFoundError: wasm: pyodide-lock.json is missing: .* --web DIR"):
        bundle.build(tmp_path)


def test_the_real_builder(tmp_path: Path) -> None:
    if not (default_pyodide_dir() / "pyodide-lock.json").is_file():
        pytest.skip("wasm/node_modules/pyodide missing (make setup installs it)")
    if not any(bundle.wasm_build.default_cache().glob("micropip-*.whl")):
        pytest.skip("micropip's wheel is not cached (the builder fetches it once, online)")
    web = bundle.build(tmp_path / "web")
    manifest = json.loads((web / "manifest.json").read_text())
    files = [w["path"] for w in manifest["wheels"]] + [
        m["path"] for m in manifest["models"].values()]
    assert files and all(bundle.cache_control(f).endswith("immutable") for f in files)


def test_check(tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match="not a web bundle"):
        bundle.check(tmp_path)
    (tmp_path / "pyrite.js").write_text("")
    assert bundle.check(tmp_path) == tmp_path
