"""The training page trains on the user's own digits: a dataset pack (.pyds) at a URL is
downloaded into the page's IndexedDB with progress, read a chunk at a time by the in-page
Learner, kept for the next run, and a wrong URL is one clear error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pyrite import config
from pyrite.dataset import MnistDataset, write_pack

from . import harness

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))

LOAD_MS = 240_000
RUN_MS = 600_000
ROWS = 600  # 540 to train on, the last 60 held out for validation


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    given = config.data_dir()
    root = Path(given) if given else Path(__file__).resolve().parents[3] / "shared" / "data"
    if not (root / "mnist" / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"MNIST is not in {root}/mnist (set PYRITE_DATA)")
    data = tmp_path_factory.mktemp("data")
    digits = MnistDataset("test", root=root, download=False)
    write_pack(data / "packs" / "digits.pyds",
               ({"image": bytes(d["image"]), "label": d["label"]}
                for d in (digits[i] for i in range(ROWS))), chunk_rows=128)
    old = os.environ.get("PYRITE_DATA")
    os.environ["PYRITE_DATA"] = str(data)  # serves /data/packs/ from there
    try:
        s = harness.Server()
    finally:
        if old is None:
            del os.environ["PYRITE_DATA"]
        else:
            os.environ["PYRITE_DATA"] = old
    try:
        yield s.url
    finally:
        s.stop()


def test_train_on_a_dataset_pack_from_a_url(chromium: Browser, server: str,
                                            tmp_path: Path) -> None:
    page = harness.open_train_page(chromium, server, load_ms=LOAD_MS)
    page.evaluate("window.__data = []; window.trainDemo.pyrite.events.addEventListener("
                  "'dataset', (e) => window.__data.push(e.detail))")
    page.select_option("select[name=data_source]", "url")
    assert page.is_visible("input[name=dataset]")
    page.fill("input[name=dataset]", "/data/packs/digits.pyds")
    for name, value in (("epochs", 1), ("batch_size", 32), ("train_items", 540),
                        ("valid_items", 60)):
        page.fill(f"input[name={name}]", str(value))
    page.click("#start")
    page.wait_for_function("window.trainDemo.state === 'ready' && window.trainDemo.lastRun",
                           timeout=RUN_MS)
    run = page.evaluate("window.trainDemo.lastRun")
    assert run["state"] == "done", page.evaluate("window.trainDemo.lastError")
    messages = page.evaluate("window.__data")
    assert messages[-1]["state"] == "downloaded"
    stored = page.evaluate("window.trainDemo.pyrite.run(\"import glob; "
                           "glob.glob('/pyrite-storage/datasets/*.pyds')\")")
    assert len(stored) == 1 and run["saved"]["settings"]["dataset"] == stored[0]
    assert messages[-1]["loaded"] == messages[-1]["total"] > 0
    steps = [e for e in page.evaluate("window.trainDemo.events")
             if e["type"] == "step" and e["split"] == "train"]
    assert steps[-1]["step"] == 17  # 540 digits in batches of 32
    assert run["accuracy"] > 30.0  # 60 held-out digits, after one short epoch (chance: 10)
    assert "stored in this browser" in page.inner_text("#dataset-note")
    page.screenshot(path=str(tmp_path / "train-dataset.png"), full_page=True)

    # a second run finds the pack stored in this browser: nothing downloaded again
    page.evaluate("window.__data = []")
    page.click("#start")
    page.wait_for_function("window.trainDemo.state === 'ready' && "
                           "window.__data.some((m) => m.state === 'stored')", timeout=RUN_MS)
    assert all(m["state"] != "downloading" for m in page.evaluate("window.__data"))
    page.wait_for_function("window.trainDemo.lastRun && window.trainDemo.state === 'ready'",
                           timeout=RUN_MS)

    # a URL with nothing behind it: one message that says so
    page.fill("input[name=dataset]", "/data/packs/missing.pyds")
    page.click("#start")
    page.wait_for_function("window.trainDemo.state === 'error' && window.trainDemo.lastError",
                           timeout=RUN_MS)
    assert "answered 404" in page.evaluate("window.trainDemo.lastError")
    page.context.close()
