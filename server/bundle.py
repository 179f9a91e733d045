"""The web bundle as the server sees it: where it is built, how it is checked, how it is cached.

The bundle itself (pyrite.js and its modules, manifest.json, pyodide/, wheels/, models/,
kernels/, the precompressed copies) is made by `pyrite.wasm.build.build(out_dir)`; this module
only calls it, checks the folder it gets and knows how long each path may be cached: the
content-addressed ones (`wheels/<hash>/<name>`, `models/<name>.<hash>.<ext>`,
`kernels/<name>.<hash>.<ext>`, `snapshot/python.<hash>.snapshot.gz`, with 16 hex digits of
hash, and their `.gz`/`.br` copies) for good, Pyodide's for a day, the rest revalidated on
each use.
"""

from __future__ import annotations

import re
from pathlib import Path

from pyrite.wasm import build as wasm_build

from .errors import ServeSetupError
from .static import IMMUTABLE, REVALIDATE

_HASHED = re.compile(r"(?:wheels/[0-9a-f]{16}/[^/]+"
                     r"|(?:models|kernels|snapshot)/[^/]+\.[0-9a-f]{16}\.[A-Za-z0-9]+)"
                     r"(?:\.gz|\.br)?")
# Pyodide's file names carry no hash, but its version is pinned (wasm/package.json) and changes
# only with a deliberate upgrade: a day of caching saves re-downloading ~14 MB per visit, and a
# stale copy after an upgrade lasts at most a day (or until a hard reload).
PYODIDE_CACHE = "public, max-age=86400"
ENTRY = "pyrite.js"
PYODIDE_ENTRY = "pyodide/pyodide.mjs"


def cache_control(relative: str) -> str:
    """Cache-Control for a bundle path: immutable when content-hashed, a day for Pyodide's
    runtime, else revalidate.

    >>> cache_control("wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl")
    'public, max-age=31536000, immutable'
    >>> cache_control("kernels/mnist.0123456789abcdef.json.gz")
    'public, max-age=31536000, immutable'
    >>> cache_control("snapshot/python.0123456789abcdef.snapshot.gz")
    'public, max-age=31536000, immutable'
    >>> cache_control("pyodide/pyodide.asm.wasm")
    'public, max-age=86400'
    >>> cache_control("pyrite.js")
    'no-cache'
    """
    if _HASHED.fullmatch(relative):
        return IMMUTABLE
    return PYODIDE_CACHE if relative.startswith("pyodide/") else REVALIDATE


def default_dir() -> Path:
    """Where `pyrite serve` builds the bundle: $PYRITE_WEB_DIR, else ~/.cache/pyrite/web (the
    builder's `default_bundle()`, so both agree)."""
    return wasm_build.default_bundle().expanduser()


def check(web_dir: Path) -> Path:
    """`web_dir` if it holds a web bundle (its `pyrite.js` and Pyodide), else ServeSetupError."""
    if not (web_dir / ENTRY).is_file():
        raise ServeSetupError(f"{web_dir} is not a web bundle (no {ENTRY}); build one with "
                              f"`python -m pyrite.wasm build --out DIR`, or run `pyrite serve` "
                              f"without --web")
    if not (web_dir / PYODIDE_ENTRY).is_file():
        raise ServeSetupError(f"{web_dir} has no {PYODIDE_ENTRY} (a bundle built before the "
                              f"bundle carried Pyodide); rebuild it with `python -m pyrite.wasm "
                              f"build --out DIR`")
    return web_dir


def build(out_dir: Path | None = None, pyodide_dir: Path | None = None) -> Path:
    """Build the web bundle into `out_dir` (default `default_dir()`) with the Pyodide runtime
    of `pyodide_dir` (default the npm package) and return it, checked.

    The one place the server calls the builder: `pyrite serve` without --web, and
    `create_app()` without a folder. Other servers may be serving the same folder: the new
    bundle replaces the old in one atomic step for them (pyrite.wasm.live_bundle).
    """
    out_dir = out_dir or default_dir()
    try:
        wasm_build.build(out_dir, pyodide_dir=pyodide_dir, live=True)
    except Exception as exc:  # noqa: BLE001 - any failure is reported with the folder and fix
        raise ServeSetupError(f"building the web bundle in {out_dir} failed: "
                              f"{type(exc).__name__}: {exc}; fix that, or pass --web DIR with "
                              f"a bundle built elsewhere") from exc
    return check(out_dir)


__all__ = ["ENTRY", "PYODIDE_CACHE", "PYODIDE_ENTRY", "build", "cache_control", "check",
           "default_dir"]
