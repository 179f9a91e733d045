"""Serving the files of one folder, safely: every static route of the server goes through here.

Owns the path checks (a request can never reach a file outside its folder), the media types
(a fixed table, not the OS's mimetypes database, whose answers differ between machines), ETags
with 304 answers, the Cache-Control header chosen by the caller's policy and, for folders that
hold precompressed copies (`FILE.br`, `FILE.gz`, as the web bundle does), the choice of the
copy the client's Accept-Encoding takes. It knows nothing of what the folders hold; `bundle.py`
and `app.py` decide that.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response

# files whose URL changes when their content does: cache them for a year, never revalidate
IMMUTABLE = "public, max-age=31536000, immutable"
# files that may change under the same URL: the browser revalidates each time (ETag -> 304)
REVALIDATE = "no-cache"

_TEXT = "; charset=utf-8"
MEDIA_TYPES: dict[str, str] = {
    ".html": "text/html" + _TEXT,
    ".js": "text/javascript" + _TEXT,
    ".mjs": "text/javascript" + _TEXT,
    ".css": "text/css" + _TEXT,
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".whl": "application/zip",  # a wheel is a zip archive
    ".zip": "application/zip",
    ".tar": "application/x-tar",
    ".gz": "application/gzip",
    ".bin": "application/octet-stream",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain" + _TEXT,
    ".md": "text/plain" + _TEXT,
    ".py": "text/plain" + _TEXT,
    ".ts": "text/plain" + _TEXT,  # pyodide.d.ts: a type declaration to read, not a video
}
FALLBACK_MEDIA_TYPE = "application/octet-stream"

#: precompressed copies, preferred first: (Content-Encoding, file suffix)
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))

CachePolicy = Callable[[str], str]
"""Maps a file's path inside its folder (`wheels/ab12.../x.whl`) to its Cache-Control value."""


def media_type(name: str) -> str:
    """The Content-Type for a file name, from `MEDIA_TYPES` (case-insensitive suffix).

    >>> media_type("pyodide.asm.wasm"), media_type("worker.js"), media_type("README")
    ('application/wasm', 'text/javascript; charset=utf-8', 'application/octet-stream')
    """
    return MEDIA_TYPES.get(PurePosixPath(name).suffix.lower(), FALLBACK_MEDIA_TYPE)


def safe_file(root: Path, relative: str) -> Path | None:
    """The regular file at `relative` (a URL path, `/`-separated) under `root`, or None.

    None for anything that could leave `root` or expose what is not meant to be served: NUL
    bytes, backslashes, absolute or empty segments (`//`), `.` and `..`, hidden names (`.git`),
    and any path whose fully resolved target (symlinks followed) lies outside the resolved root.

    >>> safe_file(Path("/usr"), "../etc/passwd") is None
    True
    """
    if not relative or "\0" in relative or "\\" in relative:
        return None
    parts = relative.split("/")
    if any(not part or part.startswith(".") for part in parts):
        return None
    try:
        base = root.resolve(strict=True)
        target = base.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, unreadable, too long, a symlink loop
        return None
    if not target.is_relative_to(base) or not target.is_file():
        return None
    return target


def _etag(st: os.stat_result, encoding: str | None = None) -> str:
    # from the modification time and size, as nginx does: no need to read the file; each
    # encoding of a file has its own
    return f'"{st.st_mtime_ns:x}-{st.st_size:x}{"-" + encoding if encoding else ""}"'


def accepted_encodings(header: str) -> dict[str, float]:
    """An Accept-Encoding header's codings (lowercase) -> their q-value.

    >>> accepted_encodings("gzip, deflate, br;q=0.5, zstd;q=0")
    {'gzip': 1.0, 'deflate': 1.0, 'br': 0.5, 'zstd': 0.0}
    """
    found: dict[str, float] = {}
    for part in header.split(","):
        name, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if name:
            found[name.lower()] = q
    return found


def choose_encoding(header: str, available: list[str]) -> str | None:
    """The encoding to send among `available` (in `ENCODINGS`' order of preference) for an
    Accept-Encoding header, or None for the file as it is.

    >>> choose_encoding("gzip, br", ["br", "gzip"]), choose_encoding("br;q=0, *", ["br", "gzip"])
    ('br', 'gzip')
    >>> choose_encoding("", ["gzip"]) is None, choose_encoding("identity", ["gzip"]) is None
    (True, True)
    """
    accepted = accepted_encodings(header)
    for name in available:
        if accepted.get(name, accepted.get("*", 0.0)) > 0:
            return name
    return None


def add_vary(headers: MutableHeaders | dict[str, str], name: str) -> None:
    """Add `name` to a response's Vary header, keeping what it names already."""
    names = [n.strip() for n in (headers.get("vary") or headers.get("Vary") or "").split(",")
             if n.strip()]
    if name.lower() not in (n.lower() for n in names):
        headers["Vary"] = ", ".join([*names, name])


def _matches(if_none_match: str, etag: str) -> bool:
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


class StaticFolder:
    """The files of one folder, served by `response(request, relative_path)`.

    `cache` is a Cache-Control value or a `CachePolicy`; `index` is the file served for the
    folder itself (an empty path). Every response carries an ETag; a matching If-None-Match
    gets a 304. With `precompressed`, a file that has a `FILE.br` or `FILE.gz` copy beside it
    is answered with `Vary: Accept-Encoding`, and with the copy the client accepts (its own
    ETag, `Content-Encoding`, the original's Content-Type); a request for a byte range gets
    the file as it is. A `.gz` file asked for by name is just a file.
    """

    def __init__(self, root: Path, cache: str | CachePolicy = REVALIDATE, *,
                 index: str | None = None, label: str | None = None,
                 precompressed: bool = False) -> None:
        self.root = root
        self.index = index
        self.label = label or root.name
        self.precompressed = precompressed
        self._cache = cache

    def find(self, relative: str) -> Path | None:
        """The file served for `relative`, or None (missing or refused by `safe_file`)."""
        if not relative and self.index is not None:
            relative = self.index
        return safe_file(self.root, relative)

    def cache_control(self, relative: str) -> str:
        """The Cache-Control value for `relative`."""
        return self._cache if isinstance(self._cache, str) else self._cache(relative)

    def _copies(self, relative: str) -> dict[str, Path]:
        """The precompressed copies of `relative` that exist: encoding -> file."""
        if not self.precompressed:
            return {}
        relative = relative or self.index or ""
        found = {name: safe_file(self.root, relative + suffix) for name, suffix in ENCODINGS}
        return {name: path for name, path in found.items() if path is not None}

    def response(self, request: Request, relative: str) -> Response:
        """The file or its precompressed copy (GET/HEAD, ranges allowed), a 304, or
        HTTPException(404)."""
        path = self.find(relative)
        if path is None:
            raise HTTPException(404, f"nothing at {request.url.path} (no such file in "
                                f"{self.label}); the demos are listed at /")
        headers = {"Cache-Control": self.cache_control(relative or path.name)}
        copies = self._copies(relative)
        encoding = None
        if copies:
            add_vary(headers, "Accept-Encoding")
            if "range" not in request.headers:
                encoding = choose_encoding(request.headers.get("accept-encoding", ""),
                                           list(copies))
        served = copies[encoding] if encoding else path
        st = served.stat()
        headers["ETag"] = _etag(st, encoding)
        if encoding:
            headers["Content-Encoding"] = encoding
        if _matches(request.headers.get("if-none-match", ""), headers["ETag"]):
            return Response(status_code=304, headers=headers)
        return FileResponse(served, headers=headers, media_type=media_type(path.name),
                            stat_result=st)


__all__ = ["ENCODINGS", "FALLBACK_MEDIA_TYPE", "IMMUTABLE", "MEDIA_TYPES", "REVALIDATE",
           "CachePolicy", "StaticFolder", "accepted_encodings", "add_vary", "choose_encoding",
           "media_type", "safe_file"]
