"""pyrite.wasm.preload (what a page's Python snapshot holds imported) leaves nothing for a
page to import when it starts the device, loads a demo model from its record's bytes and
predicts: every pyrite module that needs is imported already, so a visit restored from the
snapshot compiles none of them (Python source compiles slowly in WebAssembly); nor does it
read a WGSL template or look for numpy again (preload filled those caches)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyrite.demos import registry

CODE = """
import sys
import pyrite.wasm.preload
from pyrite.webgpu import WebGpu
from pyrite.webgpu.recorder import RecordingRuntime
before = set(sys.modules) | {"pyrite.webgpu.recorder"}
from pyrite.record.fits import numpy_for_checks
from pyrite.webgpu.codegen import template_text
caches = (template_text, numpy_for_checks)
misses = [c.cache_info().misses for c in caches]
from pyrite.demos import registry
from pyrite.webgpu import registration
device = registration.default(WebGpu(runtime=RecordingRuntime(), seed=0))
demo = registry.get(sys.argv[1])
files = {k: p.read_bytes() for k, p in demo.files().items()}
model = demo.load(device, demo.locate().read_bytes(), files)
demo.predict(model, demo.example)
from pyrite.wasm import page
page._precision(model)  # what page.predict adds to a prediction
print(sorted(n for n in set(sys.modules) - before if n.startswith(("pyrite", "importlib"))))
print(*(c.cache_info().misses - m for c, m in zip(caches, misses)))
"""


@pytest.mark.parametrize("name", ["mnist", "charlm"])
def test_a_model_load_and_prediction_import_nothing_more(name: str) -> None:
    demo = registry.get(name)
    if demo.missing() is not None:
        pytest.skip(str(demo.missing()))
    # a fresh interpreter: what this one imported already does not count
    done = subprocess.run([sys.executable, "-c", CODE, name], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-2:] == ["[]", "0 0"]
