"""Static files (server/static.py): media types, caching, and never a file outside its folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pyrite.server.static import StaticFolder, media_type, safe_file

SECRET = "the secret outside every served folder"  # conftest's `secret` file


@pytest.mark.parametrize(("url", "expected"), [
    ("/pyodide/pyodide.asm.wasm", "application/wasm"),
    ("/pyodide/pyodide.mjs", "text/javascript; charset=utf-8"),
    ("/pyodide/pyodide-lock.json", "application/json"),
    ("/pyodide/python_stdlib.zip", "application/zip"),
    ("/pyrite.js", "text/javascript; charset=utf-8"),
    ("/manifest.json", "application/json"),
    ("/wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl", "application/zip"),
    ("/models/mnist.0123456789abcdef.bin", "application/octet-stream"),
    ("/mnist", "text/html; charset=utf-8"),
    ("/demos/mnist/style.css", "text/css; charset=utf-8"),
])
def test_media_types(client: TestClient, url: str, expected: str) -> None:
    r = client.get(url)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == expected
    assert r.headers["x-content-type-options"] == "nosniff"


def test_media_type_table_ignores_case_and_defaults_to_octet_stream() -> None:
    assert media_type("A.WASM") == "application/wasm"
    assert media_type("x.svg") == "image/svg+xml"
    assert media_type("x.png") == "image/png"
    assert media_type("no-suffix") == "application/octet-stream"


@pytest.mark.parametrize("url", ["/wheels/0123456789abcdef/pyrite-0.1.0-py3-none-any.whl",
                                 "/models/mnist.0123456789abcdef.bin"])
def test_content_hashed_files_are_immutable(client: TestClient, url: str) -> None:
    r = client.get(url)
    assert r.headers["cache-control"] == "public, max-age=31536000, immutable"


@pytest.mark.parametrize("url", ["/pyrite.js", "/worker.js", "/manifest.json", "/mnist",
                                 "/demos/mnist/app.js"])
def test_other_files_revalidate_with_etag_and_304(client: TestClient, url: str) -> None:
    first = client.get(url)
    assert first.headers["cache-control"] == "no-cache"
    etag = first.headers["etag"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    other = client.get(url, headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200
    assert other.content == first.content


def test_etag_changes_with_the_file(client: TestClient, web_dir: Path) -> None:
    before = client.get("/worker.js").headers["etag"]
    (web_dir / "worker.js").write_text("export const changed = true;\n")
    r = client.get("/worker.js", headers={"If-None-Match": before})
    assert r.status_code == 200
    assert r.headers["etag"] != before
    assert "changed" in r.text


def test_pyodide_files_are_cached_a_day(client: TestClient) -> None:
    r = client.get("/pyodide/pyodide.mjs")
    assert r.headers["cache-control"] == "public, max-age=86400"
    assert "etag" in r.headers


def test_head_and_ranges(client: TestClient, pyodide_dir: Path) -> None:
    head = client.head("/pyodide/pyodide.asm.wasm")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == "8"
    part = client.get("/pyodide/pyodide.asm.wasm", headers={"Range": "bytes=0-3"})
    assert part.status_code == 206
    assert part.content == b"\x00asm"


TRAVERSALS = [
    "/pyodide/..%2fsecret.txt",
    "/pyodide/%2e%2e/secret.txt",
    "/pyodide/%2e%2e%2fsecret.txt",
    "/pyodide/%252e%252e/secret.txt",  # double-encoded
    "/pyodide/%252e%252e%252fsecret.txt",
    "/pyodide/..%5csecret.txt",  # backslash
    "/pyodide/%5c..%5csecret.txt",
    "/pyodide/%2f%2e%2e%2fsecret.txt",
    "/pyodide/%00../secret.txt",
    "/demos/mnist/..%2fsecret.txt",
    "/demos/mnist/%2e%2e/secret.txt",
    "/..%2fsecret.txt",
    "/%2e%2e/secret.txt",
    "/wheels/..%2f..%2fsecret.txt",
]


@pytest.mark.parametrize("url", TRAVERSALS)
def test_traversal_is_refused(client: TestClient, url: str) -> None:
    r = client.get(url)
    assert r.status_code == 404
    assert SECRET not in r.text
    assert "error" in r.json()


@pytest.mark.parametrize("relative", [
    "../secret.txt", "..", ".", "./pyodide.mjs", "a/../../secret.txt", "/etc/passwd",
    "//etc/passwd", "..\\secret.txt", "pyodide.mjs\0", "", ".hidden", "sub/", "sub//x",
])
def test_safe_file_refuses(pyodide_dir: Path, secret: Path, relative: str) -> None:
    (pyodide_dir / ".hidden").write_text("hidden")
    (pyodide_dir / "sub").mkdir()
    assert safe_file(pyodide_dir, relative) is None


def test_absolute_path_is_refused(client: TestClient, secret: Path) -> None:
    r = client.get("/pyodide/" + str(secret).replace("/", "%2f"))
    assert r.status_code == 404
    assert SECRET not in r.text


def test_symlink_out_of_the_folder_is_refused(client: TestClient, pyodide_dir: Path,
                                              secret: Path) -> None:
    (pyodide_dir / "leak.js").symlink_to(secret)
    (pyodide_dir / "leakdir").symlink_to(secret.parent)
    for url in ["/pyodide/leak.js", "/pyodide/leakdir/secret.txt"]:
        r = client.get(url)
        assert r.status_code == 404, url
        assert SECRET not in r.text


def test_symlink_in_the_bundle_to_outside_is_refused(client: TestClient, web_dir: Path,
                                                     secret: Path) -> None:
    (web_dir / "models" / "evil.0123456789abcdef.bin").symlink_to(secret)
    r = client.get("/models/evil.0123456789abcdef.bin")
    assert r.status_code == 404
    assert SECRET not in r.text


def test_symlink_inside_the_folder_is_served(client: TestClient, pyodide_dir: Path) -> None:
    (pyodide_dir / "alias.mjs").symlink_to(pyodide_dir / "pyodide.mjs")
    r = client.get("/pyodide/alias.mjs")
    assert r.status_code == 200
    assert "loadPyodide" in r.text


def test_folder_itself_may_be_a_symlink(tmp_path: Path, pyodide_dir: Path) -> None:
    link = tmp_path / "pyodide-link"
    link.symlink_to(pyodide_dir)
    assert safe_file(link, "pyodide.mjs") == (pyodide_dir / "pyodide.mjs").resolve()


def test_directories_and_missing_files_are_404(client: TestClient) -> None:
    for url in ["/pyodide/", "/wheels/0123456789abcdef", "/pyodide/nope.js"]:
        r = client.get(url)
        assert r.status_code == 404, url
        assert r.json()["error"].startswith("nothing at ")


def test_folder_index(page_dir: Path) -> None:
    folder = StaticFolder(page_dir, index="index.html")
    assert folder.find("") == (page_dir / "index.html").resolve()
    assert StaticFolder(page_dir).find("") is None
