"""Running the app under uvicorn: bind first, announce the URL once listening, stop cleanly.

The socket is bound before uvicorn starts, so `--port 0` gets a free port whose number is
known; the line `pyrite serve: http://HOST:PORT/` is printed (flushed, on stdout) only once
uvicorn accepts connections, so scripts and tests may wait for it and then connect.
Ctrl-C and SIGTERM stop the server gracefully and return 0.
"""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable, Sequence
from types import FrameType

import uvicorn
from starlette.applications import Starlette

from .errors import ServeSetupError

GRACEFUL_S = 5  # seconds open connections get to finish when stopping


class _Stop(Exception):
    """Raised by our SIGTERM handler once uvicorn has shut down (see `serve`)."""


class _Server(uvicorn.Server):
    """uvicorn's server, calling `on_ready` once it listens."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._on_ready()


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one); ServeSetupError if taken."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ServeSetupError(f"cannot listen on {host!r}: {exc.strerror}; give --host an IP "
                              f"address or a name of this machine (127.0.0.1 by default)") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ServeSetupError(f"cannot listen on {host}:{port}: {exc.strerror}; pick another "
                              f"--port (0 picks a free one)") from exc
    return sock


def base_url(host: str, port: int) -> str:
    """`http://host:port/`, with IPv6 addresses in brackets.

    >>> base_url("127.0.0.1", 8000), base_url("::1", 8080)
    ('http://127.0.0.1:8000/', 'http://[::1]:8080/')
    """
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _announce(url: str, pages: Sequence[str]) -> None:
    lines = [f"pyrite serve: {url}"] + [f"  {name}: {url}{name}" for name in pages]
    print("\n".join(lines), flush=True)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def serve(app: Starlette, host: str = "127.0.0.1", port: int = 8000, *,
          pages: Sequence[str] = (), log_level: str = "info") -> int:
    """Serve `app` until Ctrl-C or SIGTERM; returns the exit status (0 after a clean stop).

    `pages` are the demo names whose URLs are printed under the server's URL.
    """
    sock = bind(host, port)
    url = base_url(host, sock.getsockname()[1])
    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=GRACEFUL_S)
    server = _Server(config, lambda: _announce(url, pages))
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal for the
    # handler that was installed before it: here KeyboardInterrupt or _Stop, both a clean stop
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        server.run(sockets=[sock])
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    print("pyrite serve: stopped", file=sys.stderr, flush=True)
    return 0


__all__ = ["GRACEFUL_S", "base_url", "bind", "serve"]
