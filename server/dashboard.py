"""The native training dashboard: training events streamed to a page while the Learner runs.

Training pushes events (`pyrite.train.events`) from its own thread into a `Broadcaster`; each
page connected to `GET /train/events` (server-sent events) first gets every event since the run
started, then the live ones, and the stream ends after the run's `end` event. `GET /train/live`
is the page (demos/train/page/live.html + live.js), drawing with the same dashboard component
as the in-page training page (demos/page/dashboard.js, at /demos/shared/dashboard.js).

    server = DashboardServer()               # uvicorn in a background thread, a free port
    print(server.live_url)
    learner = builder.renderer(MultiRenderer(default_renderer(), server.renderer())).build(...)
    ...
    server.stop()

`pyrite train mnist --dashboard` does this. `create_app(dashboard=broadcaster)` adds the same
routes to `pyrite serve`'s app. This module owns the streaming; the drawing is the page's.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from pyrite.train import EventRenderer, Interrupter
from pyrite.train.events import Event

from .errors import http_error, server_error
from .folders import shared_page_dir
from .pages import SHARED
from .run import base_url, bind
from .static import StaticFolder

KEEPALIVE_S = 15.0  # a comment line this often keeps proxies from closing an idle stream
RETRY_MS = 2000  # how soon EventSource reconnects after a dropped connection
LIVE_PAGE = "live.html"


def _plain(value: Any) -> Any:
    """`value` with NaN and infinities as None, all the way down (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def event_json(event: Event) -> str:
    """One event as compact JSON (NaN -> null).

    >>> event_json({"type": "step", "metrics": {"Loss": float("nan")}})
    '{"type":"step","metrics":{"Loss":null}}'
    """
    return json.dumps(_plain(event), separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class _Sent:
    id: int
    type: str
    text: str


class _Subscriber:
    """One connected stream: an asyncio queue fed from any thread through its loop."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[_Sent | None] = asyncio.Queue()

    def put(self, item: _Sent | None) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # its loop has closed: the client is gone
            pass


class Broadcaster:
    """Fans training events out to every connected stream; thread-safe.

    `publish(event)` from any thread (the training thread); a `start` event begins a new run
    and forgets the previous one's events. A stream that subscribes gets the run's events so
    far, then each new one. `close()` ends every stream (the server is stopping).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._history: list[_Sent] = []
        self._subscribers: set[_Subscriber] = set()
        self._next_id = 1
        self._closed = False
        # event ids are "<token>.<n>": a page reconnecting to another server process (another
        # token) gets the whole run again, not what follows an unrelated number
        self.token = secrets.token_hex(4)
        self.ends_delivered = 0  # streams that sent their client the run's `end`

    def publish(self, event: Event) -> None:
        """Send `event` (a JSON-able dict with a "type") to every stream, now and later."""
        text = event_json(event)
        with self._lock:
            if event.get("type") == "start":
                self._history.clear()
            sent = _Sent(self._next_id, str(event.get("type")), text)
            self._next_id += 1
            self._history.append(sent)
            for subscriber in self._subscribers:  # in the lock: every stream sees one order
                subscriber.put(sent)

    def events(self) -> list[Event]:
        """The current run's events so far (for tests and tools)."""
        with self._lock:
            return [json.loads(sent.text) for sent in self._history]

    def after(self, last_event_id: str | None) -> int:
        """The number of the last event a reconnecting client saw (0: none of this server's).

        >>> b = Broadcaster()
        >>> b.after(f"{b.token}.7"), b.after("other.7"), b.after(None)
        (7, 0, 0)
        """
        token, _, number = (last_event_id or "").partition(".")
        return int(number) if token == self.token and number.isdigit() else 0

    def _subscribe(self, after: int) -> tuple[list[_Sent], _Subscriber]:
        subscriber = _Subscriber()
        with self._lock:
            backlog = [sent for sent in self._history if sent.id > after]
            if self._closed:
                subscriber.put(None)
            else:
                self._subscribers.add(subscriber)
        return backlog, subscriber

    def _unsubscribe(self, subscriber: _Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(subscriber)

    @property
    def streams(self) -> int:
        """How many streams are connected."""
        with self._lock:
            return len(self._subscribers)

    def _ended(self) -> None:
        with self._lock:
            self.ends_delivered += 1

    def close(self) -> None:
        """End every stream, and the streams of later subscribers after their backlog."""
        with self._lock:
            self._closed = True
            for subscriber in self._subscribers:
                subscriber.put(None)

    async def stream(self, after: int = 0, keepalive_s: float = KEEPALIVE_S
                     ) -> AsyncIterator[str]:
        """The server-sent events text for one client: `retry`, then `id:`/`data:` pairs for
        the events after number `after` (see `after()`), with keep-alive comments; ends after
        an `end` event."""
        backlog, subscriber = self._subscribe(after)
        try:
            yield f"retry: {RETRY_MS}\n\n"
            for sent in backlog:
                yield f"id: {self.token}.{sent.id}\ndata: {sent.text}\n\n"
                if sent.type == "end":
                    self._ended()
                    return
            while True:
                try:
                    item = await asyncio.wait_for(subscriber.queue.get(), keepalive_s)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                if item is None:
                    return
                yield f"id: {self.token}.{item.id}\ndata: {item.text}\n\n"
                if item.type == "end":
                    self._ended()
                    return
        finally:
            self._unsubscribe(subscriber)


def process_memory(path: str = "/proc/self/statm") -> int | None:
    """This process's resident memory in bytes (Linux), or None where it cannot be read."""
    try:
        pages = int(Path(path).read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


class DashboardRenderer(EventRenderer):
    """An `EventRenderer` publishing to `broadcaster`; memory in use is the process's resident
    memory unless `memory` says otherwise. Use it beside the terminal view:
    `MultiRenderer(default_renderer(), DashboardRenderer(broadcaster))`."""

    def __init__(self, broadcaster: Broadcaster, *,
                 memory: Callable[[], int | None] | None = process_memory,
                 interval_s: float = 0.05, interrupter: Interrupter | None = None) -> None:
        super().__init__(broadcaster.publish, memory=memory, interval_s=interval_s,
                         interrupter=interrupter)
        self.broadcaster = broadcaster


def live_page_dir() -> Path | None:
    """demos/train/page/, which holds the live page; None where pyrite is not plain files."""
    page = files("pyrite.demos") / "train" / "page"
    return page if isinstance(page, Path) else None


class DashboardRoutes:
    """`/train/live` (the page), `/train/live.js` (its script) and `/train/events` (the
    stream of `broadcaster`'s events), for any Starlette app."""

    def __init__(self, broadcaster: Broadcaster, *, page_dir: Path | None = None,
                 keepalive_s: float = KEEPALIVE_S) -> None:
        self.broadcaster = broadcaster
        self.keepalive_s = keepalive_s
        folder = page_dir if page_dir is not None else live_page_dir()
        self.page = None if folder is None else StaticFolder(folder,
                                                             label="the live dashboard page")

    def routes(self) -> list[BaseRoute]:
        return [Route("/train/live", self.live, methods=["GET"]),
                Route("/train/live.js", self.script, methods=["GET"]),
                Route("/train/events", self.events, methods=["GET"])]

    def _file(self, request: Request, name: str) -> Response:
        if self.page is None:
            raise HTTPException(404, "the live dashboard page is not installed "
                                "(pyrite/demos/train/page/ is missing)")
        return self.page.response(request, name)

    async def live(self, request: Request) -> Response:
        """The live dashboard page."""
        return self._file(request, LIVE_PAGE)

    async def script(self, request: Request) -> Response:
        """The live dashboard page's script."""
        return self._file(request, "live.js")

    async def events(self, request: Request) -> Response:
        """The run's events as server-sent events (after `Last-Event-ID` on a reconnect)."""
        after = self.broadcaster.after(request.headers.get("last-event-id"))
        return StreamingResponse(
            self.broadcaster.stream(after, self.keepalive_s), media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def dashboard_app(broadcaster: Broadcaster, *, keepalive_s: float = KEEPALIVE_S) -> Starlette:
    """A small app serving only the dashboard: its routes, the pages' shared files, `/`
    (redirects to the page) and `/healthz`."""
    from .app import NoSniff

    async def home(request: Request) -> Response:
        return RedirectResponse("/train/live", status_code=307)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "streams": broadcaster.streams})

    routes: list[BaseRoute] = [Route("/", home, methods=["GET"]),
                               Route("/healthz", health, methods=["GET"])]
    routes += DashboardRoutes(broadcaster, keepalive_s=keepalive_s).routes()
    shared_dir = shared_page_dir()
    if shared_dir is not None:
        shared = StaticFolder(shared_dir, label="the demo pages' shared files")

        async def shared_file(request: Request) -> Response:
            return shared.response(request, request.path_params["path"])

        routes.append(Route(f"/demos/{SHARED}/{{path:path}}", shared_file, methods=["GET"]))
    return Starlette(routes=routes, middleware=[Middleware(NoSniff)],
                     exception_handlers={HTTPException: http_error, Exception: server_error})


class DashboardServer:
    """The dashboard app under uvicorn in a background thread, listening once constructed.

    `port=0` takes a free port; `url` is the server's (`http://127.0.0.1:PORT/`), `live_url`
    the page's. `stop()` ends the streams and the server. A context manager, too.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 broadcaster: Broadcaster | None = None, keepalive_s: float = KEEPALIVE_S,
                 start_s: float = 30.0) -> None:
        self.broadcaster = broadcaster if broadcaster is not None else Broadcaster()
        self._sock = bind(host, port)
        self.port = int(self._sock.getsockname()[1])
        self.url = base_url(host, self.port)
        self.live_url = self.url + "train/live"
        config = uvicorn.Config(dashboard_app(self.broadcaster, keepalive_s=keepalive_s),
                                log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="pyrite-dashboard", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + start_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the dashboard server did not start on {self.url}")
            time.sleep(0.01)

    def renderer(self, *, interval_s: float = 0.05, interrupter: Interrupter | None = None,
                 memory: Callable[[], int | None] | None = process_memory) -> DashboardRenderer:
        """A `DashboardRenderer` publishing to this server's page."""
        return DashboardRenderer(self.broadcaster, memory=memory, interval_s=interval_s,
                                 interrupter=interrupter)

    def wait_for_pages(self, timeout_s: float) -> bool:
        """Keep serving until a page has received the run's end and every page has left, or
        for `timeout_s` seconds; True in the first case."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.broadcaster.ends_delivered and not self.broadcaster.streams:
                return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        """End the streams, then the server (idempotent)."""
        self.broadcaster.close()
        self._server.should_exit = True
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> DashboardServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["KEEPALIVE_S", "Broadcaster", "DashboardRenderer", "DashboardRoutes",
           "DashboardServer", "dashboard_app", "event_json", "live_page_dir", "process_memory"]
