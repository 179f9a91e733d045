"""The MNIST drawing page (`/mnist`) end to end, in Chromium against `pyrite serve`.

Real MNIST test digits are drawn onto the page's canvas with mouse strokes (each row's inked
pixels as horizontal strokes, scaled onto the canvas), and the page's own preprocessing and
in-page model (pyrite in Pyodide, on WebGPU through SwiftShader) must read them; the page's
answer must equal native inference on the same 28x28 input; a failed prediction must be shown
and leave the page working; and without WebGPU the page must say so and offer the server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pyrite import config

from . import harness

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

SIDE = 28
PER_CLASS = 3  # the first 3 test digits of each class: 30 digits
INK = 128  # MNIST pixels at least this grey are drawn (the pen's width restores the rest)
MIN_ACCURACY = 0.9
LOAD_TIMEOUT_MS = 240_000  # Pyodide, the wheels, the device and the model, on a busy machine
PREDICT_TIMEOUT_MS = 60_000
DESKTOP = {"width": 1200, "height": 900}
PHONE = {"width": 390, "height": 844}

SETTLED = "() => { const d = window.mnistDemo; return d && !d.busy && " \
          "d.predictedVersion === d.version; }"


# ---- data ------------------------------------------------------------------------------------

def _data_root() -> Path:
    given = config.data_dir()
    # as the Makefile does: the shared data folder beside the checkout
    return Path(given) if given else Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def digits() -> list[tuple[int, bytes, int]]:
    """`(index, 784 pixels, label)` for the first PER_CLASS test digits of each class."""
    from pyrite.dataset import MnistDataset

    root = _data_root()
    try:
        test = MnistDataset("test", root=root, download=False)
    except Exception as exc:  # noqa: BLE001 - no data here: say where it was looked for
        pytest.skip(f"MNIST's test split is not in {root}/mnist (set PYRITE_DATA): {exc}")
    chosen: list[tuple[int, bytes, int]] = []
    counts = dict.fromkeys(range(10), 0)
    for index in range(test.len()):
        item = test.get(index)
        assert item is not None
        label = int(item["label"])
        if counts[label] < PER_CLASS:
            counts[label] += 1
            chosen.append((index, bytes(item["image"]), label))
        if len(chosen) == 10 * PER_CLASS:
            break
    return chosen


@pytest.fixture(scope="module")
def native() -> Callable[[list[int]], dict[str, Any]]:
    """The demo model on numpy: `native(pixels) -> {label, probabilities}`."""
    from pyrite.demos import registry

    demo = registry.get("mnist")
    model = demo.load("numpy", demo.record)
    return lambda pixels: demo.predict(model, {"pixels": pixels})


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the page's screenshots go (printed; pytest keeps its last few temp folders)."""
    folder = tmp_path_factory.mktemp("mnist-page-screenshots")
    print(f"\nscreenshots of the MNIST page: {folder}")
    return folder


# ---- driving the page --------------------------------------------------------------------------

def _runs(image: bytes, row: int) -> list[tuple[int, int]]:
    """The inked pixels of one row as (first, last) column runs."""
    runs: list[tuple[int, int]] = []
    start = None
    for col in range(SIDE + 1):
        inked = col < SIDE and image[row * SIDE + col] >= INK
        if inked and start is None:
            start = col
        elif not inked and start is not None:
            runs.append((start, col - 1))
            start = None
    return runs


def draw(page: Page, image: bytes) -> None:
    """Draw a 28x28 digit on the pad with the mouse: one horizontal stroke per inked run."""
    box = page.locator("#pad").bounding_box()
    assert box is not None
    cell = min(box["width"], box["height"]) / SIDE  # CSS pixels per MNIST pixel
    for row in range(SIDE):
        y = box["y"] + (row + 0.5) * cell
        for first, last in _runs(image, row):
            page.mouse.move(box["x"] + (first + 0.5) * cell, y)
            page.mouse.down()
            if last > first:
                steps = max(2, (last - first) // 3)
                page.mouse.move(box["x"] + (last + 0.5) * cell, y, steps=steps)
            page.mouse.up()


def settle(page: Page) -> None:
    """Wait until the page has predicted the drawing as it is now."""
    page.wait_for_function(SETTLED, timeout=PREDICT_TIMEOUT_MS)


def shown(page: Page) -> dict[str, Any]:
    """What the page shows and knows about its latest prediction."""
    state: dict[str, Any] = page.evaluate("""() => {
        const d = window.mnistDemo;
        return {label: document.querySelector('#prediction').dataset.label,
                result: d.lastResult, input: d.lastInput, error: d.lastError,
                predictions: d.predictions};
    }""")
    return state


def clear(page: Page) -> None:
    page.get_by_role("button", name="Clear").click()
    settle(page)
    assert page.locator("#prediction").get_attribute("data-label") == ""


def _watch(page: Page) -> list[str]:
    """Collects the page's uncaught errors and console errors."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    page.on("console", lambda msg: problems.append(f"console: {msg.text}")
            if msg.type == "error" else None)
    return problems


@pytest.fixture(scope="module")
def mnist(chromium: Browser, server_url: str,
          screenshots: Path) -> Iterator[tuple[Page, list[str]]]:
    """The page, loaded and ready (WebGPU in the page), with its list of errors."""
    context = chromium.new_context(viewport=DESKTOP, reduced_motion="reduce")  # no animations
    page = context.new_page()
    problems = _watch(page)
    page.goto(server_url + "mnist")
    # while Python boots: the page says so, with its progress
    page.wait_for_function("document.querySelector('#progress').value >= 2",
                           timeout=LOAD_TIMEOUT_MS)
    page.screenshot(path=str(screenshots / "mnist-loading.png"))
    page.wait_for_function("document.querySelector('#status').dataset.state !== 'loading'",
                           timeout=LOAD_TIMEOUT_MS)
    ready = page.evaluate("mnistDemo.ready")
    assert ready["state"] == "ready", (ready, page.locator("#status").inner_text(), problems)
    yield page, problems
    context.close()


# ---- the tests ---------------------------------------------------------------------------------

def test_page_loads_on_webgpu(mnist: tuple[Page, list[str]]) -> None:
    page, problems = mnist
    ready = page.evaluate("mnistDemo.ready")
    assert ready["device"] == "webgpu"
    assert page.locator("#status").get_attribute("data-state") == "ready"
    assert re.search(r"WebGPU in this page \(.+\)", page.locator("#backend").inner_text())
    assert "loaded in" in page.locator("#status-text").inner_text()
    assert page.locator("#progress").is_hidden()
    assert problems == []


def test_drawn_digits_are_recognised(mnist: tuple[Page, list[str]],
                                     digits: list[tuple[int, bytes, int]],
                                     screenshots: Path) -> None:
    page, problems = mnist
    right = 0
    confusions: list[str] = []
    for n, (index, image, label) in enumerate(digits):
        before = page.evaluate("mnistDemo.predictions")
        draw(page, image)
        settle(page)
        state = shown(page)
        assert state["error"] is None, state["error"]
        assert state["predictions"] > before
        got = state["result"]["label"]
        assert state["label"] == str(got)  # what the page shows is its latest result
        if got == label:
            right += 1
        else:
            confusions.append(f"test digit #{index}: a {label} read as {got}")
        if n == 0:
            page.screenshot(path=str(screenshots / "mnist-desktop.png"), full_page=True)
        clear(page)
    accuracy = right / len(digits)
    print(f"\nMNIST page: {right}/{len(digits)} drawn test digits read right "
          f"({accuracy:.0%}); confusions: {confusions or 'none'}")
    assert accuracy >= MIN_ACCURACY, confusions
    assert problems == []


def test_touch_strokes_draw_and_predict_while_drawing(mnist: tuple[Page, list[str]]) -> None:
    page, problems = mnist
    page.evaluate("""() => { window.pointerTypes = new Set();
        document.querySelector('#pad').addEventListener('pointermove',
                                                        (e) => pointerTypes.add(e.pointerType));
    }""")
    box = page.locator("#pad").bounding_box()
    assert box is not None
    cdp = page.context.new_cdp_session(page)
    x, top, height = box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.2, box["height"]

    def touch(kind: str, at: float | None = None) -> None:
        points = [] if at is None else [{"x": x + at * 10, "y": top + at * height * 0.6}]
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    before = page.evaluate("mnistDemo.predictions")
    touch("touchStart", 0.0)
    for step in range(1, 21):
        touch("touchMove", step / 20)
    # the finger rests on the pad: the drawing so far is predicted (debounced), no lift needed
    page.wait_for_function(f"mnistDemo.predictions > {before}", timeout=PREDICT_TIMEOUT_MS)
    touch("touchEnd")
    settle(page)
    assert shown(page)["result"]["label"] == 1
    assert page.evaluate("[...pointerTypes]") == ["touch"]
    assert page.evaluate("scrollY") == 0  # the pad, not the page, took the moves
    cdp.detach()
    clear(page)
    assert problems == []


def test_page_shows_backend_and_time(mnist: tuple[Page, list[str]],
                                     digits: list[tuple[int, bytes, int]]) -> None:
    page, _ = mnist
    draw(page, digits[0][1])
    settle(page)
    assert page.locator("#backend").inner_text().startswith("WebGPU in this page (")
    timing = page.locator("#timing").inner_text()
    assert re.search(r"\d+(\.\d)? ms\s+in Python · \d+(\.\d)? ms round trip", timing), timing
    result = shown(page)["result"]
    assert result["backend"] == "webgpu (page)" and result["ms"] > 0
    bars = page.locator("#bars li")
    assert bars.count() == 10
    top = page.locator("#bars li.top")
    assert top.count() == 1 and top.locator(".digit").inner_text() == str(result["label"])
    clear(page)


def test_page_equals_native_inference(mnist: tuple[Page, list[str]],
                                      digits: list[tuple[int, bytes, int]],
                                      native: Callable[[list[int]], dict[str, Any]]) -> None:
    page, _ = mnist
    draw(page, digits[7][1])
    settle(page)
    state = shown(page)
    pixels = state["input"]
    assert len(pixels) == SIDE * SIDE and all(0 <= p <= 255 for p in pixels)
    assert max(pixels) > 200  # the preprocessing kept the ink
    # MNIST's layout: the ink fits a 20x20 box, its centre of mass is the field's centre
    ink = [(i // SIDE, i % SIDE, p) for i, p in enumerate(pixels) if p > 0]
    mass = sum(p for _, _, p in ink)
    centre = (sum((r + 0.5) * p for r, _, p in ink) / mass,
              sum((c + 0.5) * p for _, c, p in ink) / mass)
    assert abs(centre[0] - 14) < 0.5 and abs(centre[1] - 14) < 0.5, centre
    rows = [r for r, _, p in ink if p > 64]
    cols = [c for _, c, p in ink if p > 64]
    assert 18 <= max(max(rows) - min(rows), max(cols) - min(cols)) + 1 <= 21
    expected = native(pixels)
    got = state["result"]["probabilities"]
    assert state["result"]["label"] == expected["label"]
    assert max(abs(a - b) for a, b in zip(got, expected["probabilities"], strict=True)) < 1e-4
    clear(page)


def test_failed_prediction_is_shown_and_the_page_keeps_working(
        mnist: tuple[Page, list[str]], digits: list[tuple[int, bytes, int]]) -> None:
    page, problems = mnist
    # pyrite.js itself: a Python exception rejects with its message and type
    error = page.evaluate("""async () => {
        const pyrite = await import('/pyrite.js');
        try { await pyrite.predict('mnist', {pixels: [1, 2]}); return null; }
        catch (e) { return {message: e.message, type: e.pythonType}; }
    }""")
    assert error == {"message": "mnist: 'pixels' must hold 784 numbers (28x28), got 2",
                     "type": "ValueError"}
    # the page's own path shows it
    page.evaluate("mnistDemo.predictPixels([1, 2])")
    alert = page.get_by_role("alert")
    assert alert.is_visible()
    assert "ValueError: mnist: 'pixels' must hold 784 numbers" in alert.inner_text()
    # and the next drawing is predicted again
    index, image, label = digits[4]
    draw(page, image)
    settle(page)
    state = shown(page)
    assert state["error"] is None and state["result"]["version"] == page.evaluate(
        "mnistDemo.version")
    assert state["label"] == str(state["result"]["label"])
    assert alert.is_hidden()
    clear(page)
    assert problems == []


def test_phone_layout(mnist: tuple[Page, list[str]], digits: list[tuple[int, bytes, int]],
                      screenshots: Path) -> None:
    page, problems = mnist
    page.set_viewport_size(PHONE)
    try:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the page scrolls sideways on a phone ({width} px)"
        pad = page.locator("#pad").bounding_box()
        assert pad is not None
        assert pad["x"] >= 0 and pad["x"] + pad["width"] <= PHONE["width"]
        assert pad["width"] >= 300  # most of the screen to draw on
        index, image, label = digits[9]
        draw(page, image)
        settle(page)
        assert shown(page)["result"]["label"] == label
        page.screenshot(path=str(screenshots / "mnist-phone.png"), full_page=True)
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=str(screenshots / "mnist-phone-dark.png"))
        page.emulate_media(color_scheme="light")
        clear(page)
    finally:
        page.set_viewport_size(DESKTOP)
    assert problems == []


def test_without_webgpu_the_page_offers_the_server(
        launch_chromium: Callable[..., Browser], server_url: str,
        digits: list[tuple[int, bytes, int]], native: Callable[[list[int]], dict[str, Any]],
        screenshots: Path) -> None:
    browser = launch_chromium(webgpu=False)  # navigator.gpu is there, but gives no adapter
    page = browser.new_page(viewport=DESKTOP, reduced_motion="reduce")
    problems = _watch(page)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(server_url + "mnist")
    page.wait_for_function("document.querySelector('#status').dataset.state !== 'loading'",
                           timeout=LOAD_TIMEOUT_MS)
    assert page.evaluate("mnistDemo.ready")["state"] == "fallback"
    reason = page.locator("#fallback-reason").inner_text()
    assert reason.startswith("No WebGPU here: ") and "adapter" in reason, reason
    offer = page.get_by_role("button", name="Predict on the server")
    assert offer.is_visible()
    page.screenshot(path=str(screenshots / "mnist-no-webgpu-offer.png"), full_page=True)
    # nothing booted Pyodide for nothing, and nothing is predicted before the user asks
    assert not any("/pyodide/" in url for url in requested), requested
    index, image, label = digits[2]
    draw(page, image)
    page.wait_for_timeout(400)
    assert page.locator("#prediction").get_attribute("data-label") == ""
    assert page.evaluate("mnistDemo.predictions") == 0
    offer.click()
    settle(page)
    state = shown(page)
    assert state["result"]["backend"] == "numpy (server)"
    assert page.locator("#backend").inner_text() == "numpy on the server"
    assert re.search(r"\d ms\s+on the server · \d+(\.\d)? ms with the request",
                     page.locator("#timing").inner_text())
    assert state["label"] == str(label)
    expected = native(state["input"])
    assert max(abs(a - b) for a, b in zip(state["result"]["probabilities"],
                                          expected["probabilities"], strict=True)) < 1e-6
    page.screenshot(path=str(screenshots / "mnist-no-webgpu.png"), full_page=True)
    page.close()
    assert problems == []


def test_missing_browser_pieces_skip_or_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Chromium the tests skip, unless PYRITE_REQUIRE names `browser`."""
    monkeypatch.setattr(harness, "CHROMIUM", str(Path(os.devnull) / "no-chromium"))
    monkeypatch.setenv("PYRITE_REQUIRE", "")
    with pytest.raises(pytest.skip.Exception, match="no-chromium is missing"):
        harness.require_browser()
    monkeypatch.setenv("PYRITE_REQUIRE", "webgpu,browser")
    with pytest.raises(pytest.fail.Exception, match="required"):
        harness.require_browser()


def test_a_dot_or_a_scribble_is_not_called_a_sure_digit(
        mnist: tuple[Page, list[str]], digits: list[tuple[int, bytes, int]],
        screenshots: Path) -> None:
    page, problems = mnist
    dot = bytearray(SIDE * SIDE)
    dot[14 * SIDE + 14] = 255
    for name, image in [("dot", bytes(dot)), ("scribble", bytes([255]) * (SIDE * SIDE))]:
        clear(page)
        draw(page, image)
        settle(page)
        text = page.locator("#confidence").inner_text()
        assert "does not look like a digit" in text, (name, text)
        assert page.locator("#confidence").get_attribute("data-doubt") == "yes"
        page.screenshot(path=str(screenshots / f"mnist-{name}.png"))
    clear(page)
    draw(page, digits[0][1])  # a real digit: no doubt
    settle(page)
    assert page.locator("#confidence").get_attribute("data-doubt") == ""
    assert problems == []
