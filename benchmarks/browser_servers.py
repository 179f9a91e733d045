"""The browser benchmarks' shared set-up: headless Chromium (WebGPU through SwiftShader where
there is no GPU) and the servers the pages come from: pyrite's Starlette app with the bench
pages beside it (`Server`, `combined_app`) and a plain `python -m http.server` that logs what
it answered (`StaticServer`). Used by browser.py and the other page benchmarks."""

from __future__ import annotations

import itertools
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WEB = HERE / "browser"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--enable-unsafe-webgpu", "--no-sandbox", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
# what the page runs on: its adapter, user agent and whatever its bench page recorded
PAGE_INFO_JS = """async () => {
  let adapter = null;
  const a = navigator.gpu ? await navigator.gpu.requestAdapter() : null;
  if (a) {
    const i = a.info;
    adapter = {vendor: i.vendor, architecture: i.architecture, device: i.device,
               description: i.description, isFallbackAdapter: i.isFallbackAdapter ?? null};
  }
  return {userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated,
          hardwareConcurrency: navigator.hardwareConcurrency, adapter,
          bench: window.bench ? window.bench.info : null};
}"""


def pyrite_app() -> tuple[Any, str]:
    """pyrite's Starlette app, or None and why not."""
    try:
        from pyrite.server.app import create_app

        return create_app(), ""
    except Exception as e:  # noqa: BLE001 - any failure: run the peers alone, say why
        return None, f"{type(e).__name__}: {e}"


def combined_app(main: Any, isolate: bool) -> Any:
    """`/bench/...` from WEB's files, everything else (lifespan included) to `main`; with
    `isolate`, every response carries COOP/COEP (cross-origin isolation: SharedArrayBuffer,
    wasm threads, 5 us timers)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    bench = Starlette(routes=[Mount("/bench", StaticFiles(directory=WEB, html=True))])
    main = main or bench
    headers = [(b"cross-origin-opener-policy", b"same-origin"),
               (b"cross-origin-embedder-policy", b"require-corp")]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        async def send_isolated(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *headers]}
            await send(message)

        path = scope.get("path", "")
        target = bench if path == "/bench" or path.startswith("/bench/") else main
        await target(scope, receive, send_isolated if isolate else send)

    return app


class Server:
    """uvicorn on 127.0.0.1 (a free port) in a thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the benchmark's server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


class StaticServer:
    """`python -m http.server` serving `root` on 127.0.0.1 (a free port), in a subprocess;
    `take()` lists the requests it answered since the last call, from its log."""

    LOG = re.compile(r'"GET (\S+) HTTP/[\d.]+" (\d{3})')

    def __init__(self, root: Path) -> None:
        self.root = root
        self.marks = itertools.count()
        self.log: queue.Queue[tuple[str, int]] = queue.Queue()

    def __enter__(self) -> StaticServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
             "--directory", str(self.root)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...) ..."
        port = re.search(r" port (\d+)", line)
        if not port:
            self.proc.kill()
            raise RuntimeError(f"python -m http.server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{port[1]}"
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self.proc.stderr:
            if found := self.LOG.search(line):
                self.log.put((found[1], int(found[2])))

    def take(self) -> list[tuple[str, int]]:
        """(path, status) of each request answered since the last call: everything logged
        before a marker request made now."""
        mark = f"/?mark={next(self.marks)}"
        urllib.request.urlopen(self.url + mark, timeout=30).read()
        out = []
        while (entry := self.log.get(timeout=30))[0] != mark:
            out.append(entry)
        return out

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def launch(pw: Any) -> Any:
    """A new Chromium with a fresh temporary profile (nothing cached)."""
    return pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)

