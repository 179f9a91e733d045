"""The Starlette app behind `pyrite serve`: demo pages, the web bundle, Pyodide and the API.

Routes, in the order they are tried:
    /healthz, /api/*          the JSON API (api.py)
    /api/samples, /samples/*  the sample photos of the classification page (samples.py)
    /data/mnist/*             MNIST's files, for the training page (datasets.py)
    /data/packs/NAME.pyds     dataset packs from $PYRITE_DATA/packs, for the training page
    /train/live, /train/events  the live training dashboard, when given one (dashboard.py)
    /                         home page listing the demos
    /{demo}, /demos/{demo}/*  each demo's page folder, /demos/shared/* what they share
                              (pages.py)
    /pyodide-packages/*       a full Pyodide distribution's packages, when given a folder
    /web/*                    the web bundle (web.py), with CORS for `allow_origins`
    /*                        the same bundle at the root: pyrite.js, pyodide/, wheels/, ...
Every static file goes through static.py; every error is JSON (errors.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pyrite.dataset.download import data_root
from pyrite.demos import registry

from . import bundle, folders
from .api import Api
from .batching import QUEUE_SIZE, PredictionQueue
from .body import DEFAULT_MAX_BODY
from .bundle import PYODIDE_CACHE
from .cors import Cors
from .dashboard import Broadcaster, DashboardRoutes
from .datasets import Datasets
from .errors import ServeSetupError, http_error, server_error
from .pages import Pages
from .predictor import Predictor
from .samples import Samples
from .static import StaticFolder
from .web import BundleRoutes


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


def create_app(
    web_dir: Path | None = None,
    *,
    pyodide_dir: Path | None = None,
    pyodide_packages: str | Path | None = None,
    api_device: str = "numpy",
    max_body: int = DEFAULT_MAX_BODY,
    demo_pages: Mapping[str, Path] | None = None,
    allow_origins: Iterable[str] = (),
    samples_dir: Path | None = None,
    dashboard: Broadcaster | None = None,
    queue_size: int = QUEUE_SIZE,
) -> Starlette:
    """The server's app, serving the web bundle in `web_dir` (checked: it holds pyrite.js and
    its Pyodide); without one, the bundle is built first into `bundle.default_dir()`, as
    `pyrite serve` does, with the Pyodide runtime of `pyodide_dir` (default the npm package
    under wasm/node_modules; ServeSetupError if it is missing). A bundle given carries its own
    Pyodide, so `pyodide_dir` goes only without `web_dir`.

    `pyodide_packages` is a folder to serve at /pyodide-packages/ or a URL to announce in
    /api/config; `api_device` runs /api/predict; `max_body` caps request bodies (bytes);
    `demo_pages` maps demo pages' URL names to their folders (default: each registry model's
    page, `demos/<package>/page/`); `allow_origins` are the origins (or `*`) whose pages may
    load the bundle's files (CORS); `samples_dir` holds the sample photos the classification
    page offers (default `$PYRITE_DATA/samples/`); `dashboard` adds the live training
    dashboard of that broadcaster's events (/train/live, /train/events; see dashboard.py);
    `queue_size` predictions at most wait or run at once (more get a 503; batching.py).
    """
    if max_body <= 0:
        raise ServeSetupError(f"max_body must be a positive number of bytes, got {max_body}")
    if queue_size <= 0:
        raise ServeSetupError(f"queue_size must be at least 1, got {queue_size}")
    if web_dir is not None and pyodide_dir is not None:
        raise ServeSetupError("--pyodide DIR is what a bundle is built from, and a bundle given "
                              "with --web carries its own pyodide/: give one of them")
    cors = Cors(allow_origins)
    packages = folders.PyodidePackages.parse(pyodide_packages)
    if web_dir is None:
        web = bundle.build(pyodide_dir=folders.check_pyodide_dir(
            pyodide_dir or folders.default_pyodide_dir()))
    else:
        web = bundle.check(web_dir)
    names = registry.names()
    pages = folders.demo_pages(names) if demo_pages is None else dict(demo_pages)
    descriptions = {demo.page: demo.description for demo in map(registry.get, names)}
    descriptions.update({page: text for page, (_, text) in registry.PAGES.items()})
    packages_url = "/pyodide-packages/" if packages.folder is not None else packages.url

    routes: list[BaseRoute] = []
    predictor = Predictor(api_device)
    routes += Api(predictor, max_body=max_body, pyodide_packages=packages_url,
                  queue=PredictionQueue(predictor, size=queue_size)).routes()
    routes += Samples(samples_dir or folders.default_samples_dir()).routes()
    routes += Datasets(data_root(None) / "mnist").routes()
    if dashboard is not None:
        routes += DashboardRoutes(dashboard).routes()
    routes += Pages(pages, descriptions, folders.shared_page_dir()).routes()
    if packages.folder is not None:
        routes.append(_static("/pyodide-packages", StaticFolder(
            packages.folder, PYODIDE_CACHE, label="the Pyodide packages")))
    routes += BundleRoutes(web, cors).routes(list(routes))
    return Starlette(routes=routes, middleware=[Middleware(NoSniff)],
                     exception_handlers={HTTPException: http_error, Exception: server_error})


__all__ = ["PYODIDE_CACHE", "NoSniff", "create_app"]
