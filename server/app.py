"""The Starlette app behind `pyrite serve`: demo pages, the web bundle, Pyodide and the API.

Routes, in the order they are tried:
    /healthz, /api/*          the JSON API (api.py)
    /                         home page listing the demos
    /{demo}, /demos/{demo}/*  each demo's page folder (pages.py)
    /pyodide/*                the Pyodide runtime (npm package pinned in wasm/package.json)
    /pyodide-packages/*       a full Pyodide distribution's packages, when given a folder
    /*                        the web bundle: pyrite.js, worker.js, manifest.json, wheels/, models/
Every static file goes through static.py; every error is JSON (errors.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pyrite.demos import registry

from . import bundle, folders
from .api import Api
from .body import DEFAULT_MAX_BODY
from .errors import ServeSetupError, http_error, server_error
from .pages import Pages
from .predictor import Predictor
from .static import StaticFolder

# Pyodide's file names carry no hash, but its version is pinned (wasm/package.json) and changes
# only with a deliberate upgrade: a day of caching saves re-downloading ~10 MB per visit, and a
# stale copy after an upgrade lasts at most a day (or until a hard reload).
PYODIDE_CACHE = "public, max-age=86400"


class NoSniff:
    """Adds `X-Content-Type-Options: nosniff` to every response: browsers must trust the
    Content-Type (a .js served as text/plain must not run)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["X-Content-Type-Options"] = "nosniff"
            await send(message)

        await self.app(scope, receive, send_with_header)


def _static(prefix: str, folder: StaticFolder) -> Route:
    async def endpoint(request: Request) -> Response:
        return folder.response(request, request.path_params["path"])

    endpoint.__doc__ = f"A file of {folder.label}."
    return Route(prefix + "/{path:path}", endpoint, methods=["GET"])


_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _fallback(folder: StaticFolder, before: list[BaseRoute]) -> Route:
    # Matches every path and method, so the router never answers by itself: a path that an
    # earlier route serves with other methods gets a 405 naming them; else a GET or HEAD gets
    # the bundle's file, another method a 405 if that file exists and a 404 if it does not.
    async def endpoint(request: Request) -> Response:
        for route in before:
            if isinstance(route, Route) and route.matches(request.scope)[0] == Match.PARTIAL:
                allowed = ", ".join(sorted(route.methods or ()))
                raise HTTPException(405, headers={"Allow": allowed})
        path = request.path_params["path"]
        if request.method not in ("GET", "HEAD"):
            if folder.find(path) is None:
                raise HTTPException(404)
            raise HTTPException(405, headers={"Allow": "GET, HEAD"})
        return folder.response(request, path)

    return Route("/{path:path}", endpoint, methods=_METHODS)


def create_app(
    web_dir: Path | None = None,
    *,
    pyodide_dir: Path | None = None,
    pyodide_packages: str | Path | None = None,
    api_device: str = "numpy",
    max_body: int = DEFAULT_MAX_BODY,
    demo_pages: Mapping[str, Path] | None = None,
) -> Starlette:
    """The server's app, serving the web bundle in `web_dir` (checked: it holds pyrite.js);
    without one, the bundle is built first into `bundle.default_dir()`, as `pyrite serve` does.

    `pyodide_dir` defaults to the npm package under wasm/node_modules (ServeSetupError if it
    is missing); `pyodide_packages` is a folder to serve at /pyodide-packages/ or a URL to
    announce in /api/config; `api_device` runs /api/predict; `max_body` caps request bodies
    (bytes); `demo_pages` maps demo names to page folders (default: each registry
    model's `demos/<name>/page/`).
    """
    if max_body <= 0:
        raise ServeSetupError(f"max_body must be a positive number of bytes, got {max_body}")
    pyodide = folders.check_pyodide_dir(pyodide_dir or folders.default_pyodide_dir())
    web = bundle.build() if web_dir is None else bundle.check(web_dir)
    packages = folders.PyodidePackages.parse(pyodide_packages)
    names = registry.names()
    pages = folders.demo_pages(names) if demo_pages is None else dict(demo_pages)
    descriptions = {name: registry.get(name).description for name in names}
    packages_url = "/pyodide-packages/" if packages.folder is not None else packages.url

    routes: list[BaseRoute] = []
    routes += Api(Predictor(api_device), max_body=max_body,
                  pyodide_packages=packages_url).routes()
    routes += Pages(pages, descriptions).routes()
    routes.append(_static("/pyodide",
                          StaticFolder(pyodide, PYODIDE_CACHE, label="the Pyodide runtime")))
    if packages.folder is not None:
        routes.append(_static("/pyodide-packages", StaticFolder(
            packages.folder, PYODIDE_CACHE, label="the Pyodide packages")))
    routes.append(_fallback(StaticFolder(web, bundle.cache_control, label="the web bundle"),
                            list(routes)))
    return Starlette(routes=routes, middleware=[Middleware(NoSniff)],
                     exception_handlers={HTTPException: http_error, Exception: server_error})


__all__ = ["PYODIDE_CACHE", "NoSniff", "create_app"]
