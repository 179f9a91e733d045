"""A repeat visit of a page served by `pyrite serve`: the runtime, the wheels and the records
come from the browser's caches without one request to the server (Pyodide's files are fresh
for a day in the HTTP cache, the content-addressed ones for good, and the worker reads the
rest from Cache Storage), and Python comes back from the snapshot the first visit kept.

Requests are read from Resource Timing in the page and in the worker: a file the HTTP cache
answered without the network has a transferSize of 0; one the server answered (200, or a 304
after a revalidation) has its headers' size at least. The worker's reads from Cache Storage
make no entry at all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from . import harness

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))

# the bundle's files a repeat visit must not request: Pyodide's runtime, wheels, records
FIXED = ("/web/pyodide/", "/web/wheels/", "/web/models/", "/web/kernels/")

# every resource this page's document and its worker fetched: [url, transferSize]
ENTRIES = """async () => {
  const pyrite = await import("./pyrite.js");
  const page = performance.getEntriesByType("resource").map((e) => [e.name, e.transferSize]);
  // (through run_js: the `js` module's getters fail in a Python restored from a snapshot)
  const worker = await pyrite.run("from pyodide.code import run_js\\n"
    + "run_js('JSON.stringify(performance.getEntriesByType(\\"resource\\")"
    + ".map((e) => [e.name, e.transferSize]))')");
  return [...page, ...JSON.parse(worker)];
}"""


def _visit(page: Any, url: str) -> list[list[Any]]:
    page.goto(url)
    page.evaluate("document.querySelector('pyrite-mnist').ready")  # the mnist model loaded
    return page.evaluate(ENTRIES)


def test_a_repeat_visit_requests_no_runtime_wheels_or_records(
        server_url: str, launch_chromium: Callable[..., Any]) -> None:
    context = launch_chromium().new_context()  # one profile for both visits
    try:
        page = context.new_page()
        page.set_default_timeout(180_000)
        url = f"{server_url}web/index.html"
        first = _visit(page, url)
        fixed = [(u, size) for u, size in first if any(d in u for d in FIXED)]
        # the first visit downloaded them (the worker's own fetches through Cache Storage
        # make entries too when they go to the network)
        assert any(u.endswith("/pyodide.asm.wasm") and size > 0 for u, size in fixed), first
        assert any("/models/" in u and size > 0 for u, size in fixed), first
        assert any("/wheels/" in u and size > 0 for u, size in fixed), first
        # the next visit's snapshot is made by a second worker after the first answer
        stored = page.evaluate("import('./pyrite.js').then((p) => p.nextVisitReady())")
        assert stored["stored"] is True, stored
        again = _visit(page, url)
        requested = [(u, size) for u, size in again if any(d in u for d in FIXED) and size > 0]
        assert requested == [], requested
        timings = page.evaluate("import('./pyrite.js').then((p) => p.load())"
                                ".then((got) => got.timings)")
        assert timings["snapshot"] is True, timings
    finally:
        context.close()
