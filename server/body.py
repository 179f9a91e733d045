"""Reading a request's JSON body with a size limit.

The limit is enforced while the body streams in, so a chunked upload with no Content-Length
(or a lying one) is cut off at `limit` bytes instead of filling the server's memory.
"""

from __future__ import annotations

import json
import sys

from starlette.exceptions import HTTPException
from starlette.requests import Request

DEFAULT_MAX_BODY = 10_000_000  # bytes; an MNIST request is about 4 kB


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"the request body is larger than {limit} bytes; send less, or "
                         f"start the server with a larger --max-body")


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, or HTTPException 413 past `limit` bytes (400 for a bad Content-Length)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise HTTPException(400, f"bad Content-Length header {declared!r}")
        if int(declared) > limit:
            raise _too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def parse_json(body: bytes, example: str) -> object:
    """The JSON value in `body`, or HTTPException 400 that shows `example`, a valid body."""
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HTTPException(400, f"the body is not valid JSON ({exc}); send a JSON object "
                            f"such as {example}") from exc
    except RecursionError as exc:
        raise HTTPException(400, "the body's JSON is nested too deeply; send a JSON object "
                            f"such as {example}") from exc
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        raise HTTPException(400, f"the body holds an integer of more than "
                            f"{sys.get_int_max_str_digits():,} digits; send a JSON object such "
                            f"as {example}") from exc


__all__ = ["DEFAULT_MAX_BODY", "parse_json", "read_body"]
