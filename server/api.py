"""The JSON API: `/healthz`, `/api/config`, `/api/models` and `/api/predict/{model}`.

Errors are JSON (see errors.py): an unknown model is a 404 naming the known ones, a body that
is not JSON (or not a JSON object) a 400, a JSON object that is not a valid input (a missing,
unknown or mistyped field, a number out of range, a list of the wrong length) a 422 naming the
field and showing a valid body, an oversized body a 413, and a full queue a 503 with
`Retry-After` (batching.py: at most QUEUE_SIZE predictions wait or run at once).
"""

from __future__ import annotations

import logging

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

import pyrite
from pyrite.demos import registry
from pyrite.demos.inputs import NotAnObject

from .batching import Busy, PredictionQueue
from .body import DEFAULT_MAX_BODY, parse_json, read_body
from .errors import ModelLoadError, error_response
from .predictor import Predictor

log = logging.getLogger("pyrite.server")


class Api:
    """The API's endpoints over one `Predictor`; `routes()` gives them to the app.

    `pyodide_packages` is the URL pages should load Pyodide's packages from (None: nowhere).
    """

    def __init__(self, predictor: Predictor, *, max_body: int = DEFAULT_MAX_BODY,
                 pyodide_packages: str | None = None,
                 queue: PredictionQueue | None = None) -> None:
        self.predictor = predictor
        self.queue = queue or PredictionQueue(predictor)
        self.max_body = max_body
        self.pyodide_packages = pyodide_packages
        self.names = registry.names()

    def routes(self) -> list[BaseRoute]:
        """The API's routes; other methods on them get a JSON 405."""
        return [
            Route("/healthz", self.health, methods=["GET"]),
            Route("/api/config", self.config, methods=["GET"]),
            Route("/api/models", self.models, methods=["GET"]),
            Route("/api/predict/{model}", self.predict, methods=["POST"]),
        ]

    async def health(self, request: Request) -> Response:
        """`{"status": "ok", "version": ...}`."""
        return JSONResponse({"status": "ok", "version": pyrite.__version__})

    async def config(self, request: Request) -> Response:
        """Where pages find Pyodide and its packages, and the models the API runs (those
        whose files are not installed under "unavailable", with the reason)."""
        demos = [registry.get(name) for name in self.names]
        missing = {d.name: reason for d in demos if (reason := d.missing()) is not None}
        return JSONResponse({"pyodide": "/pyodide/", "pyodide_packages": self.pyodide_packages,
                             "models": [n for n in self.names if n not in missing],
                             "unavailable": missing})

    async def models(self, request: Request) -> Response:
        """Each model's name, description, input, prediction URL and page, and whether its
        files are installed (`missing`: why not, and where to put them)."""
        demos = [registry.get(name) for name in self.names]
        return JSONResponse({"models": [
            {"name": d.name, "description": d.description, "inputs": d.inputs,
             "predict": f"/api/predict/{d.name}", "page": f"/{d.page}",
             "missing": d.missing()} for d in demos]})

    async def predict(self, request: Request) -> Response:
        """The model's prediction for the JSON body: checked, queued, run natively off the event
        loop (batched with other requests for the same model)."""
        name = request.path_params["model"]
        if name not in self.names:
            raise HTTPException(404, f"unknown model {name!r}; known models: "
                                f"{', '.join(self.names)} (see /api/models)")
        demo = registry.get(name)
        try:
            with self.queue.admit():  # before the body is read: a full queue costs nothing
                return await self._predict(request, demo)
        except Busy as exc:
            return error_response(503, str(exc), {"Retry-After": str(exc.retry_after)})

    async def _predict(self, request: Request, demo: registry.DemoModel) -> Response:
        body = await read_body(request, self.max_body)
        try:  # parsed and checked off the event loop: a photo's JSON takes some milliseconds
            inputs = await run_in_threadpool(_inputs, demo, body)
        except NotAnObject as exc:
            return error_response(400, str(exc))
        except ValueError as exc:  # a field is wrong
            return error_response(422, str(exc))
        del body  # the checked inputs are smaller (a photo's pixels as bytes)
        try:
            result = await self.queue.predict(demo.name, inputs)
        except ModelLoadError as exc:
            log.error("%s", exc, exc_info=exc.__cause__)
            return error_response(503, str(exc))
        except ValueError as exc:
            return error_response(422, str(exc))
        return JSONResponse(result)


def _inputs(demo: registry.DemoModel, body: bytes) -> dict[str, object]:
    """The body's JSON (HTTPException 400 if it is not JSON), checked by the model's fields."""
    return demo.check(parse_json(body, demo.inputs))


__all__ = ["Api"]
