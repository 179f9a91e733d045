"""The web bundle as the server sees it: where it is built, how it is checked, how it is cached.

The bundle itself (pyrite.js, worker.js, manifest.json, wheels/, models/) is made by
`pyrite.wasm.build.build(out_dir)`; this module only calls it, checks the folder it gets and
knows which of its paths are content-addressed (`wheels/<hash>/<name>.whl`,
`models/<name>.<hash>.<ext>`, with 16 hex digits of hash) and so may be cached for good.
"""

from __future__ import annotations

import re
from pathlib import Path

from pyrite.wasm import build as wasm_build

from .errors import ServeSetupError
from .static import IMMUTABLE, REVALIDATE

_HASHED = re.compile(r"wheels/[0-9a-f]{16}/[^/]+|models/[^/]+\.[0-9a-f]{16}\.[A-Za-z0-9]+")
ENTRY = "pyrite.js"


def cache_control(relative: str) -> str:
    """Cache-Control for a bundle path: immutable when content-hashed, else revalidate.

    >>> cache_control("wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl")
    'public, max-age=31536000, immutable'
    >>> cache_control("models/mnist.0123456789abcdef.bin")
    'public, max-age=31536000, immutable'
    >>> cache_control("pyrite.js")
    'no-cache'
    """
    return IMMUTABLE if _HASHED.fullmatch(relative) else REVALIDATE


def default_dir() -> Path:
    """Where `pyrite serve` builds the bundle: $PYRITE_WEB_DIR, else ~/.cache/pyrite/web (the
    builder's `default_bundle()`, so both agree)."""
    return wasm_build.default_bundle().expanduser()


def check(web_dir: Path) -> Path:
    """`web_dir` if it holds a web bundle (its `pyrite.js`), else ServeSetupError."""
    if not (web_dir / ENTRY).is_file():
        raise ServeSetupError(f"{web_dir} is not a web bundle (no {ENTRY}); build one with "
                              f"`python -m pyrite.wasm build --out DIR`, or run `pyrite serve` "
                              f"without --web")
    return web_dir


def build(out_dir: Path | None = None) -> Path:
    """Build the web bundle into `out_dir` (default `default_dir()`) and return it, checked.

    The one place the server calls the builder: `pyrite serve` without --web, and
    `create_app()` without a folder.
    """
    out_dir = out_dir or default_dir()
    try:
        wasm_build.build(out_dir)
    except Exception as exc:  # noqa: BLE001 - any failure is reported with the folder and fix
        raise ServeSetupError(f"building the web bundle in {out_dir} failed: "
                              f"{type(exc).__name__}: {exc}; fix that, or pass --web DIR with "
                              f"a bundle built elsewhere") from exc
    return check(out_dir)


__all__ = ["ENTRY", "build", "cache_control", "check", "default_dir"]
