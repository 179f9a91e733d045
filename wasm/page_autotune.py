"""The autotune store of a page: the tuned kernel choices kept in the browser between visits.

It is pyrite's `FileStore` (one JSON document, keyed by adapter, driver and pyrite version as
natively: webgpu/autotune.py) in `FOLDER`, a folder of Pyodide's file system that the worker
keeps in IndexedDB (`self.pyriteStorage`, Emscripten's IDBFS, on the embedding page's origin):
the worker mounts it before Python starts the device, which loads what a former visit stored,
and each write is flushed back (`pyriteStorage.syncSoon`, whose failure is a console warning:
the choices then last this visit only).

Pages tune with `load({autotune: "on"})` (kernels are timed on first use and the fastest kept)
and use what is stored by default (`"cached"`: nothing is timed; a key with no stored choice
gets the built-in heuristic, as with `"off"`).
"""

from __future__ import annotations

from pathlib import Path

from pyrite.webgpu.autotune import FileStore

#: the folder the worker mounts on IndexedDB (worker.js: load)
FOLDER = "/pyrite-autotune"  # beside, not inside, training.py's /pyrite-storage (a mount each)
MODES = ("on", "cached", "off")


class PageTuneStore(FileStore):
    """A `FileStore` in `FOLDER` whose writes are flushed to IndexedDB."""

    def __init__(self) -> None:
        super().__init__(Path(FOLDER) / "autotune.json")

    def location(self) -> str:
        return f"this page's browser storage ({self.path}, in IndexedDB)"

    def write_text(self, text: str) -> None:
        super().write_text(text)
        import js  # type: ignore[import-not-found]  # Pyodide's module of JS globals

        js.pyriteStorage.syncSoon()


def check_mode(mode: str) -> str:
    """`mode` if it is an autotune setting, else ValueError saying which are.

    >>> check_mode("cached")
    'cached'
    """
    if mode not in MODES:
        raise ValueError(f"autotune {mode!r} is not a setting; use one of {', '.join(MODES)}")
    return mode


__all__ = ["FOLDER", "MODES", "PageTuneStore", "check_mode"]
