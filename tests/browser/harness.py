"""What the browser tests need, shared: `pyrite serve` on a free 127.0.0.1 port and Debian's
Chromium with WebGPU, driven by Playwright (never `playwright install`: the browser is
`/usr/bin/chromium`). `unavailable()` says why browser tests cannot run here, if they cannot.
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("PYRITE_CHROMIUM", "/usr/bin/chromium")
PYODIDE = REPO / "wasm" / "node_modules" / "pyodide"
#: Chromium's flags: software WebGPU (SwiftShader) and no traffic beyond the page's origin
CHROMIUM_ARGS = ["--enable-unsafe-webgpu", "--no-sandbox", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (make setup installs Debian's chromium)"
    if not (PYODIDE / "pyodide.mjs").exists():
        return "wasm/node_modules/pyodide is missing (make setup runs npm ci in wasm/)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


def require_browser() -> None:
    """Skip (or, with `browser` in PYRITE_REQUIRE, fail) when the browser tests cannot run."""
    import pytest

    from pyrite import config

    why = unavailable()
    if why is None:
        return
    if "browser" in config.required_backends():
        pytest.fail(f"the browser tests are required (PYRITE_REQUIRE) but cannot run: {why}")
    pytest.skip(why)


class Server:
    """`pyrite serve --port 0` in a subprocess, its web bundle built into a temporary folder;
    `url` (no trailing slash) once it answers /healthz. Its output is kept in `log`."""

    def __init__(self, *args: str, start_s: float = 180.0) -> None:
        self.web = Path(tempfile.mkdtemp(prefix="pyrite-web-"))
        env = {**os.environ, "PYRITE_WEB_DIR": str(self.web / "bundle"),
               "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pyrite.server", "--host", "127.0.0.1", "--port", "0",
             "--log-level", "warning", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
        self.log: list[str] = []
        self._url: queue.Queue[str] = queue.Queue()
        # drained all along, so a chatty server never blocks on a full pipe
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self.url = self._wait_for_url(start_s)
        except BaseException:
            self.stop()
            raise

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in iter(self.process.stdout.readline, ""):
            self.log.append(line)
            if line.startswith("pyrite serve: http://"):
                self._url.put(line.split("pyrite serve: ", 1)[1].split()[0].rstrip("/"))

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                url = self._url.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            while time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"{url}/healthz", timeout=5) as r:
                        if r.status == 200:
                            return url
                except OSError:
                    time.sleep(0.1)
        raise RuntimeError(f"pyrite serve did not start in {timeout:.0f} s (exit status "
                           f"{self.process.poll()}):\n" + "".join(self.log[-30:]))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.web, ignore_errors=True)


class Browser:
    """Debian's Chromium, headless, on a Playwright `driver` (`sync_playwright().start()`),
    with WebGPU unless `webgpu=False`; `new_page()` gives pages (default timeout 120 s: the
    machine may be busy)."""

    def __init__(self, driver: Any, webgpu: bool = True) -> None:
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="pyrite-xdg-"))
        args = CHROMIUM_ARGS if webgpu else [a for a in CHROMIUM_ARGS if "webgpu" not in a]
        self.browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=args)

    def new_page(self, **options: Any) -> Any:
        page = self.browser.new_page(**options)
        page.set_default_timeout(120_000)
        return page

    def close(self) -> None:
        self.browser.close()


class PageSession:
    """A server, a browser and one page with pyrite loaded on `device` (and `models`): what
    `page-webgpu` (the conformance suite in the page) and the page runtime tests run on.

    Playwright runs in a thread of its own (its sync API keeps an event loop running in the
    thread that drives it, which would break `asyncio.run` in the tests after it): `evaluate`
    hands the call to that thread. `close()` ends the page, the browser and the server.
    """

    def __init__(self, device: str = "webgpu", models: list[str] | None = None) -> None:
        self.console: list[str] = []
        self._calls: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._drive, daemon=True)
        self.server = Server()
        self._thread.start()
        try:
            self.loaded = self.evaluate(
                "async ([device, models]) => { window.pyriteModule = await import('/pyrite.js');"
                " return await window.pyriteModule.load({device, models}); }",
                [device, models or []])
        except BaseException:
            self.close()
            raise

    def _drive(self) -> None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as driver:
            browser = Browser(driver)
            page = browser.new_page()
            page.on("console", lambda m: self.console.append(m.text))
            page.goto(f"{self.server.url}/")
            while (item := self._calls.get()) is not None:
                script, arg, done = item
                try:
                    done.set_result(page.evaluate(script, arg))
                except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                    done.set_exception(exc)
            browser.close()

    def evaluate(self, script: str, arg: Any = None) -> Any:
        """`page.evaluate(script, arg)` in the page's thread."""
        if not self._thread.is_alive():
            raise RuntimeError("the page's browser has stopped")
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._calls.put((script, arg, done))
        return done.result()

    def close(self) -> None:
        if self._thread.is_alive():
            self._calls.put(None)
            self._thread.join(timeout=60)
        self.server.stop()


def open_train_page(chromium: Any, url: str, *, load_ms: int,
                    on_request: Any = None) -> Any:
    """A new page (its own context) on `url`/train, ready, with a clean browser store;
    `on_request` sees every request from the start. Close it with `page.context.close()`."""
    page = chromium.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    if on_request is not None:
        page.on("request", on_request)
    page.goto(f"{url}/train")
    page.wait_for_function("window.trainDemo && window.trainDemo.state === 'ready'",
                           timeout=load_ms)
    page.evaluate("window.trainDemo.forget()")  # a clean browser store
    return page
