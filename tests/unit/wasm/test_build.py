"""The web bundle build: what the page's wheel holds, reproducible bytes, a manifest whose
hashes match the files, and the kernel lists made without a GPU."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

import pyrite
from pyrite.wasm import build, compress
from pyrite.wasm.worker_bundle import bundle as bundle_worker
from pyrite.webgpu import WebGpu
from pyrite.webgpu.recorder import RecordingRuntime


def test_page_wheel_holds_the_pure_python_parts_only(tmp_path: Path) -> None:
    wheel = build.build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "pyrite/tensor.py" in names and "pyrite/webgpu/browser.py" in names
    assert "pyrite/shaders/matmul_tiled.wgsl" in names
    assert "pyrite/demos/mnist/predict.py" in names and "pyrite/demos/mnist/config.json" in names
    assert "pyrite/wasm/page.py" in names
    assert "pyrite/wasm/build.py" not in names and "pyrite/wasm/export.py" not in names
    assert not [n for n in names if n.startswith("pyrite/server/")]  # needs Starlette
    assert not [n for n in names if n.endswith((".bin", ".js", ".pyc", ".html"))]
    meta = zipfile.ZipFile(wheel).read("pyrite-0.1.0.dist-info/entry_points.txt").decode()
    assert "webgpu = pyrite.webgpu:create" in meta


def test_page_wheel_is_reproducible(tmp_path: Path) -> None:
    first = build.build_wheel(tmp_path / "a").read_bytes()
    second = build.build_wheel(tmp_path / "b").read_bytes()
    assert first == second  # same sources, same bytes: a repeat visit keeps its cached copy


def test_wheel_record_lists_every_file_with_its_hash(tmp_path: Path) -> None:
    with zipfile.ZipFile(build.build_wheel(tmp_path)) as zf:
        record = zf.read("pyrite-0.1.0.dist-info/RECORD").decode().splitlines()
        listed = {line.split(",")[0] for line in record}
        assert listed == set(zf.namelist())


def test_recording_runtime_lists_a_models_kernels_without_a_gpu() -> None:
    runtime = RecordingRuntime()
    backend = WebGpu(runtime=runtime, seed=0)
    x = pyrite.tensor([[1.0, -2.0]], device=backend)
    assert (x.exp() + 1.0).sqrt().to_list() == [[0.0, 0.0]]  # readbacks are zeros
    sources = [source for _, source in runtime.kernels]
    assert len(sources) == len(set(sources)) >= 2
    assert all("@compute" in s for s in sources)
    kernels = build.record_kernels("mnist")
    assert kernels and all(k["entry"] and "@compute" in k["source"] for k in kernels)
    # recorded for a page on a GPU and for one on SwiftShader (pyrite.webgpu.software): each
    # kernel names the adapter types that run it (MNIST's are the same on both)
    assert all(k["adapters"] and set(k["adapters"]) <= set(build.ADAPTER_TYPES)
               for k in kernels)


needs_pyodide = pytest.mark.skipif(
    not (build.PYODIDE_DIR / "pyodide-lock.json").exists(),
    reason="wasm/node_modules/pyodide missing (make setup installs it)")
WASM = Path(build.__file__).parent


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """One real bundle for the module's tests: (its folder, its manifest)."""
    if not (build.PYODIDE_DIR / "pyodide-lock.json").exists():
        pytest.skip("wasm/node_modules/pyodide missing (make setup installs it)")
    out = tmp_path_factory.mktemp("bundle") / "web"
    return out, build.build(out)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_bundle_manifest_matches_its_files(bundle: tuple[Path, dict[str, Any]]) -> None:
    out, manifest = bundle
    assert manifest == json.loads((out / "manifest.json").read_text())
    assert (out / "pyrite.js").exists() and (out / "worker.js").exists()
    files = [*manifest["wheels"], manifest["models"]["mnist"],
             manifest["models"]["mnist"]["kernels"], *manifest["pyodide"]["files"]]
    for entry in files:
        data = (out / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert len(data) == entry["size"]
    for entry in files[:-len(manifest["pyodide"]["files"])]:
        assert entry["sha256"][:16] in entry["path"]  # hashed paths are cached forever
    assert [w["name"] for w in manifest["wheels"]] == ["micropip", "pyrite"]
    assert "maxBufferSize" in manifest["gpu"]["limits"]


def test_the_modules_a_first_visit_imports_ship_as_bytecode(
        bundle: tuple[Path, dict[str, Any]]) -> None:
    # build._bytecode_wheel: what the page imports before its first prediction is compiled
    # (first_imports.py), the rest stays source; RECORD names what is there
    if shutil.which("node") is None:
        pytest.skip("node missing: the wheel keeps its sources")
    out, manifest = bundle
    wheel = next(w for w in manifest["wheels"] if w["name"] == "pyrite")
    with zipfile.ZipFile(out / wheel["path"]) as zf:
        names = set(zf.namelist())
        record = zf.read("pyrite-0.1.0.dist-info/RECORD").decode().splitlines()
        page = zf.read("pyrite/wasm/page.pyc")
    assert {line.split(",")[0] for line in record} == names
    for module in ("pyrite/__init__", "pyrite/wasm/page", "pyrite/wasm/stdlib_fallback",
                   "pyrite/webgpu/fusion",
                   "pyrite/webgpu/upload", "pyrite/demos/mnist/predict", "pyrite/nn/conv"):
        assert f"{module}.pyc" in names and f"{module}.py" not in names, module
    for module in ("pyrite/wasm/training", "pyrite/train/learner"):  # not on that way
        assert f"{module}.py" in names and f"{module}.pyc" not in names, module
    # Pyodide's bytecode: its magic number, unchecked hash-based (flags 0b01)
    assert page[4:8] == (1).to_bytes(4, "little")


def test_a_demo_model_ships_with_the_files_it_loads(tmp_path: Path) -> None:
    from pyrite.demos import registry

    squeezenet = registry.get("squeezenet")
    if squeezenet.missing():
        pytest.skip(squeezenet.missing())
    if not (build.PYODIDE_DIR / "pyodide-lock.json").exists():
        pytest.skip("wasm/node_modules/pyodide missing (make setup installs it)")
    out = tmp_path / "web"
    manifest = build.build(out, models=["squeezenet"])
    entry = manifest["models"]["squeezenet"]
    assert manifest["unavailable"] == {}
    assert (out / entry["path"]).read_bytes() == squeezenet.record.read_bytes()
    labels = entry["files"]["labels"]
    assert labels["path"] == f"models/squeezenet-labels.{labels['sha256'][:16]}.txt"
    assert (out / labels["path"]).read_bytes() == squeezenet.files()["labels"].read_bytes()
    assert json.loads((out / entry["kernels"]["path"]).read_text())


def test_a_model_that_is_not_installed_is_left_out(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("PYRITE_MODELS", str(tmp_path / "models"))
    with pytest.raises(ValueError, match=r"squeezenet: .*squeezenet1.1.onnx is missing: put "):
        build.check_models(["mnist", "squeezenet"])
    assert build.check_models(None) == ["charlm", "mnist", "squeezenet"]  # the build leaves it out
    if not (build.PYODIDE_DIR / "pyodide-lock.json").exists():
        pytest.skip("wasm/node_modules/pyodide missing (make setup installs it)")
    manifest = build.build(tmp_path / "web")
    assert list(manifest["models"]) == ["charlm", "mnist"]  # type: ignore[call-overload]
    reason = manifest["unavailable"]["squeezenet"]  # type: ignore[index]
    assert f"in {tmp_path / 'models' / 'squeezenet1.1'}/" in reason


def test_bundle_carries_the_pyodide_files_a_page_loads(
        bundle: tuple[Path, dict[str, Any]]) -> None:
    out, manifest = bundle
    pyodide = manifest["pyodide"]
    assert pyodide["url"] == "pyodide/"
    assert pyodide["version"] == build.pyodide_version()
    expected = {f"pyodide/{name}" for name in build.pyodide_dist.RUNTIME_FILES}
    assert {f["path"] for f in pyodide["files"]} == expected
    shipped = {f for f in _files(out) if f.startswith("pyodide/")}
    # with Node, the standard library is trimmed (test_stdlib.py) and the whole one is beside it
    whole = {pyodide["stdlib"]["path"]} if "stdlib" in pyodide else set()
    assert {f.removesuffix(".gz").removesuffix(".br") for f in shipped} == expected | whole
    for name in expected - {"pyodide/python_stdlib.zip"} | whole:  # the npm package's bytes
        npm_name = "python_stdlib.zip" if name in whole else name[8:]
        assert (out / name).read_bytes() == (build.PYODIDE_DIR / npm_name).read_bytes()
    npm_only = [f for f in _files(out) if f.endswith((".map", ".d.ts", ".html"))]
    assert sorted(npm_only) == sorted(
        ["index.html"] + (["pyrite.d.ts"] if (WASM / "pyrite.d.ts").exists() else []))


def test_bundle_carries_every_script_of_the_wasm_package(
        bundle: tuple[Path, dict[str, Any]]) -> None:
    out, _ = bundle
    scripts = sorted(p.name for p in WASM.glob("*.js"))
    assert {"pyrite.js", "worker.js"} <= set(scripts)
    for name in scripts:
        if name != "worker.js":  # the worker and its modules joined (worker_bundle.py)
            assert (out / name).read_bytes() == (WASM / name).read_bytes()
    assert (out / "worker.js").read_text() == bundle_worker(WASM)
    index = (out / "index.html").read_text()
    assert '<script type="module" src="./pyrite.js"></script>' in index
    assert '<pyrite-script device="webgpu">' in index and "<pyrite-mnist>" in index


def test_gz_copies_are_exact_and_only_where_they_save_a_tenth(
        bundle: tuple[Path, dict[str, Any]]) -> None:
    out, _ = bundle
    files = _files(out)
    originals = sorted(f for f in files if not f.endswith((".gz", ".br")))
    compressed = 0
    for name in originals:
        data = (out / name).read_bytes()
        packed = gzip.compress(data, compresslevel=9, mtime=0)
        if name + ".gz" in files:
            kept = (out / (name + ".gz")).read_bytes()
            assert gzip.decompress(kept) == data
            assert kept == packed  # reproducible: level 9, no timestamp
            assert len(kept) <= 0.9 * len(data)
            compressed += 1
        else:
            assert len(packed) > 0.9 * len(data), name
    assert compressed >= 8
    for name in ["pyodide/pyodide.asm.wasm", "pyodide/pyodide.asm.mjs", "pyrite.js",
                 "manifest.json", "pyodide/pyodide-lock.json"]:
        assert name + ".gz" in files
    # the wheels are stored zips (the page writes their members as slices: wheels.js), and so
    # is the trimmed standard library where Node precompiled it (bytecode.py): the host sends
    # them compressed
    wheels = [f for f in originals if f.endswith(".whl")]
    assert len(wheels) == 2 and all(f + ".gz" in files for f in wheels)
    if shutil.which("node") is not None:
        assert "pyodide/python_stdlib.zip.gz" in files
    assert "pyodide/python_stdlib-full.zip.gz" not in files  # Pyodide's, compressed already


def test_br_copies_are_exact_and_smaller_than_the_gz_ones(
        bundle: tuple[Path, dict[str, Any]]) -> None:
    brotli = pytest.importorskip("brotli", reason="brotli is not installed (pyrite[web])")
    out, _ = bundle
    files = _files(out)
    copies = sorted(f for f in files if f.endswith(".br"))
    for name in copies:
        data = (out / name.removesuffix(".br")).read_bytes()
        kept = (out / name).read_bytes()
        assert brotli.decompress(kept) == data
        assert len(kept) <= 0.9 * len(data)
    # the large files a first visit fetches: brotli at quality 11 beats gzip at level 9
    for name in ["pyodide/pyodide.asm.wasm", "pyodide/pyodide.asm.mjs"]:
        assert name + ".br" in copies
        assert (out / (name + ".br")).stat().st_size < (out / (name + ".gz")).stat().st_size


def test_without_brotli_only_gz_copies_are_written(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "brotli", None)  # `import brotli` raises ImportError
    assert list(compress.compressors()) == ["gzip"]
    root = _tree({"a.js": b"let a = 1;\n" * 300}, tmp_path / "root")
    assert compress.precompress(root) == {"a.js": ["gzip"]}
    assert not (root / "a.js.br").exists()


def test_a_rebuild_replaces_the_bundle_whole(bundle: tuple[Path, dict[str, Any]],
                                             tmp_path: Path) -> None:
    out = tmp_path / "web"
    shutil.copytree(bundle[0], out)
    (out / "stale.js").write_text("// left by an older bundle\n")
    (tmp_path / "web.old").mkdir()  # a user's folder with the name an older builder used
    (tmp_path / "web.old" / "keep.txt").write_text("mine")
    manifest = build.build(out)
    assert json.loads((out / "manifest.json").read_text()) == manifest == bundle[1]
    assert not (out / "stale.js").exists()
    assert (tmp_path / "web.old" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["web", "web.old"]  # no leftovers
    assert _files(out) == _files(bundle[0])
    assert (out.stat().st_mode & 0o777) == 0o755  # readable by a web server's user


@needs_pyodide
def test_build_ships_only_the_chosen_models(tmp_path: Path) -> None:
    manifest = build.build(tmp_path / "web", models=[])
    assert manifest["models"] == {}
    assert not (tmp_path / "web" / "models").exists()
    assert "<pyrite-mnist>" not in (tmp_path / "web" / "index.html").read_text()
    with pytest.raises(ValueError,
                       match="unknown model 'nope'; the known models are: charlm, mnist"):
        build.build(tmp_path / "other", models=["mnist", "nope"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["web"]  # nothing written


@needs_pyodide
def test_build_copies_pyodide_from_the_folder_given(tmp_path: Path) -> None:
    source = tmp_path / "pyodide"
    shutil.copytree(build.PYODIDE_DIR, source)
    (source / "package.json").unlink()  # a folder from a Pyodide release has none
    (source / "pyodide.mjs").write_text("// a patched pyodide.mjs\n")
    manifest = build.build(tmp_path / "web", models=[], pyodide_dir=source)
    assert (tmp_path / "web" / "pyodide" / "pyodide.mjs").read_text().startswith("// a patched")
    assert manifest["pyodide"]["version"] == "unknown"  # type: ignore[index]
    (source / "python_stdlib.zip").unlink()
    with pytest.raises(FileNotFoundError, match="python_stdlib.zip is missing"):
        build.build(tmp_path / "again", pyodide_dir=source)


def _tree(files: dict[str, bytes], root: Path) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_precompress_keeps_only_worthwhile_copies(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "brotli", None)  # the .gz copies alone
    text = b"export const x = 1;\n" * 200
    noise = os.urandom(4000)
    root = _tree({"a.js": text, "sub/b.json": text, "c.bin": noise, "empty.txt": b"",
                  "d.js.gz": b"already a copy"}, tmp_path / "root")
    written = compress.precompress(root)
    assert written == {"a.js": ["gzip"], "sub/b.json": ["gzip"]}
    assert gzip.decompress((root / "a.js.gz").read_bytes()) == text
    assert not (root / "c.bin.gz").exists() and not (root / "empty.txt.gz").exists()
    assert not (root / "d.js.gz.gz").exists()


def test_precompress_writes_brotli_when_its_module_is_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("brotli")
    fake.compress = lambda data, quality: b"br:" + gzip.compress(data)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "brotli", fake)
    root = _tree({"a.js": b"let a = 1;\n" * 300}, tmp_path / "root")
    assert compress.precompress(root) == {"a.js": ["br", "gzip"]}
    assert (root / "a.js.br").read_bytes().startswith(b"br:")


def test_large_files_are_compressed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "brotli", None)  # the .gz copies alone
    big = b"0123456789abcdef" * (compress.CACHE_MIN_SIZE // 16)
    cache = tmp_path / "cache"
    calls: list[int] = []
    real = compress._gzip
    monkeypatch.setattr(compress, "_gzip", lambda data: calls.append(len(data)) or real(data))
    for name in ("one", "two"):
        root = _tree({"big.wasm": big, "small.js": b"x = 1;\n" * 100}, tmp_path / name)
        compress.precompress(root, cache)
        assert gzip.decompress((root / "big.wasm.gz").read_bytes()) == big
    assert calls.count(len(big)) == 1  # the second build took the cached copy
    assert len(list(cache.iterdir())) == 1  # small files are not cached
