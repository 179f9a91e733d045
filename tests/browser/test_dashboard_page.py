"""The native live dashboard end to end: a short `pyrite train mnist --dashboard` run streams
its metrics to the page at /train/live in Chromium, at least one update per epoch, and the page
ends in the run's final state. A screenshot of the page is saved in the test's tmp dir."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrite import config

from . import harness

EPOCHS = 2
LIMIT = 320  # digits per split: 5 train batches of 64 per epoch


def _data_root() -> Path:
    given = config.data_dir()
    # as the Makefile does: the shared data folder beside the checkout
    return Path(given) if given else Path(__file__).resolve().parents[3] / "shared" / "data"


def test_a_native_run_streams_every_epoch_to_the_live_page(
        launch_chromium: Callable[..., Any], tmp_path: Path) -> None:
    data = _data_root()
    if not (data / "mnist" / "train-images-idx3-ubyte.gz").exists():
        pytest.skip(f"MNIST is not in {data}/mnist (set PYRITE_DATA)")
    browser = launch_chromium(webgpu=False)  # the page draws SVG: no GPU needed
    env = {**os.environ, "PYRITE_DATA": str(data), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "pyrite.demos.mnist", "train", "mnist", "--dashboard",
         "--limit", str(LIMIT), "--epochs", str(EPOCHS), "--artifacts", str(tmp_path / "run"),
         "--dashboard-linger", "60"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=env, cwd=harness.REPO)
    lines: list[str] = []
    urls: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in iter(process.stdout.readline, ""):
            lines.append(line)
            if line.startswith("Live dashboard: "):
                urls.put(line.split(": ", 1)[1].strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        try:
            url = urls.get(timeout=120)
        except queue.Empty:
            pytest.fail("no dashboard URL printed:\n" + "".join(lines[-30:]))
        page = browser.new_page(viewport={"width": 1280, "height": 1100})
        page.set_default_timeout(120_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        page.wait_for_function("() => window.pyriteDashboard && "
                               "['done', 'stopped', 'error'].includes(pyriteDashboard.state)")
        page.wait_for_timeout(300)  # the last frame drawn
        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
        data = page.evaluate("() => pyriteDashboard.data()")
        status = page.text_content("[role=status]")
        charts = page.eval_on_selector_all("svg.pd-svg path.pd-line", "paths => paths.length")
        assert process.wait(timeout=120) == 0, "".join(lines[-30:])
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    assert not errors
    assert data["state"] == "done", data.get("message")
    assert (data["epoch"], data["epochs"]) == (EPOCHS, EPOCHS)
    series = data["series"]
    steps_per_epoch = LIMIT // 64
    # at least one metric update per epoch, at the epoch's global steps
    for epoch in range(1, EPOCHS + 1):
        steps = range((epoch - 1) * steps_per_epoch + 1, epoch * steps_per_epoch + 1)
        assert any(step in steps for step, _ in series["trainLoss"]), series["trainLoss"]
    assert [p[2] for p in series["trainLossEpoch"]] == list(range(1, EPOCHS + 1))
    assert [p[0] for p in series["validLoss"]] == [steps_per_epoch * e
                                                   for e in range(1, EPOCHS + 1)]
    assert all(0 <= p[1] <= 100 for p in series["validAccuracy"])
    assert series["lr"] and series["lr"][-1][1] == pytest.approx(1e-3)
    assert series["itemsPerS"] and series["memory"]
    assert data["config"]["train_items"] == LIMIT
    assert status is not None and "finished" in status
    assert charts >= 5
    assert (tmp_path / "dashboard.png").stat().st_size > 10_000
    print(f"screenshot: {tmp_path / 'dashboard.png'}")


def test_the_dashboard_copes_with_many_points_resumes_and_reset(
        launch_chromium: Callable[..., Any], tmp_path: Path) -> None:
    from pyrite.server.dashboard import DashboardServer

    browser = launch_chromium(webgpu=False)
    with DashboardServer() as server:
        page = browser.new_page(viewport={"width": 1280, "height": 1100})
        page.goto(server.live_url)
        page.wait_for_function("() => window.pyriteDashboard")
        got = page.evaluate("""() => {
          const d = pyriteDashboard;
          const step = (s, loss) => ({type: "step", split: "train", epoch: Math.ceil(s / 1000),
            epochs: 5, iteration: (s - 1) % 1000 + 1, iterations: 1000, step: s, items: 64,
            items_per_s: 500, elapsed_s: 1, memory_bytes: null,
            metrics: {Loss: loss, Accuracy: 50}, epoch_metrics: {Loss: loss}});
          d.push({type: "start", epochs: 5, config: {}, model: "synthetic"});
          for (let s = 1; s <= 5000; s++) d.push(step(s, 2 / Math.sqrt(s)));
          const many = d.data().series.trainLoss.length;
          const drawn = () => Math.max(...[...document.querySelectorAll(
            "[data-chart=loss] path.pd-line")].map((p) => p.getAttribute("d").split("L").length));
          return new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
            const lines = drawn();
            d.push(step(3001, 9));  // resumed from the checkpoint at step 3000
            const resumed = d.data().series.trainLoss;
            const empty = d.state === "idle";
            d.reset();
            resolve({many, lines, last: resumed[resumed.length - 1], count: resumed.length,
                     memory: d.data().series.memory.length, empty,
                     after: d.data().series.trainLoss.length, state: d.state});
          })));
        }""")
    assert got["many"] == 5000
    assert got["lines"] < 2000  # decimated: about four points per pixel column at most
    assert got["last"] == [3001, 9] and got["count"] == 3001
    assert got["memory"] == 0 and got["after"] == 0 and got["state"] == "idle"
