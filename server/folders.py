"""Where the served folders besides the web bundle come from: the Pyodide runtime, an optional
full Pyodide package distribution, each demo's page folder (`demos/<package>/page/`), what the
pages share (`demos/page/`) and the sample photos (`$PYRITE_DATA/samples/`).

Each is checked once, before serving, so a missing folder is a clear startup error rather than
a page of 404s.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

import pyrite.wasm
from pyrite.dataset.download import data_root
from pyrite.demos import registry

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


def demo_page_dir(package: str) -> Path | None:
    """`demos/<package>/page/` of the demo package `pyrite.demos.<package>`; None if no such
    package."""
    try:
        root = files(f"pyrite.demos.{package}")
    except ModuleNotFoundError:
        return None
    page = root / "page"
    # a zipped install has no folder to serve from; pyrite installs as plain files
    return page if isinstance(page, Path) else None


def demo_pages(names: list[str]) -> dict[str, Path]:
    """Each named demo model's page, by the page's URL name (`mnist`, `classify`) -> its
    package's page folder, for the models whose package exists (the folder may not yet), and
    the pages that are not a model's (`train`: registry.PAGES)."""
    demos = [registry.get(name) for name in names]
    found = {demo.page: demo_page_dir(demo.package) for demo in demos}
    found.update({page: demo_page_dir(package)
                  for page, (package, _) in registry.PAGES.items()})
    return {page: folder for page, folder in found.items() if folder is not None}


def shared_page_dir() -> Path | None:
    """`demos/page/`: what the demo pages share (`demo.js`, `demo.css`), served at
    `/demos/shared/`; None where the package's files are not plain files."""
    page = files("pyrite.demos") / "page"
    return page if isinstance(page, Path) else None


def default_samples_dir() -> Path:
    """The sample photos the image classification page offers: `samples/` in the data folder
    (`$PYRITE_DATA/samples/`, see pyrite.dataset.data_root)."""
    return data_root(None) / "samples"


__all__ = ["PAGE_INDEX", "PYODIDE_ENTRY", "PyodidePackages", "check_pyodide_dir",
           "default_pyodide_dir", "default_samples_dir", "demo_page_dir", "demo_pages",
           "shared_page_dir"]
