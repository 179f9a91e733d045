"""The web bundle's routes: the bundle at `/web/` (its example page at `/web/`) and at the root
(`/pyrite.js`, `/pyodide/...`, `/wheels/...`, `/models/...`, `/kernels/...`), the same folder
both ways, with precompressed copies for clients that accept them and CORS for the allowed
origins (cors.py).

The root route matches every path and method, after every other route, so the router never
answers by itself: a path that an earlier route serves with other methods gets a 405 naming
them; else a GET or HEAD gets the bundle's file, a CORS preflight from an allowed origin a 204,
another method a 405 if that file exists and a 404 if it does not.
"""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Match, Route

from . import bundle
from .cors import Cors
from .static import StaticFolder

PREFIX = "/web"
INDEX = "index.html"
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class BundleRoutes:
    """The routes serving the bundle in `web_dir`, with `cors` for its files."""

    def __init__(self, web_dir: Path, cors: Cors) -> None:
        self.cors = cors
        self.root = StaticFolder(web_dir, bundle.cache_control, label="the web bundle",
                                 precompressed=True)
        self.web = StaticFolder(web_dir, bundle.cache_control, index=INDEX,
                                label="the web bundle", precompressed=True)

    def serve(self, request: Request, folder: StaticFolder, path: str) -> Response:
        """A bundle file's answer to any method (see the module's text)."""
        if request.method == "OPTIONS" and folder.find(path) is not None:
            preflight = self.cors.preflight(request)
            if preflight is not None:
                return preflight
        if request.method not in ("GET", "HEAD"):
            if folder.find(path) is None:
                raise HTTPException(404)
            raise HTTPException(405, headers={"Allow": "GET, HEAD"})
        response = folder.response(request, path)
        self.cors.add_headers(request, response.headers)
        return response

    async def redirect(self, request: Request) -> Response:
        """`/web` -> `/web/`, where the bundle's relative URLs resolve."""
        return RedirectResponse(PREFIX + "/", status_code=308)

    async def prefixed(self, request: Request) -> Response:
        """A file of the bundle under `/web/` (`/web/` itself: its example page)."""
        return self.serve(request, self.web, request.path_params["path"])

    def routes(self, before: list[BaseRoute]) -> list[BaseRoute]:
        """`/web`, `/web/{path}`, and the root fallback, to follow the routes `before`."""
        async def fallback(request: Request) -> Response:
            for route in before:
                if isinstance(route, Route) and route.matches(request.scope)[0] == Match.PARTIAL:
                    allowed = ", ".join(sorted(route.methods or ()))
                    raise HTTPException(405, headers={"Allow": allowed})
            return self.serve(request, self.root, request.path_params["path"])

        return [Route(PREFIX, self.redirect, methods=["GET"]),
                Route(PREFIX + "/{path:path}", self.prefixed, methods=_METHODS),
                Route("/{path:path}", fallback, methods=_METHODS)]


__all__ = ["INDEX", "PREFIX", "BundleRoutes"]
