"""pyrite inside Pyodide (the browser's Python), run under Node from the pinned npm package:
the pure-Python wheel installs and imports with no numpy and no wgpu, TensorData and the
binary records work, and the shipped MNIST record loads as it will in a page."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyrite import config

REPO = Path(__file__).resolve().parents[3]
PYODIDE = REPO / "wasm" / "node_modules" / "pyodide"
RUNNER = Path(__file__).with_name("pyodide_run.mjs")

_CODE = """
import json, sys
import pyrite, pyrite.webgpu, pyrite.record
from pyrite.record import BinBytesRecorder, BinFileRecorder
out = {"python": sys.version.split()[0], "numpy": "numpy" in sys.modules}
data = pyrite.TensorData([[1.5, -2.0], [3.25, 4.0]]).convert("f16")
out["f16"] = data.to_list()
blob = BinBytesRecorder().to_bytes({"w": data, "step": 3})
back = BinBytesRecorder().from_bytes(blob)
out["record"] = [back["w"].to_list(), back["step"]]
try:
    pyrite.tensor([1.0], device="numpy")
except pyrite.BackendUnavailable as e:
    out["numpy_backend"] = str(e)
from importlib.resources import files
shipped = files("pyrite.demos.mnist").joinpath("mnist.bin")
record = BinFileRecorder().load(shipped)
out["mnist"] = {k: list(v["weight"].shape) for k, v in record.items()
                if isinstance(v, dict) and "weight" in v}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(where), str(REPO)], check=True, capture_output=True)
    return next(where.glob("pyrite-*.whl"))


def test_pyrite_runs_inside_pyodide(wheel: Path, tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not (PYODIDE / "pyodide.mjs").exists():
        why = "node or wasm/node_modules/pyodide missing (make setup installs them)"
        if "pyodide" in config.required_backends():
            pytest.fail(f"pyodide is required (PYRITE_REQUIRE) but {why}")
        pytest.skip(why)
    code = tmp_path / "check.py"
    code.write_text(_CODE)
    run = subprocess.run([node, str(RUNNER), str(PYODIDE), str(wheel), str(code)],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["python"].startswith("3.14")
    assert out["numpy"] is False  # nothing pulled numpy in
    assert out["f16"] == [[1.5, -2.0], [3.25, 4.0]]
    assert out["record"] == [[[1.5, -2.0], [3.25, 4.0]], 3]
    assert "pip install numpy" in out["numpy_backend"]
    assert out["mnist"]["conv1"] == [8, 1, 3, 3]
    assert out["mnist"]["linear1"] == [1024, 512]  # (d_input, d_output), as Burn stores it


def test_the_installed_package_carries_the_web_scripts(wheel: Path) -> None:
    # export-web runs the Node scripts (*.mjs: the snapshot, the standard library trim) and
    # ships the *.js ones: an install from the wheel, not only an editable one, needs them all
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    scripts = sorted(p.name for p in (REPO / "wasm").iterdir() if p.suffix in (".js", ".mjs"))
    assert {"snapshot.mjs", "stdlib_imports.mjs", "wheels.js"} <= set(scripts)
    assert [s for s in scripts if f"pyrite/wasm/{s}" not in names] == []
