"""The image classification page (`/classify`) end to end, in Chromium against `pyrite serve`.

Each sample photo is picked on the page; the browser decodes and crops it, the demo's Python
runs SqueezeNet in the page (Pyodide, WebGPU through SwiftShader), and its top-5 must be
onnxruntime's for the very pixels the page fed the model (read back from the page): the same
top-1 and probabilities within 1e-3. The page's crop must also be close to Pillow's (what
`pyrite infer squeezenet` feeds). Oversize and non-image uploads must give a readable error and
leave the page working; without WebGPU the page offers the server, which gives the same answer;
and a server without the model says where to put it. Needs $PYRITE_MODELS (the Makefile sets
it) and the sample photos in $PYRITE_DATA/samples (else ../shared/data/samples).
"""

from __future__ import annotations

import io
import json
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pyrite import config

from . import harness

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

np = pytest.importorskip("numpy")

SIDE = 227
PIXELS = SIDE * SIDE * 3
MEAN_BGR = (104.0, 117.0, 123.0)
PROB_TOLERANCE = 1e-3
#: the page's crop, resampled by the browser, against Pillow's: mean absolute difference in
#: grey levels (the two resamplers differ a little; a wrong crop or channel order is far off)
MAX_MEAN_PIXEL_DIFF = 6.0
LOAD_TIMEOUT_MS = 300_000  # Pyodide, the wheels, the device, the model and its first run
PREDICT_TIMEOUT_MS = 120_000
DESKTOP = {"width": 1200, "height": 900}
PHONE = {"width": 390, "height": 844}
SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")

SETTLED = "() => { const d = window.classifyDemo; return d && !d.busy && " \
          "d.predictedVersion === d.version; }"


# ---- what the tests compare with ----------------------------------------------------------------

def _models_root() -> Path:
    root = config.models_dir()
    if not root:
        pytest.skip("SqueezeNet is not configured: set PYRITE_MODELS to the folder holding "
                    "squeezenet1.1/ (the Makefile does)")
    return Path(root)


def _samples() -> list[Path]:
    given = config.data_dir()
    # as the Makefile does: the shared data folder beside the checkout
    root = Path(given) if given else Path(__file__).resolve().parents[3] / "shared" / "data"
    found = sorted(p for p in (root / "samples").glob("*") if p.suffix.lower() in SUFFIXES)
    if not found:
        pytest.skip(f"no sample photos in {root / 'samples'} (set PYRITE_DATA)")
    return found


@pytest.fixture(scope="module")
def reference() -> Callable[[list[int]], np.ndarray]:
    """onnxruntime on 227x227 RGB pixels: the 1000 probabilities."""
    ort = pytest.importorskip("onnxruntime")
    onnx = _models_root() / "squeezenet1.1" / "squeezenet1.1.onnx"
    if not onnx.is_file():
        pytest.fail(f"PYRITE_MODELS is set but {onnx} is missing")
    session = ort.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])

    def run(pixels: list[int]) -> np.ndarray:
        hwc = np.asarray(pixels, np.uint8).reshape(SIDE, SIDE, 3)
        bgr = hwc[:, :, ::-1].astype(np.float32) - np.array(MEAN_BGR, np.float32)
        return session.run(None, {"data": bgr.transpose(2, 0, 1)[None].copy()})[0][0]

    return run


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the page's screenshots go (printed; pytest keeps its last few temp folders)."""
    folder = tmp_path_factory.mktemp("classify-page-screenshots")
    print(f"\nscreenshots of the classify page: {folder}")
    return folder


# ---- driving the page --------------------------------------------------------------------------

def settle(page: Page) -> None:
    """Wait until the page is done with the latest photo chosen."""
    page.wait_for_function(SETTLED, timeout=PREDICT_TIMEOUT_MS)


def state(page: Page) -> dict[str, Any]:
    """What the page shows and knows about its latest photo and prediction."""
    got: dict[str, Any] = page.evaluate("""() => {
        const d = window.classifyDemo;
        return {label: document.querySelector('#prediction').dataset.label,
                result: d.lastResult, input: d.lastInput && Array.from(d.lastInput),
                error: d.lastError, photoError: d.photoError, predictions: d.predictions,
                version: d.version};
    }""")
    return got


def pick(page: Page, photo: Path) -> dict[str, Any]:
    """Classify `photo`: its sample button when the server lists it, else an upload."""
    before = page.evaluate("classifyDemo.predictions")
    button = page.locator(f'button.sample[data-file="{photo.name}"]')
    if button.count():
        button.click()
    else:
        page.locator("#file").set_input_files(str(photo))
    settle(page)
    got = state(page)
    assert got["photoError"] is None and got["error"] is None, got
    assert got["predictions"] == before + 1
    return got


def _png_header(width: int, height: int) -> bytes:
    """A PNG's signature and header chunk declaring width x height, and no pixels."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8,
                                                                   0, 0, 0, 0))
            + chunk(b"IEND", b""))


def upload(page: Page, name: str, mime: str, data: bytes) -> None:
    page.locator("#file").set_input_files({"name": name, "mimeType": mime, "buffer": data})
    settle(page)


def _watch(page: Page) -> list[str]:
    """Collects the page's uncaught errors and console errors."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    page.on("console", lambda msg: problems.append(f"console: {msg.text}")
            if msg.type == "error" else None)
    return problems


def _pillow(photo: Path) -> np.ndarray:
    from pyrite.demos.image_classification.image import photo_pixels

    return np.frombuffer(photo_pixels(photo), np.uint8).astype(np.int16)


@pytest.fixture(scope="module")
def classify(chromium: Browser, server_url: str) -> Iterator[tuple[Page, list[str]]]:
    """The page, loaded and ready (WebGPU in the page), with its list of errors."""
    _models_root()
    context = chromium.new_context(viewport=DESKTOP, reduced_motion="reduce")  # no animations
    page = context.new_page()
    problems = _watch(page)
    page.goto(server_url + "classify")
    page.wait_for_function("document.querySelector('#status').dataset.state !== 'loading'",
                           timeout=LOAD_TIMEOUT_MS)
    ready = page.evaluate("classifyDemo.ready")
    assert ready["state"] == "ready", (ready, page.locator("#status").inner_text(), problems)
    yield page, problems
    context.close()


# ---- the tests ---------------------------------------------------------------------------------

def test_page_loads_on_webgpu_with_the_samples(classify: tuple[Page, list[str]],
                                               server_url: str) -> None:
    page, problems = classify
    assert page.evaluate("classifyDemo.ready")["device"] == "webgpu"
    assert re.search(r"WebGPU in this page \(.+\)", page.locator("#backend").inner_text())
    status = page.locator("#status-text").inner_text()
    assert "loaded in" in status and "first run" in status
    listed = page.evaluate("classifyDemo.samples")
    served = json.loads(page.evaluate("async (u) => (await fetch(u)).text()",
                                      server_url + "api/samples"))["samples"]
    assert listed == served
    assert page.locator("button.sample").count() == len(listed)
    if config.data_dir():  # the server was given the data folder: it offers every sample
        assert [s["file"] for s in listed] == [p.name for p in _samples()]
    assert problems == []


def test_each_sample_is_classified_as_onnxruntime_does(
        classify: tuple[Page, list[str]], reference: Callable[[list[int]], np.ndarray],
        screenshots: Path) -> None:
    page, problems = classify
    lines = []
    for n, photo in enumerate(_samples()):
        got = pick(page, photo)
        result, pixels = got["result"], got["input"]
        assert len(pixels) == PIXELS and result["photo"] == photo.name
        diff = float(np.abs(np.asarray(pixels, np.int16) - _pillow(photo)).mean())
        assert diff < MAX_MEAN_PIXEL_DIFF, f"{photo.name}: the page's crop is {diff:.1f} " \
                                           f"grey levels from Pillow's on average"
        probs = reference(pixels)
        expected = int(np.argmax(probs))
        assert result["index"] == expected, (photo.name, result["top"], expected)
        assert got["label"] == result["label"] == result["top"][0]["label"]
        for c in result["top"]:
            assert abs(c["probability"] - float(probs[c["index"]])) < PROB_TOLERANCE, \
                (photo.name, c, float(probs[c["index"]]))
        assert [c["index"] for c in result["top"]] == list(np.argsort(-probs)[:5])
        lines.append(f"{photo.name}: {result['label']} {result['probability']:.3f} "
                     f"({result['ms']:.0f} ms, crop off Pillow's by {diff:.1f})")
        if n == 0:
            page.screenshot(path=str(screenshots / "classify-desktop.png"), full_page=True)
    print("\nclassify page (WebGPU in the page): " + "; ".join(lines))
    assert problems == []


def test_page_shows_top5_backend_and_time(classify: tuple[Page, list[str]]) -> None:
    page, _ = classify
    got = pick(page, _samples()[0])
    result = got["result"]
    assert result["backend"] == "webgpu (page)" and result["ms"] > 0
    assert page.locator("#backend").inner_text().startswith("WebGPU in this page (")
    timing = page.locator("#timing").inner_text()
    assert re.search(r"\d+(\.\d)? ms\s+in Python · \d+(\.\d)? ms round trip", timing), timing
    bars = page.locator("#bars li")
    assert bars.count() == 5
    for i, c in enumerate(result["top"]):
        assert bars.nth(i).locator(".name").inner_text() == c["label"]
        assert bars.nth(i).get_attribute("aria-label").startswith(f"{c['label']}: ")
    top = page.locator("#bars li.top")
    assert top.count() == 1 and top.locator(".name").inner_text() == result["label"]
    assert page.locator("#prediction").inner_text() == result["label"]
    confidence = page.locator("#confidence").inner_text()
    assert " % sure" in confidence
    # a best guess under 30 % says it is unsure
    assert ("Low confidence" in confidence) == (result["probability"] < 0.3), confidence
    assert page.locator("#input227").is_visible() and page.locator("#photo").is_visible()


def test_bad_uploads_give_readable_errors_and_the_page_keeps_working(
        classify: tuple[Page, list[str]]) -> None:
    page, problems = classify
    from PIL import Image

    alert = page.locator("#photo-error")
    before = page.evaluate("classifyDemo.predictions")
    # over 10 MB (checked before anything is decoded)
    upload(page, "huge.jpg", "image/jpeg", b"\xff\xd8\xff\xe0" + bytes(11_000_000))
    assert alert.is_visible()
    assert alert.inner_text() == ("huge.jpg is 11 MB; photos may be at most 10 MB. Pick a "
                                  "smaller one.")
    # not an image at all
    upload(page, "notes.txt", "text/plain", b"these are my notes, not a photo\n" * 20)
    assert alert.inner_text() == ("notes.txt is not a JPEG, PNG or WebP image (it is "
                                  "text/plain). Pick a photo in one of those formats.")
    # text named like a photo: the message does not say it is a JPEG
    upload(page, "holiday.jpg", "image/jpeg", b"these are my notes, not a photo\n" * 20)
    assert alert.inner_text() == ("holiday.jpg is not a JPEG, PNG or WebP image (its name "
                                  "says image/jpeg, but its content is not). Pick a photo in "
                                  "one of those formats.")
    # a huge image that is small as a file: refused from its header, before decoding
    upload(page, "huge.png", "image/png", _png_header(20_000, 20_000))
    assert alert.inner_text() == ("huge.png is 20000 × 20000 pixels; photos may be at most "
                                  "8000 pixels a side. Scale it down and try again.")
    # an image of more than 8000 pixels a side (small as a file)
    wide = io.BytesIO()
    Image.new("RGB", (9000, 8), (10, 20, 30)).save(wide, "PNG")
    upload(page, "wide.png", "image/png", wide.getvalue())
    assert alert.inner_text() == ("wide.png is 9000 × 8 pixels; photos may be at most 8000 "
                                  "pixels a side. Scale it down and try again.")
    # a JPEG's header with nothing decodable after it
    upload(page, "broken.jpg", "image/jpeg", b"\xff\xd8\xff\xe0\x00\x10JFIF" + bytes(200))
    assert "broken.jpg looks like a JPEG image but could not be decoded" in alert.inner_text()
    assert page.evaluate("classifyDemo.predictions") == before  # nothing was sent to the model
    # and the next photo is classified again, here uploaded
    photo = _samples()[1]
    page.locator("#file").set_input_files(str(photo))
    settle(page)
    got = state(page)
    assert got["photoError"] is None and got["error"] is None
    assert got["predictions"] == before + 1 and got["result"]["photo"] == photo.name
    assert alert.is_hidden() and page.locator("#error").is_hidden()
    assert got["label"] == got["result"]["label"]
    # a PNG of the right kind goes through too (Pillow-made, with an alpha channel)
    small = io.BytesIO()
    Image.new("RGBA", (300, 200), (200, 30, 30, 255)).save(small, "PNG")
    upload(page, "red.png", "image/png", small.getvalue())
    got = state(page)
    assert got["photoError"] is None and got["result"]["photo"] == "red.png"
    assert got["input"][:3] == [200, 30, 30]
    assert problems == []


def _portrait(folder: Path, kind: str) -> tuple[Path, tuple[int, int]]:
    """A real portrait photo, cut from a sample as a tall strip: "plain" (stored upright),
    "exif" (stored on its side with EXIF orientation 6, as phones save portraits) or "huge"
    (upright, scaled up to 6000 x 8000: large, though under the page's limits). Returns its
    path and its upright size."""
    from PIL import Image

    with Image.open(_samples()[0]) as opened:
        src = opened.convert("RGB")
    w, h = src.size
    strip = src.crop((w // 2 - h // 4, 0, w // 2 + h // 4, h))  # half as wide as tall
    path = folder / f"portrait-{kind}.jpg"
    if kind == "huge":
        strip = strip.resize((6000, 8000), Image.Resampling.BILINEAR)
    if kind == "exif":
        exif = Image.Exif()
        exif[0x0112] = 6  # shown turned 90 degrees clockwise: the stored image lies on its side
        strip.transpose(Image.Transpose.ROTATE_90).save(path, "JPEG", quality=95, exif=exif)
    else:
        strip.save(path, "JPEG", quality=95)
    return path, strip.size


def _crop_of(photo: Path, top: bool) -> np.ndarray:
    """Pillow's 227 x 227 of `photo` (upright), from the centre or, `top`, from the top."""
    from PIL import Image, ImageOps

    from pyrite.demos.image_classification.image import crop_box
    with Image.open(photo) as opened:
        image = ImageOps.exif_transpose(opened).convert("RGB")
    w, h, left, top_, right, bottom = crop_box(*image.size)
    box = (left, 0, right, SIDE) if top else (left, top_, right, bottom)
    cut = image.resize((w, h), Image.Resampling.BILINEAR).crop(box)
    return np.frombuffer(cut.tobytes(), np.uint8).astype(np.int16)


@pytest.mark.parametrize("kind", ["plain", "exif", "huge"])
def test_a_portrait_photo_is_cut_as_the_cli_cuts_it(classify: tuple[Page, list[str]],
                                                    tmp_path: Path, kind: str) -> None:
    """A tall photo: the preview shows all of it, upright; the model gets the centre square of
    the photo scaled to a shorter side of 256, as `pyrite infer squeezenet` does, and the page
    says so in numbers."""
    page, problems = classify
    photo, (width, height) = _portrait(tmp_path, kind)
    page.locator("#file").set_input_files(str(photo))
    settle(page)
    got = state(page)
    assert got["photoError"] is None and got["error"] is None, got
    assert got["result"]["photo"] == photo.name
    seen = np.asarray(got["input"], np.int16)
    cli = _pillow(photo)  # what `pyrite infer squeezenet` feeds the model
    near = float(np.abs(seen - cli).mean())
    wrong = float(np.abs(seen - _crop_of(photo, top=True)).mean())
    assert near < MAX_MEAN_PIXEL_DIFF < wrong, (near, wrong)  # the same square, not the top one
    assert np.array_equal(cli, _crop_of(photo, top=False))
    natural = page.evaluate("(() => { const i = document.querySelector('#photo'); return "
                            "[i.naturalWidth, i.naturalHeight, getComputedStyle(i).objectFit];"
                            " })()")
    assert natural == [width, height, "contain"]  # upright, and not cut in the preview
    scaled = round(height * 256 / width)
    assert page.inner_text("#resize-note") == (
        f"{width} × {height} photo, scaled to 256 × {scaled}; the model sees its centre "
        "227 × 227, not its top and bottom (the preview shows it all). `pyrite infer "
        "squeezenet` cuts the same square.")
    assert problems == []


def test_a_failed_prediction_is_shown_and_the_page_keeps_working(
        classify: tuple[Page, list[str]]) -> None:
    page, problems = classify
    error = page.evaluate("""async () => {
        const pyrite = await import('/pyrite.js');
        try { await pyrite.predict('squeezenet', {pixels: [1, 2, 3]}); return null; }
        catch (e) { return {message: e.message, type: e.pythonType}; }
    }""")
    assert error == {"message": "squeezenet: 'pixels' must hold 154587 numbers (227x227 RGB), "
                                "got 3", "type": "ValueError"}
    photo = _samples()[2]
    got = pick(page, photo)
    assert got["result"]["photo"] == photo.name
    assert problems == []


def test_the_api_gives_the_pages_answer(classify: tuple[Page, list[str]],
                                        server_url: str) -> None:
    page, _ = classify
    got = pick(page, _samples()[0])
    served = page.evaluate("""async ([url, pixels]) => {
        const r = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json'},
                                    body: JSON.stringify({pixels})});
        return r.json();
    }""", [server_url + "api/predict/squeezenet", got["input"]])
    assert served["backend"] == "numpy (server)"
    assert served["index"] == got["result"]["index"]
    for a, b in zip(served["top"], got["result"]["top"], strict=True):
        assert a["index"] == b["index"]
        assert abs(a["probability"] - b["probability"]) < PROB_TOLERANCE


def test_phone_layout(classify: tuple[Page, list[str]], screenshots: Path) -> None:
    page, problems = classify
    page.set_viewport_size(PHONE)
    try:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the page scrolls sideways on a phone ({width} px)"
        pick(page, _samples()[-1])
        page.screenshot(path=str(screenshots / "classify-phone.png"), full_page=True)
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=str(screenshots / "classify-phone-dark.png"))
        page.emulate_media(color_scheme="light")
    finally:
        page.set_viewport_size(DESKTOP)
    assert problems == []


def test_without_webgpu_the_page_offers_the_server(
        launch_chromium: Callable[..., Browser], server_url: str,
        reference: Callable[[list[int]], np.ndarray], screenshots: Path) -> None:
    _models_root()
    browser = launch_chromium(webgpu=False)  # navigator.gpu is there, but gives no adapter
    page = browser.new_page(viewport=DESKTOP, reduced_motion="reduce")
    problems = _watch(page)
    page.goto(server_url + "classify")
    page.wait_for_function("document.querySelector('#status').dataset.state !== 'loading'",
                           timeout=LOAD_TIMEOUT_MS)
    assert page.evaluate("classifyDemo.ready")["state"] == "fallback"
    assert page.locator("#fallback-reason").inner_text().startswith("No WebGPU here: ")
    page.get_by_role("button", name="Predict on the server").click()
    photo = _samples()[0]
    got = pick(page, photo)
    assert got["result"]["backend"] == "numpy (server)"
    assert page.locator("#backend").inner_text() == "numpy on the server"
    probs = reference(got["input"])
    assert got["result"]["index"] == int(np.argmax(probs))
    assert abs(got["result"]["probability"] - float(probs.max())) < PROB_TOLERANCE
    page.screenshot(path=str(screenshots / "classify-no-webgpu.png"), full_page=True)
    page.close()
    assert problems == []


def test_a_server_without_the_model_says_where_to_put_it(
        chromium: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        screenshots: Path) -> None:
    harness.require_browser()
    monkeypatch.setenv("PYRITE_MODELS", str(tmp_path / "models"))
    server = harness.Server()
    try:
        page = chromium.new_page(viewport=DESKTOP, reduced_motion="reduce")
        problems = _watch(page)
        page.goto(server.url + "/classify")
        page.wait_for_function("document.querySelector('#status').dataset.state !== 'loading'",
                               timeout=LOAD_TIMEOUT_MS)
        assert page.evaluate("classifyDemo.ready")["state"] == "missing"
        assert page.locator("#status-text").inner_text() == (
            "The SqueezeNet model is not installed on this server.")
        reason = page.locator("#fallback-reason").inner_text()
        assert f"put SqueezeNet 1.1 (squeezenet1.1.onnx) and its ImageNet labels (synset.txt) " \
               f"in {tmp_path / 'models' / 'squeezenet1.1'}/" in reason
        assert page.get_by_role("button", name="Predict on the server").is_hidden()
        page.screenshot(path=str(screenshots / "classify-missing-model.png"), full_page=True)
        page.close()
        assert problems == []
        assert any("pyrite serve: without the squeezenet model: " in line for line in server.log)
    finally:
        server.stop()
