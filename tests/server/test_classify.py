"""The image classification demo on the server: `/api/predict/squeezenet` (the same Python as
natively), a missing model's clear 503, the sample photos (`/api/samples`, `/samples/*`), the
`/classify` page and the files the demo pages share (`/demos/shared/*`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pyrite import config
from pyrite.demos import registry
from pyrite.demos.image_classification import files, predict
from pyrite.server import create_app
from pyrite.server.folders import demo_page_dir, shared_page_dir

JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 60  # enough of a JPEG to be listed and served
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 60


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    folder = tmp_path / "samples"
    folder.mkdir()
    (folder / "bald_eagle.jpeg").write_bytes(JPEG)
    (folder / "cat.png").write_bytes(PNG)
    (folder / "notes.txt").write_text("not a photo")
    (folder / ".hidden.jpg").write_bytes(JPEG)
    (folder / "empty.jpg").write_bytes(b"")
    (folder / "huge.webp").write_bytes(b"RIFF" + b"\x00" * 10_000_001)
    return folder


@pytest.fixture
def client(web_dir: Path, samples: Path) -> Iterator[TestClient]:
    """The app over the fake bundle, with the real demo pages and the samples above."""
    with TestClient(create_app(web_dir, samples_dir=samples)) as c:
        yield c


def _models() -> Path:
    root = config.models_dir()
    if not root or not (Path(root) / files.FOLDER / files.ONNX).is_file():
        pytest.skip(f"SqueezeNet is not installed: set PYRITE_MODELS to a folder holding "
                    f"{files.FOLDER}/{files.ONNX}")
    return Path(root)


def _photo_pixels() -> bytes:
    """A made-up photo: a smooth colour ramp, 227x227 RGB."""
    side = predict.SIDE
    return bytes(v % 256 for y in range(side) for x in range(side)
                 for v in (x + y, 2 * x, 255 - y))


def test_predict_squeezenet_is_the_native_answer(client: TestClient) -> None:
    _models()
    pixels = _photo_pixels()
    r = client.post("/api/predict/squeezenet", json={"pixels": list(pixels)})
    assert r.status_code == 200, r.text
    served = r.json()
    demo = registry.get("squeezenet")
    native = demo.predict(demo.load("numpy"), {"pixels": pixels})
    assert served["backend"] == "numpy (server)" and served["ms"] > 0
    assert served["index"] == native["index"] and served["label"] == native["label"]
    assert [c["index"] for c in served["top"]] == [c["index"] for c in native["top"]]
    for got, want in zip(served["top"], native["top"], strict=True):
        assert got == {**want, "probability": pytest.approx(want["probability"])}
    assert len(served["top"]) == 5 and set(served["top"][0]) == {
        "index", "label", "text", "wnid", "probability"}


def test_predict_squeezenet_refuses_bad_pixels(client: TestClient) -> None:
    _models()
    r = client.post("/api/predict/squeezenet", json={"pixels": [1, 2, 3]})
    assert r.status_code == 422
    assert r.json()["error"].startswith("squeezenet: 'pixels' must hold 154587 items, got 3; "
                                        "send a JSON object such as {\"pixels\": [154587 ")
    r = client.post("/api/predict/squeezenet", json={"photo": "cat.jpg"})
    assert r.status_code == 422 and "unknown field 'photo'" in r.json()["error"]


def test_a_missing_model_is_a_503_that_says_where_to_put_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, client: TestClient) -> None:
    monkeypatch.setenv("PYRITE_MODELS", str(tmp_path / "models"))
    r = client.post("/api/predict/squeezenet", json={"pixels": [0] * predict.PIXELS})
    assert r.status_code == 503
    error = r.json()["error"]
    assert error.startswith("squeezenet: the model is not installed on this server: ")
    assert f"put SqueezeNet 1.1 ({files.ONNX}) and its ImageNet labels ({files.LABELS}) in " \
           f"{tmp_path / 'models' / files.FOLDER}/" in error
    assert "--api-device" not in error  # another device would not help
    models = {m["name"]: m for m in client.get("/api/models").json()["models"]}
    assert models["squeezenet"]["missing"].startswith("squeezenet: ")
    assert models["squeezenet"]["page"] == "/classify" and models["mnist"]["missing"] is None
    config_ = client.get("/api/config").json()
    assert config_["models"] == ["charlm", "mnist"] and "squeezenet" in config_["unavailable"]
    # the rest keeps working
    assert client.post("/api/predict/mnist", json={"pixels": [0] * 784}).status_code == 200
    assert client.get("/classify").status_code == 200


def test_samples_are_listed_and_served(client: TestClient, samples: Path) -> None:
    r = client.get("/api/samples")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-cache"
    listing = r.json()
    assert listing["samples"] == [
        {"name": "bald eagle", "file": "bald_eagle.jpeg", "url": "/samples/bald_eagle.jpeg",
         "bytes": len(JPEG)},
        {"name": "cat", "file": "cat.png", "url": "/samples/cat.png", "bytes": len(PNG)}]
    assert listing["hint"] == f"2 photos from {samples}"
    r = client.get("/samples/bald_eagle.jpeg")
    assert r.status_code == 200 and r.content == JPEG
    assert r.headers["content-type"] == "image/jpeg"
    assert client.get("/samples/cat.png").headers["content-type"] == "image/png"
    for refused in ("notes.txt", ".hidden.jpg", "../secret.txt", "nope.jpg"):
        r = client.get(f"/samples/{refused}")
        assert r.status_code == 404, refused
        assert "error" in r.json()


def test_no_samples_folder_is_an_empty_list_with_a_hint(web_dir: Path, tmp_path: Path) -> None:
    with TestClient(create_app(web_dir, samples_dir=tmp_path / "none")) as c:
        listing = c.get("/api/samples").json()
    assert listing["samples"] == []
    assert listing["hint"] == (f"no sample photos: put JPEG, PNG or WebP files in "
                               f"{tmp_path / 'none'} ($PYRITE_DATA/samples/) to offer them here")


def test_the_samples_folder_is_the_data_folders(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path, web_dir: Path) -> None:
    monkeypatch.setenv("PYRITE_DATA", str(tmp_path))
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "x.jpg").write_bytes(JPEG)
    with TestClient(create_app(web_dir)) as c:
        assert [s["file"] for s in c.get("/api/samples").json()["samples"]] == ["x.jpg"]


def test_the_classify_page_and_the_shared_files(client: TestClient) -> None:
    page = demo_page_dir("image_classification")
    shared = shared_page_dir()
    assert page is not None and shared is not None
    r = client.get("/classify")
    assert r.status_code == 200 and r.text == (page / "index.html").read_text()
    assert client.get("/demos/classify/app.js").text == (page / "app.js").read_text()
    for name in ("demo.js", "demo.css"):
        r = client.get(f"/demos/shared/{name}")
        assert r.status_code == 200 and r.text == (shared / name).read_text()
    assert r.headers["content-type"] == "text/css; charset=utf-8"
    assert client.get("/demos/shared/../registry.py").status_code == 404
    # every file a demo page links exists
    for demo in ("classify", "mnist"):
        html = client.get(f"/{demo}").text
        for link in ("/demos/shared/demo.css", f"/demos/{demo}/style.css",
                     f"/demos/{demo}/app.js"):
            assert link in html and client.get(link).status_code == 200, (demo, link)
    home = client.get("/").text
    assert '<a href="/classify">classify</a>' in home and "SqueezeNet 1.1" in home


def test_api_models_names_each_page(client: TestClient) -> None:
    models = {m["name"]: m for m in client.get("/api/models").json()["models"]}
    assert models["mnist"]["page"] == "/mnist" and models["squeezenet"]["page"] == "/classify"
    assert "154587 numbers" in models["squeezenet"]["inputs"]
    json.dumps(models)  # JSON all through
