"""Every demo page in a Chromium without WebGPU (navigator.gpu gives no adapter): each says so
once, with the reason and what to do, and no message repeats its prefix ("webgpu: webgpu:").
The model pages offer the server's API; the training page, which the API cannot replace, says
what to do instead. (The model pages' predictions through the server are tested in their own
files.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import harness

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))

LOAD_TIMEOUT_MS = 240_000
REPEATED = ("webgpu: webgpu:", "No WebGPU here: No WebGPU", "No WebGPU: No WebGPU")


@pytest.fixture(scope="module")
def no_webgpu(launch_chromium: Any) -> Iterator[Browser]:
    yield launch_chromium(webgpu=False)


def _text(page: Any) -> str:
    return page.inner_text("body")


@pytest.mark.parametrize(("path", "offer"), [("mnist", "Predict on the server"),
                                             ("classify", "Predict on the server"),
                                             ("charlm", "Generate on the server")])
def test_a_model_page_says_it_once_and_offers_the_server(
        no_webgpu: Browser, server_url: str, path: str, offer: str,
        tmp_path: Path) -> None:
    page = no_webgpu.new_page(viewport={"width": 1200, "height": 900})
    page.goto(server_url + path)
    page.wait_for_function("document.querySelector('#status').dataset.state !== 'loading'",
                           timeout=LOAD_TIMEOUT_MS)
    state = page.get_attribute("#status", "data-state")
    reason = page.locator("#fallback-reason").inner_text()
    if state == "error" and "not installed" in page.inner_text("#status-text"):
        pytest.skip(f"the {path} model is not installed on this server")
    assert state == "fallback", (state, reason)
    assert reason.startswith("No WebGPU here: ") and "adapter" in reason, reason
    text = _text(page)
    assert not any(r in text for r in REPEATED), text
    assert text.count("No WebGPU here") == 1
    assert page.get_by_role("button", name=offer).is_visible()
    page.screenshot(path=str(tmp_path / f"{path}-no-webgpu.png"), full_page=True)
    page.close()


def test_the_training_page_says_why_and_what_to_do(no_webgpu: Browser, server_url: str,
                                                   tmp_path: Path) -> None:
    page = no_webgpu.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(server_url + "train")
    page.wait_for_function("window.trainDemo && window.trainDemo.state === 'error'",
                           timeout=LOAD_TIMEOUT_MS)
    status = page.inner_text("#status-text")
    assert status == "This browser cannot train here: training needs WebGPU in the page."
    error = page.inner_text("#error")
    assert error.startswith("Why: ") and "What to do: open this page in a browser with " \
        "WebGPU" in error and "pyrite train mnist" in error, error
    assert not any(r in _text(page) for r in REPEATED), _text(page)
    assert "server" not in error  # predicting on the server does not train
    assert page.locator("#start").is_disabled()
    page.screenshot(path=str(tmp_path / "train-no-webgpu.png"), full_page=True)
    page.close()
