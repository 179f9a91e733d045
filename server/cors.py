"""Cross-origin access to the web bundle: `pyrite serve --allow-origin ORIGIN`.

A page on another origin loads `pyrite.js` with `<script type="module">` or `import()`, which
are CORS requests, and the worker fetches the bundle's files with `fetch()`: the browser uses
the answers only if they name the page's origin in `Access-Control-Allow-Origin`. So the
bundle's files (never the API, never the demo pages) carry, for an allowed Origin:

    Access-Control-Allow-Origin: <that origin>      (or `*` when `*` is allowed)
    Cross-Origin-Resource-Policy: cross-origin      (pages that are cross-origin isolated need it)
    Vary: Origin                                    (caches keep one answer per origin)

and an `OPTIONS` preflight from an allowed origin for GET or HEAD gets a 204 saying so. Another
origin gets none of these, so its browser refuses the files: the page cannot run pyrite.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import Response

from .errors import ServeSetupError
from .static import add_vary

METHODS = "GET, HEAD"
#: request headers a page's fetch of a bundle file may carry that are not CORS-safelisted
ALLOWED_HEADERS = "Cache-Control, If-Modified-Since, If-None-Match, Pragma, Range"
PREFLIGHT_MAX_AGE = "86400"  # seconds a browser may reuse a preflight's answer
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalise_origin(value: str) -> str:
    """An `--allow-origin` value as browsers send the Origin header: `*`, or
    `scheme://host[:port]` in lowercase without a default port; ServeSetupError otherwise.

    >>> normalise_origin("HTTP://Example.org:80/"), normalise_origin("http://127.0.0.1:8123")
    ('http://example.org', 'http://127.0.0.1:8123')
    """
    if value == "*":
        return value
    parts = urlsplit(value.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (parts.scheme not in _DEFAULT_PORTS or not parts.hostname or port == -1
            or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username):
        raise ServeSetupError(f"--allow-origin {value!r}: give an origin such as "
                              f"http://127.0.0.1:8123 or https://example.org (scheme, host and "
                              f"port only), or * for every origin")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    keep_port = port is not None and port != _DEFAULT_PORTS[parts.scheme]
    return f"{parts.scheme}://{host}{f':{port}' if keep_port else ''}"


class Cors:
    """The CORS rules for the bundle's files, from the allowed origins (none: no CORS)."""

    def __init__(self, origins: Iterable[str] = ()) -> None:
        self.origins = frozenset(normalise_origin(o) for o in origins)

    def allowed(self, request: Request) -> str | None:
        """The Access-Control-Allow-Origin value for this request, or None."""
        origin = request.headers.get("origin")
        if "*" in self.origins:
            return "*"
        return origin if origin in self.origins else None

    def add_headers(self, request: Request, headers: MutableHeaders | dict[str, str]) -> None:
        """Add the CORS headers a bundle file's response gets for this request."""
        if not self.origins:
            return
        if "*" not in self.origins:
            add_vary(headers, "Origin")  # the answer depends on who asks
        allow = self.allowed(request)
        if allow is not None:
            headers["Access-Control-Allow-Origin"] = allow
            headers["Cross-Origin-Resource-Policy"] = "cross-origin"

    def preflight(self, request: Request) -> Response | None:
        """The 204 answer to an allowed origin's preflight for GET or HEAD, else None (the
        request is not one: the caller answers it as any other OPTIONS)."""
        method = request.headers.get("access-control-request-method", "")
        if (request.method != "OPTIONS" or "origin" not in request.headers
                or method.upper() not in ("GET", "HEAD") or self.allowed(request) is None):
            return None
        response = Response(status_code=204, headers={
            "Access-Control-Allow-Methods": METHODS,
            "Access-Control-Allow-Headers": ALLOWED_HEADERS,
            "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
            "Allow": f"{METHODS}, OPTIONS",
        })
        self.add_headers(request, response.headers)
        return response


__all__ = ["ALLOWED_HEADERS", "METHODS", "Cors", "normalise_origin"]
