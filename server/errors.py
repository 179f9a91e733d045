"""The server's errors: setup problems found before serving, and every HTTP error as JSON.

Every error response is `{"error": "<what is wrong and how to fix it>"}` with its status code,
including the 404s and 405s that Starlette's router raises itself.
"""

from __future__ import annotations

from http import HTTPStatus

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from pyrite.errors import PyriteError


class ServeSetupError(PyriteError, ValueError):
    """A served folder or option is missing or invalid (found before the server starts)."""


class ModelLoadError(PyriteError, RuntimeError):
    """A demo model could not be loaded on the server's prediction device."""


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """`{"error": message}` with `status`."""
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _default_message(request: Request, status: int, headers: dict[str, str]) -> str:
    path = request.url.path
    if status == 404:
        return f"nothing at {path}; the demos are listed at /, the API at /api/models"
    if status == 405:
        allowed = headers.get("Allow") or headers.get("allow") or "another method"
        return f"{request.method} is not allowed on {path}; use {allowed}"
    return f"{HTTPStatus(status).phrase} ({path})"


async def http_error(request: Request, exc: Exception) -> Response:
    """The JSON body of an HTTPException: its detail, or a message naming the path."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    message = exc.detail
    if message == HTTPStatus(exc.status_code).phrase:  # Starlette's default detail
        message = _default_message(request, exc.status_code, headers)
    return error_response(exc.status_code, message, headers)


async def server_error(request: Request, exc: Exception) -> Response:
    """A 500 for an unexpected exception (Starlette re-raises it, so uvicorn logs the traceback)."""
    return error_response(500, f"internal error while serving {request.url.path} "
                          f"({type(exc).__name__}); the server log has the traceback")


__all__ = ["ModelLoadError", "ServeSetupError", "error_response", "http_error", "server_error"]
