"""What a Python memory snapshot of a page holds already imported: importing this module
imports pyrite, its browser runtime, the page's modules, every demo model's code and what
starting the device, loading a model from its record and predicting import on the way (so a
repeat visit compiles none of them: tests/unit/wasm/test_preload.py checks the list).

Both snapshots run it: the one `pyrite export-web --snapshot` makes under Node at export time
(snapshot.py) and the one the worker makes after a first visit that booted (worker.js). Only
pure-Python imports belong here: nothing may touch a JavaScript object on import (a snapshot
can hold no reference to one), nor request a GPU.
"""

from __future__ import annotations

import pyrite
import pyrite.demos.records
import pyrite.quantization.module
import pyrite.quantization.record
import pyrite.shaders  # the WGSL sources, read as package resources
import pyrite.webgpu
import pyrite.webgpu.browser
import pyrite.webgpu.capture
import pyrite.webgpu.fusion  # the page's device is fused (registration.default)
from pyrite.demos import registry

from . import display, page

for _name in registry.names():
    registry.get(_name)

__all__ = ["display", "page", "pyrite"]
