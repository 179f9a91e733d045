"""The character model page (`/charlm`) end to end, in Chromium against `pyrite serve`.

The page loads the committed record, streams a greedy continuation (temperature 0) on WebGPU
(SwiftShader) through the page's Python session, and the characters must equal native greedy
generation on numpy for the same prompt.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

LOAD_TIMEOUT_MS = 240_000  # Pyodide, the wheels, the device and the model, on a busy machine
GENERATE_TIMEOUT_MS = 120_000
PROMPT = "Return a new list containing"
TOKENS = 24


def _watch(page: Page) -> list[str]:
    problems: list[str] = []
    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type == "error" else None)
    return problems


@pytest.fixture(scope="module")
def charlm(chromium: Browser, server_url: str,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Page, list[str], Path]]:
    """The page, loaded and ready (WebGPU in the page), its errors and a screenshot folder."""
    context = chromium.new_context(viewport={"width": 1200, "height": 900},
                                   reduced_motion="reduce")
    page = context.new_page()
    problems = _watch(page)
    page.goto(server_url + "charlm")
    page.wait_for_function("document.querySelector('#status').dataset.state !== 'loading'",
                           timeout=LOAD_TIMEOUT_MS)
    ready = page.evaluate("charlmDemo.ready")
    assert ready["state"] == "ready", (ready, page.locator("#status").inner_text(), problems)
    yield page, problems, tmp_path_factory.mktemp("charlm-screens")
    context.close()


def test_page_generates_greedy_text_as_native(charlm: tuple[Page, list[str], Path]) -> None:
    from pyrite.demos.charlm.generate import generate, load

    page, problems, screens = charlm
    assert page.evaluate("charlmDemo.ready")["device"] == "webgpu"
    page.evaluate("charlmDemo.done")  # the first generation (the default prompt) ends
    text = page.evaluate("([p, n]) => charlmDemo.generate(p, {tokens: n, temperature: 0})",
                         [PROMPT, TOKENS])
    expected = generate(load("numpy"), PROMPT, TOKENS, temperature=0)
    assert text == expected
    assert page.locator("#generated").inner_text() == expected
    assert "tokens/s" in page.locator("#timing").inner_text()
    assert "WebGPU" in page.locator("#backend").inner_text()
    page.screenshot(path=str(screens / "charlm.png"))
    assert problems == []


def test_a_non_ascii_prompt_is_replaced_with_a_notice(
        charlm: tuple[Page, list[str], Path]) -> None:
    from pyrite.demos.charlm.generate import generate, load

    page, problems, screens = charlm
    page.evaluate("charlmDemo.done")
    text = page.evaluate("([p, n]) => charlmDemo.generate(p, {tokens: n, temperature: 0})",
                         ["Caf\u00e9 na\u00efve \u2603 returns", TOKENS])
    # accents dropped, the snowman (no ASCII form) as "?", and a note that says so
    assert page.evaluate("charlmDemo.replaced") == ["\u00e9", "\u00ef", "\u2603"]
    notice = page.locator("#notice")
    assert notice.is_visible()
    assert notice.inner_text() == ("The model knows only ASCII: 3 characters of your text "
                                   "(\u00e9 \u00ef \u2603) were replaced (accents dropped, the "
                                   "rest as ?).")
    assert page.locator("#echo").inner_text() == "Cafe naive ? returns"
    assert text == generate(load("numpy"), "Cafe naive ? returns", TOKENS, temperature=0)
    assert page.evaluate("charlmDemo.state") == "finished"
    assert page.locator("#error").is_hidden() and page.evaluate("charlmDemo.lastError") is None
    page.screenshot(path=str(screens / "charlm-non-ascii.png"))
    # an ASCII prompt hides the note again
    page.evaluate("([p, n]) => charlmDemo.generate(p, {tokens: n})", [PROMPT, 4])
    assert notice.is_hidden()
    assert problems == []


def test_stop_ends_a_long_generation_where_it_is(charlm: tuple[Page, list[str], Path]) -> None:
    page, problems, screens = charlm
    page.evaluate("charlmDemo.done")
    assert page.locator("#stop").is_disabled()
    page.evaluate("([p, n]) => { charlmDemo.generate(p, {tokens: n}); }", [PROMPT, 2000])
    page.wait_for_function("charlmDemo.state === 'generating' && charlmDemo.text.length >= 8",
                           timeout=GENERATE_TIMEOUT_MS)
    assert page.locator("#stop").is_enabled()
    page.click("#stop")
    page.evaluate("charlmDemo.done")
    stopped = page.evaluate("charlmDemo.text.length")
    assert page.evaluate("charlmDemo.state") == "stopped"
    assert 8 <= stopped < 2000
    page.wait_for_timeout(1000)
    assert page.evaluate("charlmDemo.text.length") == stopped  # nothing came after Stop
    assert page.locator("#run-state").inner_text().startswith(f"Stopped after {stopped} ")
    assert page.locator("#stop").is_disabled()
    page.screenshot(path=str(screens / "charlm-stopped.png"))
    assert problems == []
