"""Where the served folders besides the web bundle come from: the Pyodide runtime, an optional
full Pyodide package distribution, and each demo's page folder (`demos/<name>/page/`).

Each is checked once, before serving, so a missing folder is a clear startup error rather than
a page of 404s.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

import pyrite.wasm

from .errors import ServeSetupError

PYODIDE_ENTRY = "pyodide.mjs"
PAGE_INDEX = "index.html"


def default_pyodide_dir() -> Path:
    """The npm `pyodide` package pinned by wasm/package.json (installed by `make setup`)."""
    return Path(pyrite.wasm.__file__).parent / "node_modules" / "pyodide"


def check_pyodide_dir(path: Path) -> Path:
    """`path` if it holds the Pyodide runtime (`pyodide.mjs`), else ServeSetupError."""
    if not (path / PYODIDE_ENTRY).is_file():
        raise ServeSetupError(f"no Pyodide runtime at {path} ({PYODIDE_ENTRY} missing): run "
                              f"`make setup`, or `npm ci` in wasm/, or pass --pyodide DIR")
    return path


@dataclass(frozen=True)
class PyodidePackages:
    """Where pages may load Pyodide's packages (numpy, ...) from: a folder this server serves
    at /pyodide-packages/, or a URL it only tells pages about, or nowhere (both None)."""

    folder: Path | None = None
    url: str | None = None

    @classmethod
    def parse(cls, value: str | Path | None) -> PyodidePackages:
        """A `--pyodide-packages` value: an http(s) URL, or a folder that must exist."""
        if value is None or value == "":
            return cls()
        if isinstance(value, str) and urlsplit(value).scheme in ("http", "https"):
            return cls(url=value if value.endswith("/") else value + "/")
        folder = Path(value).expanduser()
        if not folder.is_dir():
            raise ServeSetupError(f"--pyodide-packages {value}: no such folder; give a folder "
                                  f"holding a full Pyodide distribution's packages, or an "
                                  f"http(s) URL of one")
        return cls(folder=folder)


def demo_page_dir(name: str) -> Path | None:
    """`demos/<name>/page/` of the demo package `pyrite.demos.<name>`; None if no such package."""
    try:
        root = files(f"pyrite.demos.{name}")
    except ModuleNotFoundError:
        return None
    page = root / "page"
    # a zipped install has no folder to serve from; pyrite installs as plain files
    return page if isinstance(page, Path) else None


def demo_pages(names: list[str]) -> dict[str, Path]:
    """The page folder of each named demo that has a package (the folder may not exist yet)."""
    found = {name: demo_page_dir(name) for name in names}
    return {name: page for name, page in found.items() if page is not None}


__all__ = ["PAGE_INDEX", "PYODIDE_ENTRY", "PyodidePackages", "check_pyodide_dir",
           "default_pyodide_dir", "demo_page_dir", "demo_pages"]
