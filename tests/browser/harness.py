"""What the browser tests need, shared: `pyrite serve` on a free 127.0.0.1 port and Debian's
Chromium with WebGPU, driven by Playwright (never `playwright install`: the browser is
`/usr/bin/chromium`). `unavailable()` says why browser tests cannot run here, if they cannot.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
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


class Server:
    """`pyrite serve --port 0` in a subprocess; `url` once it answers /healthz."""

    def __init__(self, *args: str) -> None:
        self.web = Path(tempfile.mkdtemp(prefix="pyrite-web-"))
        env = {**os.environ, "PYRITE_WEB_DIR": str(self.web / "bundle"),
               "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pyrite.server", "--host", "127.0.0.1", "--port", "0",
             "--log-level", "warning", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.url = self._wait_for_url()

    def _wait_for_url(self, timeout: float = 120.0) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("pyrite serve: http://"):
                url = line.split("pyrite serve: ", 1)[1].split()[0].rstrip("/")
                self._wait_healthy(url, deadline)
                return url
        self.stop()
        raise RuntimeError("pyrite serve did not start:\n" + "".join(seen[-30:]))

    def _wait_healthy(self, url: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{url}/healthz did not answer")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.web, ignore_errors=True)


class Browser:
    """Playwright driving Debian's Chromium with WebGPU; `new_page()` gives pages."""

    def __init__(self, args: list[str] | None = None) -> None:
        from playwright.sync_api import sync_playwright

        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="pyrite-xdg-"))
        self._playwright = sync_playwright().start()
        self.browser = self._playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS if args is None else args)

    def new_page(self, **options: Any) -> Any:
        page = self.browser.new_page(**options)
        page.set_default_timeout(120_000)
        return page

    def close(self) -> None:
        self.browser.close()
        self._playwright.stop()


class PageSession:
    """A server, a browser and one page with pyrite loaded on `device`: what `page-webgpu`
    (the conformance suite in the page) runs on. `close()` ends all three."""

    def __init__(self, device: str = "webgpu", models: list[str] | None = None) -> None:
        self.server = Server()
        try:
            self.browser = Browser()
            self.page = self.browser.new_page()
            self.console: list[str] = []
            self.page.on("console", lambda m: self.console.append(m.text))
            self.page.goto(f"{self.server.url}/")
            self.loaded = self.page.evaluate(
                "async ([device, models]) => { window.pyriteModule = await import('/pyrite.js');"
                " return await window.pyriteModule.load({device, models}); }",
                [device, models or []])
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        browser = getattr(self, "browser", None)
        if browser is not None:
            browser.close()
        self.server.stop()
