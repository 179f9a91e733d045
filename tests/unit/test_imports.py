"""`import pyrite` works with numpy, wgpu, starlette and uvicorn absent (the browser needs it)."""

from __future__ import annotations

import subprocess
import sys

BLOCKED = ("numpy", "wgpu", "starlette", "uvicorn")

_SCRIPT = f"""
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
sys.meta_path.insert(0, Block())
import pyrite
import pyrite.webgpu, pyrite.shaders, pyrite.record, pyrite.dataset, pyrite.module
data = pyrite.TensorData([[1.5, 2.0], [3.0, 4.0]]).convert("f16")
assert data.to_list() == [[1.5, 2.0], [3.0, 4.0]], data
assert pyrite.TensorData([1, 2, 300]).convert("i16").to_list() == [1, 2, 300]
try:
    pyrite.tensor([1.0], device="numpy")
except pyrite.BackendUnavailable as e:
    assert "pip install numpy" in str(e), e
else:
    raise SystemExit("numpy backend built without numpy")
blocked = [m for m in sys.modules if m.split('.')[0] in {BLOCKED!r}]
assert not blocked, blocked
print("ok")
"""


def test_import_without_optional_dependencies() -> None:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_import_has_no_side_effects() -> None:
    script = ("import sys, pyrite; "
              "print(sorted(m for m in sys.modules if m.split('.')[0] in "
              f"{BLOCKED!r}))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_every_webgpu_module_imports_without_numpy() -> None:
    # the page's Python has no numpy: a webgpu module importing it keeps `pyrite serve` from
    # building the web bundle (and every page test then skips as "page-webgpu unavailable")
    script = _SCRIPT.split("import pyrite\n")[0].replace(repr(BLOCKED), repr(("numpy",))) + (
        "import importlib, pkgutil, pyrite.webgpu\n"
        "for info in pkgutil.iter_modules(pyrite.webgpu.__path__):\n"
        "    importlib.import_module('pyrite.webgpu.' + info.name)\n"
        "assert 'numpy' not in sys.modules\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
