"""The API's request schemas and its bounded, batching queue (server/batching.py, api.py,
demos/inputs.py): bad input is a 400 or 422 that names the field, never a 500; a full queue is a
503 with Retry-After; concurrent predictions for one model run in batches with the same answers
as one by one."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from pyrite.demos import registry
from pyrite.server import create_app
from pyrite.server.batching import Busy, PredictionQueue
from pyrite.server.predictor import Predictor

ZEROS = [0] * 784


@pytest.mark.parametrize(("model", "body", "status", "message"), [
    ("mnist", b'{"pixels": ' + b"9" * 5000 + b"}", 400, "more than 4,300 digits"),
    ("mnist", b'{"pixels": [' + b"1" * 5000 + b"]}", 400, "more than 4,300 digits"),
    ("mnist", b"[" * 5_000, 400, "nested too deeply"),
    ("mnist", b'"pixels"', 400, "the input must be a JSON object, got a string"),
    ("mnist", b'{"pixels": [' + b"true, " * 783 + b"true]}", 422,
     "'pixels': pixel 0 is True; every pixel must be a number in 0..255"),
    ("mnist", b'{"pixels": [' + b"0, " * 783 + b"NaN]}", 422, "pixel 783 is nan"),
    ("mnist", b'{"pixels": [' + b"0, " * 784 + b"0], "
              b'"extra": 1}', 422, "unknown field 'extra'; the fields are pixels"),
    ("mnist", b'{"pixels": null}', 422, "'pixels' must be a list, got null"),
    ("charlm", b'{"seed": "x"}', 422, "'seed' must be an integer in [0, 4294967295], got 'x'"),
    ("charlm", b'{"seed": 1.5}', 422, "'seed' must be an integer"),
    ("charlm", b'{"tokens": 99999}', 422, "'tokens' must be an integer in [0, 2000]"),
    ("charlm", b'{"tokens": true}', 422, "'tokens' must be an integer in [0, 2000], got True"),
    ("charlm", b'{"temperature": -1}', 422, "'temperature' must be a number in [0, 100]"),
    ("charlm", b'{"temprature": 1}', 422, "unknown field 'temprature'"),
    ("charlm", b'{"prompt": 5}', 422, "'prompt' must be a string, got an integer (5)"),
    ("charlm", b'{"prompt": "' + b"a" * 2_001 + b'"}', 422, "at most 2000 characters"),
    ("charlm", b'{"prompt": "caf\xc3\xa9", "tokens": 1}', 422, "does not know"),
])
def test_bad_input_is_a_4xx_naming_the_field(client: TestClient, model: str, body: bytes,
                                             status: int, message: str) -> None:
    r = client.post(f"/api/predict/{model}", content=body,
                    headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert message in r.json()["error"]
    if message != "does not know":  # that one says which characters the model knows
        assert "send a JSON object such as {" in r.json()["error"]


def test_squeezenet_refuses_booleans_as_pixels() -> None:
    from pyrite.demos.image_classification.predict import PIXELS, check_pixels

    with pytest.raises(ValueError, match="pixel value 0 is True"):
        check_pixels([True] + [0] * (PIXELS - 1))
    inputs = {"pixels": [False] * PIXELS}
    with pytest.raises(ValueError, match="squeezenet: 'pixels': pixel value 0 is False"):
        registry.get("squeezenet").check(inputs)
    checked = registry.get("squeezenet").check({"pixels": [7] * PIXELS})
    assert checked["pixels"] == bytes([7]) * PIXELS  # held as bytes while it waits


@pytest.fixture
def tiny_queue(web_dir: Path, page_dir: Path) -> Starlette:
    """The app with a queue of one place."""
    return create_app(web_dir, demo_pages={"mnist": page_dir}, queue_size=1)


def test_a_full_queue_is_503_with_retry_after(tiny_queue: Starlette) -> None:
    gate = threading.Event()
    routes = [r for r in tiny_queue.routes if getattr(r, "path", "") == "/api/predict/{model}"]
    api = routes[0].endpoint.__self__  # type: ignore[attr-defined]
    slow = api.queue.predictor.predict_many

    def held(name: str, batch: list[dict[str, object]]) -> list[dict[str, object]]:
        gate.wait(30)
        return slow(name, batch)
    api.queue.predictor.predict_many = held

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=tiny_queue)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            first = asyncio.create_task(c.post("/api/predict/mnist", json={"pixels": ZEROS}))
            while api.queue.pending == 0:
                await asyncio.sleep(0.01)
            second = await c.post("/api/predict/mnist", json={"pixels": ZEROS})
            gate.set()
            return [await first, second]

    first, second = asyncio.run(burst())
    assert first.status_code == 200
    assert second.status_code == 503 and second.headers["retry-after"] == "1"
    assert "the server is busy: 1 predictions are waiting or running" in second.json()["error"]
    assert api.queue.pending == 0


def test_admission_is_bounded_and_released() -> None:
    queue = PredictionQueue(Predictor(), size=2)
    with queue.admit(), queue.admit():
        with pytest.raises(Busy), queue.admit():
            pass
    assert queue.pending == 0
    with queue.admit():
        assert queue.pending == 1


def test_concurrent_predictions_run_in_batches_with_the_same_answers() -> None:
    predictor = Predictor()
    queue = PredictionQueue(predictor, max_batch=8)
    images = [[(i * 37 + j * 11) % 256 for j in range(784)] for i in range(12)]
    alone = [predictor.predict("mnist", {"pixels": image}) for image in images]

    async def together() -> list[dict[str, object]]:
        return await asyncio.gather(*(queue.predict("mnist", {"pixels": image})
                                      for image in images))
    batched = asyncio.run(together())
    assert queue.largest_batch > 1
    assert max(r["batch"] for r in batched) == queue.largest_batch  # type: ignore[type-var]
    for one, many in zip(alone, batched, strict=True):
        assert one["label"] == many["label"]
        assert one["probabilities"] == pytest.approx(many["probabilities"], abs=1e-5)
