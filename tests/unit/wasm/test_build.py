"""The web bundle build: what the page's wheel holds, reproducible bytes, a manifest whose
hashes match the files, and the kernel lists made without a GPU."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

import pyrite
from pyrite.wasm import build
from pyrite.webgpu import WebGpu
from pyrite.webgpu.recorder import RecordingRuntime


def test_page_wheel_holds_the_pure_python_parts_only(tmp_path: Path) -> None:
    wheel = build.build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "pyrite/tensor.py" in names and "pyrite/webgpu/browser.py" in names
    assert "pyrite/shaders/matmul_tiled.wgsl" in names
    assert "pyrite/demos/mnist/predict.py" in names and "pyrite/demos/mnist/config.json" in names
    assert "pyrite/wasm/page.py" in names
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


@pytest.mark.skipif(not (build.PYODIDE_DIR / "pyodide-lock.json").exists(),
                    reason="wasm/node_modules/pyodide missing (make setup installs it)")
def test_bundle_manifest_matches_its_files(tmp_path: Path) -> None:
    out = tmp_path / "web"
    manifest = build.build(out)
    assert manifest == json.loads((out / "manifest.json").read_text())
    assert (out / "pyrite.js").exists() and (out / "worker.js").exists()
    files = [*manifest["wheels"], manifest["models"]["mnist"],  # type: ignore[index]
             manifest["models"]["mnist"]["kernels"]]  # type: ignore[index]
    for entry in files:
        data = (out / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert entry["sha256"][:16] in entry["path"]  # hashed paths are cached forever
    assert [w["name"] for w in manifest["wheels"]] == ["micropip", "pyrite"]  # type: ignore
    assert "maxBufferSize" in manifest["gpu"]["limits"]  # type: ignore[index]
    build.build(out)  # a rebuild replaces the bundle whole
    assert json.loads((out / "manifest.json").read_text()) == manifest
