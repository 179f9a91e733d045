"""The next visit's Python snapshot (wasm/snapshot_background.js, wasm/next_visit.js): a first
visit that booted Python has a second worker make it once the page has left its own worker
idle for a second (not beside the page's requests), and the repeat visit restores it; a visit
closed while it is being made, and a store left half-written (the memory without its record,
or a record whose memory is cut short), leave nothing a later visit restores: it boots Python
and makes the snapshot again."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import harness, test_embeds
from .test_embeds import HOST, SNAPSHOT_STORE, SUB, StaticServer, export

new_page = test_embeds.new_page  # the same fixture: fresh contexts recording console errors

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))



# whether pyrite.coverage (which pyrite.wasm.preload does not import) was not imported yet, its
# name once imported, and the files of pyrite's wheel (its RECORD) that the file system lacks
WHEEL_WHOLE = """
import importlib, sys
from importlib.metadata import files
fresh = "pyrite.coverage" not in sys.modules
module = importlib.import_module("pyrite.coverage")
[fresh, module.__name__, [str(f) for f in files("pyrite") if not f.locate().exists()]]
"""


def _entries(page: Any) -> list[str]:
    """The snapshot's entries in the worker's IndexedDB store: its record (the key) and its
    memory."""
    keys: list[str] = page.evaluate(SNAPSHOT_STORE, ["keys"])
    return keys


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The default export (no snapshot in the bundle) at /tools/pyrite/, a host page at /."""
    root = tmp_path_factory.mktemp("site")
    done = export(root / SUB, "mnist")
    assert done.returncode == 0, done.stderr
    (root / "index.html").write_text(HOST.format(bundle=f"/{SUB}/", before=""))
    server = StaticServer(root)
    yield root, server.url
    server.stop()


def _visit(page: Any, url: str) -> dict[str, Any]:
    """Load the host page (its pyrite.run answers on webgpu); the load's timings."""
    page.goto(url)
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    timings: dict[str, Any] = page.evaluate("pyrite.load().then((got) => got.timings)")
    return timings


def _one_worker(page: Any) -> None:
    """Wait until the page has one worker left (a terminated one leaves Playwright's list a
    moment later)."""
    deadline = time.monotonic() + 10
    while len(page.workers) != 1:
        assert time.monotonic() < deadline, page.workers
        page.wait_for_timeout(20)


def _warnings(page: Any) -> list[str]:
    said: list[str] = []
    page.on("console", lambda m: said.append(m.text) if m.type == "warning" else None)
    return said


def test_the_first_visit_leaves_the_snapshot_the_repeat_restores(
        site: tuple[Path, str], new_page: Callable[..., Any]) -> None:
    _, url = site
    page = new_page()
    timings = _visit(page, f"{url}/")
    assert timings["snapshot"] is False  # a first visit boots Python
    assert timings["gpuAhead"] is False  # ... and starts the GPU once the manifest is in
    # ... without importing all of pyrite for the next visit on the way to its first answer
    assert page.evaluate("pyrite.run('import sys\\n\"pyrite.wasm.preload\" in sys.modules')") \
        is False
    made = page.evaluate("pyrite.nextVisitReady()")
    assert made["stored"] is True and made["reason"] is None, made
    assert made["bytes"] > 30e6  # Python with pyrite imported
    _one_worker(page)  # the second worker is gone once it has stored it
    assert len(_entries(page)) == 2  # the memory and its record
    page.reload()
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    timings = page.evaluate("pyrite.load().then((got) => got.timings)")
    assert timings["snapshot"] is True and timings["snapshotFrom"] == "cache", timings
    # restored from the kept manifest, before the network's arrived (restore.js)
    assert timings["restoredAhead"] is True and timings["compiledAhead"] is True, timings
    # its GPU too: the device and the kernels' compiles from the kept manifest, and Python
    # uses that device (its precompiled pipelines are the ones the worker started)
    assert timings["gpuAhead"] is True, timings
    assert page.evaluate("pyrite.run('import pyrite.wasm.page as p\\n"
                         "p._runtime(p.device())._precompiled is not None')") is True
    # the restored Python has what the second worker imported
    assert page.evaluate("pyrite.run('import sys\\n\"pyrite.wasm.preload\" in sys.modules')") \
        is True
    # a snapshot holds no files: the wheels' are made again (wasm/wheels.js, each a MEMFS node
    # given its bytes), and a module nobody imported before the snapshot imports from them
    assert timings["wheelFiles"] > 300, timings
    whole = page.evaluate("(code) => pyrite.run(code)", WHEEL_WHOLE)
    assert whole == [True, "pyrite.coverage", []], whole
    again = page.evaluate("pyrite.nextVisitReady()")
    assert again["stored"] is False and "not needed" in again["reason"]
    assert len(page.workers) == 1  # no second worker after a restore
    assert page.errors == []


# the page asks its worker for `ms`, one request after the other; then awaits the snapshot:
# when the asking ended and when the second worker started (its `ms` before it was stored)
BUSY_JS = """async (ms) => {
  const t0 = performance.now();
  let asked = 0;
  while (performance.now() - t0 < ms) {
    await pyrite.run("1 + 1");
    asked += 1;
  }
  const ended = performance.now();
  const made = await pyrite.nextVisitReady();
  return { asked, made, startedAfterEnd: performance.now() - made.ms - ended };
}"""


def test_the_second_worker_waits_while_the_page_keeps_asking(
        site: tuple[Path, str], new_page: Callable[..., Any]) -> None:
    # booting Python beside the page's predictions doubled the MNIST page's steady prediction
    # on SwiftShader (issue 21): the second worker starts once the page's worker is idle
    _, url = site
    page = new_page()
    _visit(page, f"{url}/")
    got = page.evaluate(BUSY_JS, 2500)
    assert got["made"]["stored"] is True, got
    assert got["asked"] > 10, got
    # IDLE_MS (1 s) after the last answer; the second worker's own start-up comes off it
    assert got["startedAfterEnd"] > 500, got
    assert page.errors == []


def test_a_visit_closed_while_the_snapshot_is_made_leaves_none(
        site: tuple[Path, str], new_page: Callable[..., Any]) -> None:
    _, url = site
    page = new_page()
    context = page.context
    _visit(page, f"{url}/")
    deadline = time.monotonic() + 60
    while len(page.workers) < 2:  # the second worker starts once the page's worker is idle
        assert time.monotonic() < deadline, "no second worker started"
        page.wait_for_timeout(20)
    page.close()  # the visit ends while it boots Python for the snapshot
    later = context.new_page()
    later.set_default_timeout(180_000)
    said = _warnings(later)
    assert _visit(later, f"{url}/")["snapshot"] is False  # nothing to restore: it booted
    assert not [w for w in said if "snapshot" in w], said
    assert later.evaluate("pyrite.nextVisitReady()")["stored"] is True  # and made it again


def test_a_half_written_snapshot_is_not_restored(site: tuple[Path, str],
                                                 new_page: Callable[..., Any]) -> None:
    _, url = site
    page = new_page()
    said = _warnings(page)
    _visit(page, f"{url}/")
    assert page.evaluate("pyrite.nextVisitReady()")["stored"] is True
    record, memory = sorted(_entries(page), key=lambda u: "pyrite-part" in u)
    assert "pyrite-part=memory" in memory
    # a visit closed between writing the memory and its record leaves the memory alone
    page.evaluate(SNAPSHOT_STORE, ["delete", record])
    assert _visit(page, f"{url}/")["snapshot"] is False
    assert page.evaluate("pyrite.nextVisitReady()")["stored"] is True  # made again, whole
    # a record whose memory is not all there: not restored (one warning), Python boots
    page.evaluate(SNAPSHOT_STORE, ["put", memory, 4096])
    said.clear()
    assert _visit(page, f"{url}/")["snapshot"] is False
    assert any("snapshot is 4096 bytes" in w for w in said), said
    assert page.evaluate("pyrite.nextVisitReady()")["stored"] is True
    # and the next visit restores the one made then
    assert _visit(page, f"{url}/")["snapshotFrom"] == "cache"
    assert page.errors == []
