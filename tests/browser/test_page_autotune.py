"""Autotune in a page (wasm/page_autotune.py): with `load({autotune: "on"})` the kernels are
timed on first use and the choices kept in the page's browser storage (IndexedDB); a later
visit finds them there and times nothing, by default ("cached") as with "on"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import harness, test_embeds
from .test_embeds import SUB

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))
site = test_embeds.site  # the same fixtures: the exported bundle on a static server
new_page = test_embeds.new_page

PAGE = """<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="module">
  import * as pyrite from "/{sub}/pyrite.js";
  const mode = new URLSearchParams(location.search).get("autotune");
  window.tuning = (async () => {{
    await pyrite.load(mode ? {{device: "webgpu", autotune: mode}} : {{device: "webgpu"}});
    return pyrite.run(`
import pyrite
a = pyrite.ones((96, 64))
b = pyrite.ones((64, 80))
total = (a @ b).sum().into_scalar()
tuner = pyrite.device("webgpu").kernels.autotune
[total, tuner.mode, tuner.stats.tuned, tuner.stats.stored, tuner.store.location()]`);
  }})();
</script>
"""


# the page's pyrite module (the same instance: one module map), then `p`'s call
PYRITE = f"import('/{SUB}/pyrite.js').then((p) => {{}})"


def test_a_second_visit_uses_the_choices_the_first_one_tuned(
        site: tuple[Path, str], new_page: Callable[..., Any]) -> None:
    root, url = site
    (root / "tune.html").write_text(PAGE.format(sub=SUB))
    page = new_page()
    page.goto(f"{url}/tune.html?autotune=on")
    total, mode, tuned, stored, where = page.evaluate("window.tuning")
    assert total == 96 * 80 * 64 and mode == "on"
    assert tuned >= 1 and stored == 0, (tuned, stored)  # timed here, nothing stored before
    assert "IndexedDB" in where
    page.wait_for_timeout(500)  # the store's flush to IndexedDB is not awaited
    # the reloads restore Python from the snapshot made now: the store's folder is mounted
    # while the wheels are written (worker.js), and its choices are there all the same
    assert page.evaluate(PYRITE.format("p.nextVisitReady()"))["stored"] is True
    for query in ("?autotune=on", ""):  # a reload of the same origin: "on", then the default
        page.goto(f"{url}/tune.html{query}")
        total, mode, tuned, stored, _ = page.evaluate("window.tuning")
        assert page.evaluate(PYRITE.format("p.load().then((got) => got.timings.snapshot)"))
        assert total == 96 * 80 * 64
        assert mode == ("on" if query else "cached")
        assert tuned == 0 and stored >= 1, (query, tuned, stored)
    assert page.errors == []
    # another browser profile (another user) starts with nothing stored
    other = new_page()
    other.goto(f"{url}/tune.html")
    assert other.evaluate("window.tuning")[2:4] == [0, 0]
