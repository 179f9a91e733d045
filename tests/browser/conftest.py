"""Fixtures for the browser tests, on `harness.py`: `pyrite serve` on 127.0.0.1 (its bundle in a
temporary folder) and Debian's Chromium driven by Playwright (software WebGPU through
SwiftShader, so no GPU is needed).

`server_url` is one `pyrite serve --port 0` for the session; `chromium` one headless browser
with WebGPU for a module; `launch_chromium(webgpu=False)` starts another one. Without
Chromium, Playwright or the Pyodide npm package (`make setup` installs them) the tests skip
with the reason, unless PYRITE_REQUIRE names `browser`: then they fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from . import harness

REPO = harness.REPO


require_browser = harness.require_browser


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """The base URL (`http://127.0.0.1:PORT/`) of `pyrite serve`, running for the session."""
    require_browser()
    server = harness.Server()
    try:
        yield server.url + "/"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def launch_chromium() -> Iterator[Callable[..., Any]]:
    """`launch_chromium(webgpu=True)`: a new headless Chromium, closed at the module's end
    with the module's Playwright driver (which keeps an event loop in this thread meanwhile:
    it must not outlive the module)."""
    require_browser()
    from playwright.sync_api import sync_playwright

    driver = sync_playwright().start()
    browsers: list[harness.Browser] = []

    def launch(webgpu: bool = True) -> Any:
        browsers.append(harness.Browser(driver, webgpu=webgpu))
        return browsers[-1].browser

    try:
        yield launch
    finally:
        for browser in browsers:
            browser.close()
        driver.stop()


@pytest.fixture(scope="module")
def chromium(launch_chromium: Callable[..., Any]) -> Any:
    """One headless Chromium with WebGPU, shared by the module's tests."""
    return launch_chromium(webgpu=True)
