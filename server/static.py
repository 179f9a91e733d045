"""Serving the files of one folder, safely: every static route of the server goes through here.

Owns the path checks (a request can never reach a file outside its folder), the media types
(a fixed table, not the OS's mimetypes database, whose answers differ between machines), ETags
with 304 answers, and the Cache-Control header chosen by the caller's policy. It knows nothing
of what the folders hold; `bundle.py` and `app.py` decide that.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

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


def _etag(st: os.stat_result) -> str:
    # from the modification time and size, as nginx does: no need to read the file
    return f'"{st.st_mtime_ns:x}-{st.st_size:x}"'


def _matches(if_none_match: str, etag: str) -> bool:
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


class StaticFolder:
    """The files of one folder, served by `response(request, relative_path)`.

    `cache` is a Cache-Control value or a `CachePolicy`; `index` is the file served for the
    folder itself (an empty path). Every response carries an ETag; a matching If-None-Match
    gets a 304.
    """

    def __init__(self, root: Path, cache: str | CachePolicy = REVALIDATE, *,
                 index: str | None = None, label: str | None = None) -> None:
        self.root = root
        self.index = index
        self.label = label or root.name
        self._cache = cache

    def find(self, relative: str) -> Path | None:
        """The file served for `relative`, or None (missing or refused by `safe_file`)."""
        if not relative and self.index is not None:
            relative = self.index
        return safe_file(self.root, relative)

    def cache_control(self, relative: str) -> str:
        """The Cache-Control value for `relative`."""
        return self._cache if isinstance(self._cache, str) else self._cache(relative)

    def response(self, request: Request, relative: str) -> Response:
        """The file (GET/HEAD, ranges allowed), a 304, or HTTPException(404)."""
        path = self.find(relative)
        if path is None:
            raise HTTPException(404, f"nothing at {request.url.path} (no such file in "
                                f"{self.label}); the demos are listed at /")
        st = path.stat()
        etag = _etag(st)
        headers = {"ETag": etag, "Cache-Control": self.cache_control(relative or path.name)}
        if _matches(request.headers.get("if-none-match", ""), etag):
            return Response(status_code=304, headers=headers)
        return FileResponse(path, headers=headers, media_type=media_type(path.name),
                            stat_result=st)


__all__ = ["FALLBACK_MEDIA_TYPE", "IMMUTABLE", "MEDIA_TYPES", "REVALIDATE", "CachePolicy",
           "StaticFolder", "media_type", "safe_file"]
