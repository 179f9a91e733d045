"""Precompressed copies of the web bundle's files: `FILE.gz`, and `FILE.br` when the optional
`brotli` module is importable (pyrite does not depend on it).

A copy is kept only where it saves at least `MIN_SAVING` of the file: JavaScript, JSON and
WebAssembly shrink by 50 to 80 %, while wheels, `python_stdlib.zip` and the f16 model records
are already compressed (2 to 7 %) and are served as they are. gzip runs at level 9 with a zero
timestamp and no file name, so the same file always gives the same bytes. `pyrite serve` and
any host that serves precompressed files (nginx's `gzip_static`, most CDNs) send these to
browsers that accept the encoding.

Compressing Pyodide's 9.6 MB WebAssembly takes about a second with gzip (and far longer with
brotli at quality 11), so copies of large files are kept in a cache folder, named by the
original's sha256: a rebuild with the same Pyodide copies them instead.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

#: a compressed copy is kept only if it is at most (1 - MIN_SAVING) of the original's size
MIN_SAVING = 0.10
#: files at least this large have their compressed copies cached between builds
CACHE_MIN_SIZE = 1 << 20
#: encodings as the `Content-Encoding` header names them -> file suffix; preferred first
SUFFIXES = {"br": ".br", "gzip": ".gz"}


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def compressors() -> dict[str, Callable[[bytes], bytes]]:
    """The encodings available here -> their compress function: gzip always, brotli when its
    module is installed."""
    found: dict[str, Callable[[bytes], bytes]] = {}
    try:
        brotli = importlib.import_module("brotli")
    except ImportError:
        pass
    else:
        def _brotli(data: bytes) -> bytes:
            return bytes(brotli.compress(data, quality=11))

        found["br"] = _brotli
    found["gzip"] = _gzip
    return found


def worth_keeping(original: int, compressed: int) -> bool:
    """Whether a compressed copy saves at least `MIN_SAVING` of the original's size.

    >>> worth_keeping(1000, 900), worth_keeping(1000, 901), worth_keeping(0, 20)
    (True, False, False)
    """
    return original > 0 and compressed <= original * (1 - MIN_SAVING)


def _write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _compressed(data: bytes, encoding: str, compress: Callable[[bytes], bytes],
                cache: Path | None) -> bytes:
    if cache is None or len(data) < CACHE_MIN_SIZE:
        return compress(data)
    kept = cache / f"{hashlib.sha256(data).hexdigest()}{SUFFIXES[encoding]}"
    if kept.is_file():
        return kept.read_bytes()
    out = compress(data)
    cache.mkdir(parents=True, exist_ok=True)
    _write(kept, out)
    return out


def precompress(root: Path, cache: Path | None = None) -> dict[str, list[str]]:
    """Write the worthwhile compressed copies of every file under `root` beside it; returns
    each compressed file's path (relative, `/`-separated) -> the encodings written."""
    found = compressors()
    written: dict[str, list[str]] = {}
    suffixes = tuple(SUFFIXES.values())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name.endswith(suffixes):
            continue
        data = path.read_bytes()
        for encoding, compress in found.items():
            out = _compressed(data, encoding, compress, cache)
            if worth_keeping(len(data), len(out)):
                path.with_name(path.name + SUFFIXES[encoding]).write_bytes(out)
                written.setdefault(path.relative_to(root).as_posix(), []).append(encoding)
    return written


__all__ = ["CACHE_MIN_SIZE", "MIN_SAVING", "SUFFIXES", "compressors", "precompress",
           "worth_keeping"]
