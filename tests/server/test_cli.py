"""`pyrite serve` as a real process on 127.0.0.1 (server/cli.py, run.py), and its options."""

from __future__ import annotations

import gzip
import json
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyrite import cli
from pyrite.demos import registry
from pyrite.server import run
from pyrite.server.cli import main
from pyrite.server.folders import demo_pages

STARTUP_S = 60.0
URL_LINE = re.compile(r"^pyrite serve: (http://127\.0\.0\.1:(\d+)/)$")


def _command() -> list[str]:
    script = Path(sys.executable).with_name("pyrite")
    if script.exists() or shutil.which("pyrite"):
        return [str(script) if script.exists() else "pyrite", "serve"]
    return [sys.executable, "-m", "pyrite.server"]  # no console script: the same options


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    port: int
    stdout: list[str]


def _wait_for_url(process: subprocess.Popen[str]) -> tuple[str, int, list[str]]:
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], deadline - time.monotonic())
        line = process.stdout.readline() if ready else ""
        if not line:
            break
        lines.append(line.rstrip("\n"))
        found = URL_LINE.match(lines[-1])
        if found:
            return found.group(1), int(found.group(2)), lines
    process.kill()
    _, err = process.communicate()
    raise AssertionError(f"no URL line from pyrite serve: stdout {lines}, stderr {err}")


@pytest.fixture
def server(web_dir: Path) -> Iterator[Server]:
    """`pyrite serve --port 0` over the fake folders, stopped with SIGTERM afterwards."""
    process = subprocess.Popen(
        [*_command(), "--port", "0", "--web", str(web_dir), "--log-level", "warning",
         "--allow-origin", "http://127.0.0.1:8123"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url, port, lines = _wait_for_url(process)
        yield Server(process, url, port, lines)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                    timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, dict(e.headers), e.read()


def _raw(port: int, target: str) -> str:
    """The response to a GET of `target` sent byte for byte (no client normalises it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("latin-1")


def test_serve_runs_answers_and_stops_on_sigterm(server: Server, web_dir: Path) -> None:
    assert server.port > 0
    assert server.process.stdout is not None
    # each demo page's URL, by name (the models' pages and /train)
    for name in sorted(demo_pages(registry.names())):
        assert server.process.stdout.readline() == f"  {name}: {server.url}{name}\n"
    status, _, body = _get(server.url + "healthz")
    assert status == 200
    assert json.loads(body)["status"] == "ok"
    status, headers, body = _get(server.url + "pyrite.js")
    assert status == 200
    assert headers["content-type"] == "text/javascript; charset=utf-8"
    assert body == (web_dir / "pyrite.js").read_bytes()  # urllib asks for no encoding
    status, headers, body = _get(server.url + "web/pyrite.js", {
        "Accept-Encoding": "gzip", "Origin": "http://127.0.0.1:8123"})
    assert headers["content-encoding"] == "gzip"
    assert gzip.decompress(body) == (web_dir / "pyrite.js").read_bytes()
    assert headers["access-control-allow-origin"] == "http://127.0.0.1:8123"
    request = urllib.request.Request(server.url + "api/predict/mnist", method="POST",
                                     data=json.dumps({"pixels": [0] * 784}).encode())
    with urllib.request.urlopen(request, timeout=30) as r:
        assert json.loads(r.read())["backend"] == "numpy (server)"

    server.process.send_signal(signal.SIGTERM)
    _, err = server.process.communicate(timeout=30)
    assert server.process.returncode == 0, err
    assert "pyrite serve: stopped" in err


def test_serve_stops_on_ctrl_c(server: Server) -> None:
    server.process.send_signal(signal.SIGINT)
    _, err = server.process.communicate(timeout=30)
    assert server.process.returncode == 0, err
    assert "Traceback" not in err


TRAVERSALS = [
    "/pyodide/../../secret.txt",
    "/pyodide/..%2f..%2fsecret.txt",
    "/pyodide/%2e%2e/%2e%2e/secret.txt",
    "/pyodide/%252e%252e/secret.txt",
    "/pyodide/..\\secret.txt",
    "/pyodide/..%5csecret.txt",
    "/pyodide/%2f..%2fsecret.txt",
    "/../secret.txt",
    "/demos/mnist/../../secret.txt",
    "/wheels/../../secret.txt",
]


def test_real_server_refuses_traversal(server: Server, secret: Path) -> None:
    for target in TRAVERSALS:
        response = _raw(server.port, target)
        head, _, body = response.partition("\r\n\r\n")
        assert head.split(" ", 2)[1] in ("400", "404"), (target, response)
        assert secret.read_text() not in body, target


@pytest.mark.parametrize(("argv", "message"), [
    (["--pyodide", "{tmp}/missing"], "python -m pyrite.server: error: no Pyodide runtime at"),
    (["--web", "{web}", "--pyodide", "{tmp}/missing"], "carries its own pyodide/"),
    (["--web", "{web}", "--allow-origin", "ftp://x"], "--allow-origin 'ftp://x': give an"),
    (["--allow-origin", "http://x/path"], "--allow-origin 'http://x/path': give an"),
])
def test_setup_error_exits_2_with_the_fix(web_dir: Path, tmp_path: Path, argv: list[str],
                                          message: str, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYRITE_WEB_DIR", str(tmp_path / "never-built"))
    status = main([a.format(tmp=tmp_path, web=web_dir) for a in argv])
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "never-built").exists()  # found before building anything


def test_port_in_use_is_a_setup_error(web_dir: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    with run.bind("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        status = main(["--web", str(web_dir), "--port", str(port)])
    assert status == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_serve_joins_the_pyrite_command() -> None:
    args = cli.build_parser().parse_args(["serve", "--port", "0", "--pyodide-packages",
                                          "https://cdn.example/full/"])
    assert args.port == 0
    assert args.pyodide_packages == "https://cdn.example/full/"
    assert args.host == "127.0.0.1"
    assert args.max_body == 10_000_000
    assert args.api_device == "numpy"


def test_python_m_pyrite_server_takes_the_same_options() -> None:
    out = subprocess.run([sys.executable, "-m", "pyrite.server", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--pyodide-packages DIR_OR_URL" in out.stdout
