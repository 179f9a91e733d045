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
    ("kernels/mnist.0123456789abcdef.json", True),
    ("kernels/mnist.0123456789abcdef.json.gz", True),
    ("wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl.br", True),
    ("pyrite.js", False),
    ("pyrite.js.gz", False),
    ("index.html", False),
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


@pytest.mark.parametrize("path", ["pyodide/pyodide.asm.wasm", "pyodide/pyodide.asm.wasm.gz",
                                  "pyodide/pyodide-lock.json"])
def test_pyodide_is_cached_a_day(path: str) -> None:
    assert bundle.cache_control(path) == "public, max-age=86400"


def test_default_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYRITE_WEB_DIR", str(tmp_path / "web"))
    assert bundle.default_dir() == tmp_path / "web"
    monkeypatch.delenv("PYRITE_WEB_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert bundle.default_dir() == Path.home() / ".cache" / "pyrite" / "web"


def test_build_calls_the_wasm_builder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[Path, Path | None]] = []

    def build(out: Path, pyodide_dir: Path | None = None, live: bool = False
              ) -> dict[str, object]:
        assert live  # other servers may be serving the folder
        calls.append((out, pyodide_dir))
        (out / "pyodide").mkdir(parents=True)
        (out / "pyrite.js").write_text("// built\n")
        (out / "pyodide" / "pyodide.mjs").write_text("// pyodide\n")
        return {}

    monkeypatch.setattr(bundle.wasm_build, "build", build)
    monkeypatch.setenv("PYRITE_WEB_DIR", str(tmp_path / "cache" / "web"))
    assert bundle.build() == tmp_path / "cache" / "web"
    assert bundle.build(tmp_path / "elsewhere", tmp_path / "npm") == tmp_path / "elsewhere"
    assert calls == [(tmp_path / "cache" / "web", None),
                     (tmp_path / "elsewhere", tmp_path / "npm")]


def test_create_app_without_a_folder_builds_one(monkeypatch: pytest.MonkeyPatch,
                                                web_dir: Path, npm_pyodide: Path) -> None:
    built: list[Path] = []

    def build(pyodide_dir: Path) -> Path:
        built.append(pyodide_dir)
        return web_dir

    monkeypatch.setattr(bundle, "build", build)
    create_app(pyodide_dir=npm_pyodide)
    assert built == [npm_pyodide]  # the bundle copies the Pyodide it is given


def test_build_failure_is_a_setup_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def build(out: Path, pyodide_dir: Path | None = None, live: bool = False
              ) -> dict[str, object]:
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
    assert web.is_symlink()  # a link to a version: rebuilt atomically for other servers
    manifest = json.loads((web / "manifest.json").read_text())
    files = [w["path"] for w in manifest["wheels"]] + [
        m["path"] for m in manifest["models"].values()] + [
        m["kernels"]["path"] for m in manifest["models"].values()]
    assert files and all(bundle.cache_control(f).endswith("immutable") for f in files)
    runtime = [f["path"] for f in manifest["pyodide"]["files"]]
    assert runtime and all(bundle.cache_control(f) == bundle.PYODIDE_CACHE for f in runtime)


def test_check(tmp_path: Path) -> None:
    with pytest.raises(ServeSetupError, match="not a web bundle"):
        bundle.check(tmp_path)
    (tmp_path / "pyrite.js").write_text("")
    with pytest.raises(ServeSetupError, match="no pyodide/pyodide.mjs"):
        bundle.check(tmp_path)
    (tmp_path / "pyodide").mkdir()
    (tmp_path / "pyodide" / "pyodide.mjs").write_text("")
    assert bundle.check(tmp_path) == tmp_path
