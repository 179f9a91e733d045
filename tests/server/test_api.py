"""The JSON API (server/api.py, predictor.py, body.py): answers, and every error as JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import pyrite
from pyrite.demos import registry
from pyrite.server import create_app
from pyrite.server.predictor import Predictor

REPO = Path(__file__).resolve().parents[2]
DATA = next((Path(p) for p in (os.environ.get("PYRITE_TEST_DATA"), REPO / "shared/data",
                               REPO.parent / "shared/data") if p and (Path(p) / "mnist").is_dir()),
            None)
ZEROS = {"pixels": [0] * 784}


def test_healthz(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "version": pyrite.__version__}


def test_models(client: TestClient) -> None:
    models = client.get("/api/models").json()["models"]
    assert [m["name"] for m in models] == registry.names()
    mnist = next(m for m in models if m["name"] == "mnist")
    assert mnist["description"] == registry.get("mnist").description
    assert "pixels" in mnist["inputs"]
    assert mnist["predict"] == "/api/predict/mnist"


def test_config_without_packages(client: TestClient) -> None:
    missing = {name: reason for name in registry.names()
               if (reason := registry.get(name).missing()) is not None}
    assert client.get("/api/config").json() == {
        "pyodide": "/pyodide/", "pyodide_packages": None,
        "models": [name for name in registry.names() if name not in missing],
        "unavailable": missing}


def test_config_with_a_packages_url(web_dir: Path) -> None:
    app = create_app(web_dir, pyodide_packages="https://cdn.example/pyodide/v0.27.0/full")
    with TestClient(app) as c:
        config = c.get("/api/config").json()
        assert config["pyodide_packages"] == "https://cdn.example/pyodide/v0.27.0/full/"
        assert c.get("/pyodide-packages/numpy.whl").status_code == 404  # not served here


def test_config_with_a_packages_folder(web_dir: Path, tmp_path: Path) -> None:
    packages = tmp_path / "full"
    packages.mkdir()
    (packages / "numpy-2.0.0-cp312-cp312-pyodide_2024_0_wasm32.whl").write_bytes(b"PK")
    app = create_app(web_dir, pyodide_packages=packages)
    with TestClient(app) as c:
        assert c.get("/api/config").json()["pyodide_packages"] == "/pyodide-packages/"
        r = c.get("/pyodide-packages/numpy-2.0.0-cp312-cp312-pyodide_2024_0_wasm32.whl")
        assert r.status_code == 200
        assert r.content == b"PK"
        assert r.headers["content-type"] == "application/zip"
        assert c.get("/pyodide-packages/..%2fsecret.txt").status_code == 404


def test_predict(client: TestClient) -> None:
    r = client.post("/api/predict/mnist", json=ZEROS)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["backend"] == "numpy (server)"
    assert isinstance(out["ms"], float) and out["ms"] >= 0
    assert len(out["probabilities"]) == 10
    assert out["label"] == max(range(10), key=out["probabilities"].__getitem__)


def test_unknown_model_is_404_naming_the_known_ones(client: TestClient) -> None:
    r = client.post("/api/predict/resnet", json=ZEROS)
    assert r.status_code == 404
    assert "unknown model 'resnet'" in r.json()["error"]
    assert "mnist" in r.json()["error"]


@pytest.mark.parametrize("body", [b"", b"{", b"{'pixels': []}", b"\xff\xfe\x00", b"[" * 100_0])
def test_bad_json_is_400(client: TestClient, body: bytes) -> None:
    r = client.post("/api/predict/mnist", content=body,
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert "JSON" in r.json()["error"]


@pytest.mark.parametrize("value", [[1, 2], "pixels", 3, None])
def test_json_that_is_not_an_object_is_400(client: TestClient, value: object) -> None:
    r = client.post("/api/predict/mnist", content=json.dumps(value))
    assert r.status_code == 400
    assert r.json()["error"].startswith("mnist: the input must be a JSON object, got ")
    assert r.json()["error"].endswith('; send a JSON object such as '
                                      '{"pixels": [784 numbers 0..255]}')


@pytest.mark.parametrize(("body", "message"), [
    ({}, "'pixels' is missing"),
    ({"pixels": [0] * 10}, "'pixels' must hold 784 items, got 10"),
    ({"pixels": [0] * 783 + [256]}, "'pixels': pixel 783 is 256"),
    ({"pixels": [0] * 783 + ["x"]}, "'pixels': pixel 783 is 'x'"),
    ({"pixels": "0" * 784}, "'pixels' must be a list, got a string"),
])
def test_bad_pixels_are_422_with_the_message(client: TestClient, body: dict[str, object],
                                             message: str) -> None:
    r = client.post("/api/predict/mnist", json=body)
    assert r.status_code == 422
    assert message in r.json()["error"]


def test_oversize_body_is_413(client: TestClient) -> None:  # the app's limit: 10,000 bytes
    r = client.post("/api/predict/mnist", content=b" " * 10_001)
    assert r.status_code == 413
    assert "larger than 10000 bytes" in r.json()["error"]
    assert "--max-body" in r.json()["error"]


def test_oversize_chunked_body_without_length_is_413(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b" " * 1000

    r = client.post("/api/predict/mnist", content=chunks())
    assert "content-length" not in r.request.headers
    assert r.request.headers["transfer-encoding"] == "chunked"
    assert r.status_code == 413


def test_lying_content_length_is_cut_at_the_limit(client: TestClient) -> None:
    r = client.post("/api/predict/mnist", content=b" " * 15_000, headers={"Content-Length": "10"})
    assert r.status_code in (400, 413)  # never read past the limit


def test_body_at_the_limit_is_read(client: TestClient) -> None:
    r = client.post("/api/predict/mnist", content=b"{}" + b" " * 9_998)
    assert r.status_code == 422  # read and parsed: no pixels
    assert "'pixels' is missing" in r.json()["error"]


def test_wrong_method_is_405_json(client: TestClient) -> None:
    r = client.get("/api/predict/mnist")
    assert r.status_code == 405
    assert r.headers["allow"] == "POST"
    assert r.json() == {"error": "GET is not allowed on /api/predict/mnist; use POST"}
    assert client.post("/healthz").headers["allow"] == "GET, HEAD"
    assert client.post("/pyrite.js").status_code == 405
    assert client.post("/nothing-here").status_code == 404
    assert client.delete("/mnist").status_code == 405


def test_unknown_load_device_is_503(web_dir: Path) -> None:
    app = create_app(web_dir, api_device="no-such-device")
    with TestClient(app) as c:
        r = c.post("/api/predict/mnist", json=ZEROS)
    assert r.status_code == 503
    assert "cannot load the model on 'no-such-device'" in r.json()["error"]
    assert "--api-device" in r.json()["error"]


def test_predictor_loads_each_model_once() -> None:
    predictor = Predictor("numpy")
    predictor.predict("mnist", ZEROS)
    first = predictor._loaded["mnist"].model
    predictor.predict("mnist", ZEROS)
    assert predictor._loaded["mnist"].model is first


@pytest.mark.skipif(DATA is None, reason="no MNIST files (shared/data/mnist; PYRITE_TEST_DATA)")
def test_predict_equals_native_inference_on_mnist_digits(client: TestClient) -> None:
    from pyrite.dataset import MnistDataset
    test_set = MnistDataset("test", root=DATA, download=False)
    demo = registry.get("mnist")
    model = demo.load("numpy", demo.record)
    correct = 0
    for index in range(0, 10_000, 1250):
        item = test_set.get(index)
        assert item is not None
        pixels = list(item["image"])
        native = demo.predict(model, {"pixels": pixels})
        served = client.post("/api/predict/mnist", json={"pixels": pixels}).json()
        assert served["label"] == native["label"]
        assert served["probabilities"] == native["probabilities"]
        correct += served["label"] == item["label"]
    assert correct >= 7  # 99 % accurate on the test set: 8 digits, at most one wrong
