"""The caching export-web advises for a static host is the caching `pyrite serve` sends for
the same paths (pyrite/server/bundle.py), under which a repeat visit requests no runtime,
wheels or records (tests/browser/test_repeat_visit.py)."""

from __future__ import annotations

from pyrite.server import bundle
from pyrite.wasm.cli import CACHING


def test_the_advice_is_what_pyrite_serve_sends() -> None:
    for path in ("wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl",
                 "models/mnist.0123456789abcdef.bin", "kernels/mnist.0123456789abcdef.json",
                 "snapshot/python.0123456789abcdef.snapshot.gz"):
        assert f'"{bundle.cache_control(path)}"' in CACHING
        assert f"{path.split('/')[0]}/" in CACHING
    day = bundle.cache_control("pyodide/pyodide.asm.wasm")
    assert day.split(", ")[-1] in CACHING and "pyodide/" in CACHING
    assert f'"{bundle.cache_control("pyrite.js")}" for the rest' in CACHING
