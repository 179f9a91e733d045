"""The rest of the standard library, on demand, in a page whose bundle trimmed it.

The bundle's `pyodide/python_stdlib.zip` holds only the standard library modules pyrite imports
(pyrite/wasm/stdlib.py trims it at build time: 1.4 of 2.5 MB); the whole library is beside it
as `python_stdlib-full.zip`. `install(url)` (the worker calls it after Python starts) appends a
finder to `sys.meta_path` that, the first time a standard library module is not found, fetches
that zip (a synchronous request: imports cannot wait otherwise; the worker is no page's main
thread), puts it on `sys.path` and finds the module there. It acts only for what the trimmed
zip left out (the manifest lists it): top-level names, and the modules of a package it kept
that nobody imported (`encodings.cp1252`: found in the whole zip's copy of the package); not
for pyrite's own modules, nor for the platform modules that code tries and does without
(`_winapi`, `nt`), which are in no zip.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Collection, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

#: where the whole library is written in Pyodide's file system
TARGET = "/lib/python_stdlib_full.zip"


class FullStdlibFinder(importlib.abc.MetaPathFinder):
    """Finds a standard library module that the trimmed zip lacks in the whole library."""

    def __init__(self, url: str, names: Collection[str]) -> None:
        self.url = url
        self.names = frozenset(names)
        self.mounted = False

    def _mount(self) -> None:
        import js  # type: ignore[import-not-found]  # Pyodide's module of JS globals

        request = js.XMLHttpRequest.new()
        request.open("GET", self.url, False)
        request.responseType = "arraybuffer"
        request.send(None)
        if request.status != 200:
            raise ImportError(f"pyrite: the standard library zip {self.url} answered "
                              f"{request.status}; is the bundle complete?")
        data = js.Uint8Array.new(request.response).to_bytes()
        with open(TARGET, "wb") as f:
            f.write(data)
        sys.path.append(TARGET)
        importlib.invalidate_caches()
        self.mounted = True

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if "." in fullname and fullname in self.names:  # a module of a package it kept
            if not self.mounted:
                self._mount()
            package = fullname.rpartition(".")[0].replace(".", "/")
            # its package came from the trimmed zip: look in the whole zip's copy of it
            return importlib.machinery.PathFinder.find_spec(fullname, [f"{TARGET}/{package}"])
        if self.mounted or fullname.partition(".")[0] not in self.names:
            return None
        self._mount()
        # a top-level name the trimmed zip left out: found from the top, on sys.path now
        return importlib.machinery.PathFinder.find_spec(fullname, path)


def install(url: str, names: Collection[str]) -> None:
    """Put the finder (for the whole library at `url`, which has the top-level modules and
    packages `names` that the trimmed one lacks) last on `sys.meta_path`, replacing one a
    snapshot brought along."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, FullStdlibFinder)]
    sys.meta_path.append(FullStdlibFinder(url, names))


__all__ = ["FullStdlibFinder", "TARGET", "install"]
