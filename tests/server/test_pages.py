"""The home page and the demo pages (server/pages.py)."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pyrite.demos import registry
from pyrite.server import create_app
from pyrite.server.folders import demo_page_dir, demo_pages


def test_home_page_links_every_demo(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    links = re.findall(r'href="(/[^"]*)"', r.text)
    assert "/mnist" in links
    assert "/api/models" in links
    assert "Burn&#x27;s guide CNN" in r.text  # the registry's description, escaped
    for link in links:
        assert client.get(link).status_code == 200, link


def test_demo_page_is_its_index_html(client: TestClient, page_dir: Path) -> None:
    r = client.get("/mnist")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.text == (page_dir / "index.html").read_text()


def test_demo_page_files(client: TestClient, page_dir: Path) -> None:
    assert client.get("/demos/mnist/app.js").text == (page_dir / "app.js").read_text()
    assert client.get("/demos/mnist/").text == (page_dir / "index.html").read_text()
    r = client.get("/demos/nope/app.js")
    assert r.status_code == 404
    assert "no demo called 'nope'" in r.json()["error"]


def test_trailing_slash_redirects_to_the_page(client: TestClient) -> None:
    r = client.get("/mnist/", follow_redirects=False)
    assert r.status_code == 308
    assert r.headers["location"] == "/mnist"


def test_missing_demo_page_is_a_404_that_says_so(web_dir: Path, tmp_path: Path) -> None:
    app = create_app(web_dir, demo_pages={"mnist": tmp_path / "none"})
    with TestClient(app) as c:
        r = c.get("/mnist")
    assert r.status_code == 404
    assert "the mnist demo has no page" in r.json()["error"]
    assert "index.html is missing" in r.json()["error"]


def test_default_demo_pages_come_from_the_demo_packages() -> None:
    for name in registry.names():
        demo = registry.get(name)
        assert demo_page_dir(demo.package) == Path(
            str(files(f"pyrite.demos.{demo.package}"))) / "page"
    assert demo_pages(registry.names()) == {
        "mnist": demo_page_dir("mnist"), "classify": demo_page_dir("image_classification"),
        "charlm": demo_page_dir("charlm"),
        "train": demo_page_dir("train")}  # a page that is not a model's (registry.PAGES)
    assert demo_page_dir("no_such_demo") is None


def test_the_real_mnist_page(web_dir: Path) -> None:
    page = demo_page_dir("mnist")
    if page is None or not (page / "index.html").is_file():
        pytest.skip("demos/mnist/page/index.html not written yet")
    with TestClient(create_app(web_dir)) as c:
        r = c.get("/mnist")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert "<html" in r.text.lower()
