"""The pyrite modules a page imports on its way to its first prediction: the ones the export
ships as bytecode in the page's wheel (build.py `_bytecode_wheel`).

A first visit installs the wheel and imports pyrite from it, and from sources Python compiles
every module it imports, which is slow in WebAssembly (under Node, the page's import took
1.0-1.1 s from sources and 0.30-0.38 s from bytecode). Bytecode is larger than the minified
sources, though (the whole wheel as bytecode added 0.9 MB to a first visit from a gzip host),
so only what a first visit imports before its first answer is compiled: the standard
library's fallback finder, the page's module, the device's start and each shipped model's load
and first prediction. Modules imported later
(another demo, training, the next visit's snapshot) stay sources.

Found natively, in a fresh interpreter, on the recording runtime the kernel lists are made
with (no GPU): the same pyrite modules a page imports, the browser runtime aside, which the
page's module list names itself.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pyrite.record.atomic import atomic_write

#: run in a fresh interpreter with the model names as arguments: prints the pyrite modules
#: imported, as JSON
CODE = """
import json, sys
import pyrite
import pyrite.wasm.page as page
import pyrite.wasm.stdlib_fallback  # installed by every visit (python_setup.js)
import pyrite.webgpu.browser  # the page's runtime (not used natively)
from pyrite.demos import registry
from pyrite.webgpu import WebGpu, registration
from pyrite.webgpu.recorder import RecordingRuntime
backend = registration.default(WebGpu(runtime=RecordingRuntime(), seed=0))
pyrite.register_backend("webgpu", lambda: backend)  # as page.start does with the page's GPU
page._state["device"] = "webgpu"
for name in sys.argv[1:]:
    demo = registry.get(name)
    files = {k: p.read_bytes() for k, p in demo.files().items()}
    page.load_model(name, demo.locate().read_bytes(), files)
    page.predict(name, demo.example)
print(json.dumps(sorted(n for n in sys.modules if n == "pyrite" or n.startswith("pyrite."))))
"""


def first_visit_modules(models: Sequence[str], wheel: bytes,
                        cache: Path | None) -> list[str]:
    """The pyrite modules a page that loads `models` imports before its first prediction
    (RuntimeError with the interpreter's last words when that fails). `wheel`: the page's
    wheel, made from the sources this interpreter imports; the answer is kept in `cache` by
    it, the models and CODE."""
    digest = hashlib.sha256(CODE.encode() + json.dumps(list(models)).encode() + wheel)
    kept = cache / f"{digest.hexdigest()}.json" if cache is not None else None
    if kept is not None and kept.is_file():
        return list(json.loads(kept.read_text()))
    run = subprocess.run([sys.executable, "-c", CODE, *models], capture_output=True,
                         text=True, timeout=600)
    if run.returncode != 0:
        said = " ".join(run.stderr.split())[-400:]
        raise RuntimeError(f"finding the modules a page imports failed: {said}")
    names: list[str] = json.loads(run.stdout.strip().splitlines()[-1])
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(kept, lambda f: f.write(json.dumps(names).encode()))
    return names


__all__ = ["CODE", "first_visit_modules"]
