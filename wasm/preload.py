"""What a Python memory snapshot of a page holds already imported: importing this module
imports pyrite, its browser runtime, the page's modules, every demo model's code and what
starting the device, loading a model from its record and predicting import on the way (so a
repeat visit compiles none of them: tests/unit/wasm/test_preload.py checks the list). It also
fills two caches that a restored page's first model load and prediction would fill otherwise,
both independent of the device and of anything the page does: the WGSL templates' texts
(`codegen.template_text`, read from the wheel's files) and whether numpy can be imported for
a record's checks (a failed import searches the whole path).

Both snapshots run it: the one `pyrite export-web --snapshot` makes under Node at export time
(snapshot.py) and the one the worker makes after a first visit that booted (worker.js). Only
pure-Python imports belong here: nothing may touch a JavaScript object on import (a snapshot
can hold no reference to one), nor request a GPU.
"""

from __future__ import annotations

import importlib
from importlib import resources

import pyrite
import pyrite.demos.quantize  # page.predict names the weights' precision with it
import pyrite.demos.records
import pyrite.quantization.module
import pyrite.quantization.record
import pyrite.record.fits
import pyrite.shaders  # the WGSL sources, read as package resources
import pyrite.webgpu
import pyrite.webgpu.browser
import pyrite.webgpu.capture
import pyrite.webgpu.codegen
import pyrite.webgpu.fusion  # the page's device is fused (registration.default)
from pyrite.demos import registry

from . import display, page

for _name in registry.names():
    registry.get(_name)

# what importlib.resources imports when it first reads a package's files (the WGSL templates,
# at a model's first kernel): else 4 modules compiled during the first model load in a page
for _name in ("importlib.readers", "importlib.resources._adapters",
              "importlib.resources._itertools", "importlib.resources.readers"):
    importlib.import_module(_name)

for _file in resources.files("pyrite.shaders").iterdir():
    if _file.name.endswith(".wgsl"):
        pyrite.webgpu.codegen.template_text(_file.name)
pyrite.record.fits.numpy_for_checks()


def freeze() -> None:
    """Called last before a snapshot is made: collect, then put every object alive now out of
    the cyclic collector's reach (`gc.freeze`), so that after a restore a full collection walks
    only what the page made since (the capture of a first prediction runs one: 12-20 ms over
    the 38,000 objects of the imports in a page, 0.1 ms frozen)."""
    import gc

    gc.collect()
    gc.freeze()


__all__ = ["display", "freeze", "page", "pyrite"]
