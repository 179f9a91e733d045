"""The bundle's routes (server/web.py): `/web/` and the root, precompressed copies chosen by
Accept-Encoding, and CORS for the allowed origins only (server/cors.py)."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from pyrite.server import create_app
from pyrite.server.cors import normalise_origin

from .conftest import KERNELS, PYRITE_JS, RECORD, WHEEL

ALLOWED = "http://127.0.0.1:8123"
OTHER = "http://127.0.0.1:9999"
BUNDLE_FILES = ["/pyrite.js", "/worker.js", "/manifest.json", "/pyodide/pyodide.asm.wasm",
                f"/{WHEEL}", f"/{RECORD}", f"/{KERNELS}"]


@pytest.fixture
def cors_client(web_dir: Path, page_dir: Path) -> Iterator[TestClient]:
    """A TestClient on an app that lets ALLOWED load the bundle."""
    app: Starlette = create_app(web_dir, demo_pages={"mnist": page_dir},
                                allow_origins=[ALLOWED + "/"])
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize("url", BUNDLE_FILES)
def test_the_bundle_is_served_at_web_and_at_the_root(client: TestClient, web_dir: Path,
                                                     url: str) -> None:
    at_root, at_web = client.get(url), client.get("/web" + url)
    assert at_root.status_code == at_web.status_code == 200
    assert at_root.content == at_web.content == (web_dir / url[1:]).read_bytes()
    assert at_root.headers["cache-control"] == at_web.headers["cache-control"]
    assert at_root.headers["content-type"] == at_web.headers["content-type"]


def test_web_shows_the_example_page(client: TestClient, web_dir: Path) -> None:
    r = client.get("/web", follow_redirects=False)
    assert r.status_code == 308 and r.headers["location"] == "/web/"
    page = client.get("/web/")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.content == (web_dir / "index.html").read_bytes()
    assert client.get("/").text != page.text  # the root stays the demos' home page


def test_web_refuses_what_the_root_refuses(client: TestClient) -> None:
    assert client.get("/web/nope.js").status_code == 404
    assert client.get("/web/..%2fsecret.txt").status_code == 404
    assert client.post("/web/pyrite.js").status_code == 405
    assert client.get("/web/api/config").status_code == 404  # no API under /web/


@pytest.mark.parametrize("prefix", ["", "/web"])
def test_gzip_is_sent_to_clients_that_accept_it(client: TestClient, web_dir: Path,
                                                prefix: str) -> None:
    plain = client.get(prefix + "/pyrite.js", headers={"Accept-Encoding": "identity"})
    packed = client.get(prefix + "/pyrite.js", headers={"Accept-Encoding": "gzip, deflate"})
    assert "content-encoding" not in plain.headers
    assert plain.content == PYRITE_JS.encode()
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.content == PYRITE_JS.encode()  # decoded by the client
    assert packed.headers["content-length"] == str((web_dir / "pyrite.js.gz").stat().st_size)
    for r in (plain, packed):
        assert r.headers["content-type"] == "text/javascript; charset=utf-8"
        assert r.headers["vary"] == "Accept-Encoding"
    assert plain.headers["etag"] != packed.headers["etag"]
    again = client.get(prefix + "/pyrite.js", headers={
        "Accept-Encoding": "gzip", "If-None-Match": packed.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["content-encoding"] == "gzip"


@pytest.mark.parametrize(("accept", "encoding"), [
    ("", None), ("gzip;q=0", None), ("br", "br"), ("gzip, br", "br"), ("br;q=0, gzip", "gzip"),
    ("*", "br"), ("identity", None), ("GZIP", "gzip"),
])
def test_the_accepted_encoding_is_chosen(client: TestClient, web_dir: Path, accept: str,
                                         encoding: str | None) -> None:
    (web_dir / "worker.js.br").write_bytes(b"fake brotli bytes")
    (web_dir / "worker.js.gz").write_bytes(gzip.compress((web_dir / "worker.js").read_bytes()))
    with client.stream("GET", "/worker.js", headers={"Accept-Encoding": accept}) as r:
        raw = b"".join(r.iter_raw())
        assert r.headers.get("content-encoding") == encoding
    suffix = {"br": ".br", "gzip": ".gz", None: ""}[encoding]
    assert raw == (web_dir / f"worker.js{suffix}").read_bytes()


def test_a_range_gets_the_file_as_it_is(client: TestClient) -> None:
    r = client.get("/pyrite.js", headers={"Accept-Encoding": "gzip", "Range": "bytes=0-5"})
    assert r.status_code == 206
    assert "content-encoding" not in r.headers
    assert r.content == PYRITE_JS.encode()[:6]


def test_a_gz_file_asked_for_by_name_is_just_a_file(client: TestClient, web_dir: Path) -> None:
    with client.stream("GET", "/pyrite.js.gz", headers={"Accept-Encoding": "gzip"}) as r:
        raw = b"".join(r.iter_raw())
        assert "content-encoding" not in r.headers
        assert r.headers["content-type"] == "application/gzip"
    assert raw == (web_dir / "pyrite.js.gz").read_bytes()


def test_files_without_copies_do_not_vary(client: TestClient) -> None:
    assert "vary" not in client.get(f"/{WHEEL}").headers


@pytest.mark.parametrize("url", BUNDLE_FILES + ["/web/", "/web/pyrite.js"])
def test_an_allowed_origin_gets_cors_headers(cors_client: TestClient, url: str) -> None:
    r = cors_client.get(url, headers={"Origin": ALLOWED})
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == ALLOWED
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"
    assert "Origin" in r.headers["vary"]


@pytest.mark.parametrize("origin", [OTHER, "null", None])
def test_other_origins_get_no_cors_headers(cors_client: TestClient, origin: str | None) -> None:
    r = cors_client.get("/pyrite.js", headers={"Origin": origin} if origin else {})
    assert r.status_code == 200
    assert "access-control-allow-origin" not in r.headers
    assert "cross-origin-resource-policy" not in r.headers
    assert r.headers["vary"] == "Accept-Encoding, Origin"  # caches must not mix them up


def test_no_cors_by_default(client: TestClient) -> None:
    r = client.get("/pyrite.js", headers={"Origin": ALLOWED})
    assert "access-control-allow-origin" not in r.headers
    assert "Origin" not in r.headers["vary"]
    assert client.options("/pyrite.js", headers={
        "Origin": ALLOWED, "Access-Control-Request-Method": "GET"}).status_code == 405


@pytest.mark.parametrize("url", ["/pyrite.js", "/web/pyodide/pyodide.asm.wasm"])
def test_a_preflight_from_an_allowed_origin_is_answered(cors_client: TestClient,
                                                        url: str) -> None:
    r = cors_client.options(url, headers={
        "Origin": ALLOWED, "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "range"})
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == ALLOWED
    assert r.headers["access-control-allow-methods"] == "GET, HEAD"
    assert "Range" in r.headers["access-control-allow-headers"]
    assert r.content == b""


@pytest.mark.parametrize(("origin", "method"), [(OTHER, "GET"), (ALLOWED, "POST")])
def test_other_preflights_are_refused(cors_client: TestClient, origin: str,
                                      method: str) -> None:
    r = cors_client.options("/pyrite.js", headers={
        "Origin": origin, "Access-Control-Request-Method": method})
    assert r.status_code == 405
    assert "access-control-allow-origin" not in r.headers


@pytest.mark.parametrize(("method", "url"), [
    ("GET", "/api/config"), ("GET", "/api/models"), ("GET", "/healthz"), ("GET", "/"),
    ("GET", "/mnist"), ("GET", "/demos/mnist/app.js"), ("GET", "/api/nope"),
    ("OPTIONS", "/api/predict/mnist"), ("OPTIONS", "/api/config"),
])
def test_the_api_and_pages_never_get_cors_headers(cors_client: TestClient, method: str,
                                                  url: str) -> None:
    r = cors_client.request(method, url, headers={"Origin": ALLOWED,
                                                  "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in r.headers
    assert "cross-origin-resource-policy" not in r.headers
    if method == "OPTIONS":
        assert r.status_code == 405


def test_any_origin(web_dir: Path) -> None:
    with TestClient(create_app(web_dir, allow_origins=["*"])) as c:
        r = c.get("/web/pyrite.js", headers={"Origin": OTHER})
        assert r.headers["access-control-allow-origin"] == "*"
        assert "Origin" not in r.headers["vary"]  # the same answer for everyone
        assert "access-control-allow-origin" not in c.get("/api/config").headers


@pytest.mark.parametrize(("given", "origin"), [
    ("http://127.0.0.1:8123/", "http://127.0.0.1:8123"),
    ("HTTPS://Example.ORG:443", "https://example.org"),
    ("http://[::1]:8000", "http://[::1]:8000"), ("*", "*"),
])
def test_origins_are_normalised(given: str, origin: str) -> None:
    assert normalise_origin(given) == origin
