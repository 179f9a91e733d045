"""What a Python memory snapshot of a page holds already imported: importing this module
imports pyrite, its browser runtime, the page's modules and every demo model's code.

Both snapshots run it: the one `pyrite export-web --snapshot` makes under Node at export time
(snapshot.py) and the one the worker makes after a first visit that booted (worker.js). Only
pure-Python imports belong here: nothing may touch a JavaScript object on import (a snapshot
can hold no reference to one), nor request a GPU.
"""

from __future__ import annotations

import pyrite
import pyrite.webgpu
import pyrite.webgpu.browser
from pyrite.demos import registry

from . import display, page

for _name in registry.names():
    registry.get(_name)

__all__ = ["display", "page", "pyrite"]
