"""Two servers on one web bundle folder: while one rebuilds it (pyrite.wasm.live_bundle), the
other keeps answering every request with one whole version of the bundle.

The builder's last step is what the serving process can see, so it is checked at every
file-system step it takes, and end to end: a serving app answers a stream of requests while
the folder is republished again and again."""

from __future__ import annotations

import gzip
import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from pyrite.server import bundle, create_app
from pyrite.server.folders import default_pyodide_dir
from pyrite.wasm import live_bundle

from .conftest import TestClient, _pyodide, _write


def _stage(parent: Path, version: int) -> Path:
    """A finished bundle (as the builder leaves it before publishing) whose files say `version`
    and change size with it, so a response mixing two versions shows."""
    stage = parent / f".web-stage-{version}"
    js = _js(version)
    _write(stage / "pyrite.js", js)
    _write(stage / "pyrite.js.gz", gzip.compress(js.encode(), mtime=0))
    _write(stage / "manifest.json", f'{{"version": {version}}}\n')
    _write(stage / "models" / "big.bin", bytes([version % 256]) * (300_000 + version))
    _pyodide(stage / "pyodide")
    return stage


def _js(version: int) -> str:
    return f"// bundle {version}\n" + "export const v = 1;\n" * (10 + version)


def _read_version(web: Path) -> int:
    text = (web / "pyrite.js").read_text()
    return int(text.split()[2])


def test_every_step_of_a_publish_leaves_a_whole_bundle(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    web = tmp_path / "web"
    live_bundle.publish(_stage(tmp_path, 1), web)
    assert web.is_symlink() and _read_version(web) == 1
    first = (web / "models" / "big.bin").resolve()  # a request reading version 1's file
    steps: list[int] = []

    def checked(real):  # type: ignore[no-untyped-def]
        def step(*args: object) -> None:
            real(*args)
            steps.append(_read_version(web))  # the folder is there, whole, after each step
            assert bundle.check(web) == web
            assert first.read_bytes() == bytes([1]) * 300_001  # and the old version too
        return step

    monkeypatch.setattr(live_bundle.os, "replace", checked(os.replace))
    monkeypatch.setattr(live_bundle.os, "symlink", checked(os.symlink))
    live_bundle.publish(_stage(tmp_path, 2), web)
    assert steps and set(steps) <= {1, 2} and steps[-1] == 2
    assert _read_version(web) == 2 and first.is_file()  # the previous version stays


def test_old_versions_go_after_the_grace_period(tmp_path: Path) -> None:
    web = tmp_path / "web"
    v1 = live_bundle.publish(_stage(tmp_path, 1), web)
    v2 = live_bundle.publish(_stage(tmp_path, 2), web)
    old = time.time() - live_bundle.GRACE_S - 5
    os.utime(v1, (old, old))
    os.utime(v2, (old, old))
    v3 = live_bundle.publish(_stage(tmp_path, 3), web)
    assert not v1.exists()  # neither linked nor the previous one, and old
    assert v2.is_dir() and v3.is_dir() and live_bundle.current(web) == v3
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".web.")) == \
        sorted([v2.name, v3.name])  # no stray links or stages


def test_a_real_folder_from_an_older_pyrite_becomes_a_link(tmp_path: Path) -> None:
    web = _stage(tmp_path, 0).rename(tmp_path / "web")
    (web / "notes-from-old-build.txt").write_text("x")
    live_bundle.publish(_stage(tmp_path, 1), web)
    assert web.is_symlink() and _read_version(web) == 1
    moved = [p for p in tmp_path.iterdir() if p.name.startswith(".web.v-")]
    assert any((p / "notes-from-old-build.txt").is_file() for p in moved)  # kept, as previous


def test_a_server_keeps_answering_while_another_rebuilds(tmp_path: Path) -> None:
    web = tmp_path / "web"
    live_bundle.publish(_stage(tmp_path, 1), web)
    app = create_app(web)  # server A, serving the shared folder
    failures: list[str] = []
    answered = 0
    done = threading.Event()

    def serve() -> None:
        nonlocal answered
        with TestClient(app) as client:
            while not done.is_set():
                for path, headers in (("/pyrite.js", {"accept-encoding": "gzip"}),
                                      ("/pyrite.js", {}), ("/models/big.bin", {}),
                                      ("/manifest.json", {}), ("/web/pyodide/pyodide.mjs", {})):
                    r = client.get(path, headers=headers)
                    answered += 1
                    if r.status_code != 200:
                        failures.append(f"{path}: {r.status_code}")
                    elif path == "/models/big.bin" and \
                            r.content != r.content[:1] * (300_000 + r.content[0]):
                        failures.append(f"{path}: mixed versions")
                    elif path == "/pyrite.js" and r.text != _js(int(r.text.split()[2])):
                        failures.append(f"{path}: mixed versions")

    reader = threading.Thread(target=serve)
    reader.start()
    try:
        for version in range(2, 40):  # server B rebuilds, over and over
            live_bundle.publish(_stage(tmp_path, version), web)
    finally:
        time.sleep(0.2)
        done.set()
        reader.join(60)
    assert answered > 0 and failures == []
    assert _read_version(web) == 39


class _Serve:
    """`pyrite serve --port 0` in a subprocess, building its bundle in `web` (PYRITE_WEB_DIR)."""

    def __init__(self, web: Path) -> None:
        env = {**os.environ, "PYRITE_WEB_DIR": str(web), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pyrite.server", "--host", "127.0.0.1", "--port", "0",
             "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env=env)
        self.log: list[str] = []
        urls: queue.Queue[str] = queue.Queue()

        def read() -> None:
            assert self.process.stdout is not None
            for line in iter(self.process.stdout.readline, ""):
                self.log.append(line)
                if line.startswith("pyrite serve: http://"):
                    urls.put(line.split("pyrite serve: ", 1)[1].split()[0].rstrip("/"))

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        try:
            self.url = urls.get(timeout=600)
        except queue.Empty:
            self.stop()
            raise AssertionError("pyrite serve did not start:\n"
                                 + "".join(self.log[-20:])) from None

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.mark.slow
def test_two_real_servers_on_one_folder(tmp_path: Path) -> None:
    """Server A serves the folder it built while server B starts on the same folder and
    rebuilds it (about a minute on two cores: two real builds)."""
    if not (default_pyodide_dir() / "pyodide-lock.json").is_file():
        pytest.skip("wasm/node_modules/pyodide missing (make setup installs it)")
    if not any(bundle.wasm_build.default_cache().glob("micropip-*.whl")):
        pytest.skip("micropip's wheel is not cached (the builder fetches it once, online)")
    web = tmp_path / "web"
    a = _Serve(web)
    failures: list[str] = []
    answered = 0
    done = threading.Event()

    def get(path: str) -> bytes:
        with urllib.request.urlopen(a.url + path, timeout=30) as r:
            body: bytes = r.read()
            if r.status != 200:
                raise OSError(f"{r.status}")
            return body

    def poll() -> None:
        nonlocal answered
        while not done.is_set():
            try:
                manifest = json.loads(get("/manifest.json"))
                for path in ("/pyrite.js", "/web/", "/pyodide/pyodide.mjs",
                             "/" + manifest["wheels"][-1]["path"]):
                    get(path)
                    answered += 1
            except (OSError, ValueError, KeyError) as err:
                failures.append(f"{type(err).__name__}: {err}")

    poller = threading.Thread(target=poll)
    try:
        poller.start()
        b = _Serve(web)  # rebuilds the folder A is serving, and publishes it
        b.stop()
        time.sleep(0.5)
    finally:
        done.set()
        poller.join(60)
        a.stop()
    assert failures == [] and answered > 0, (failures[:5], answered)
    assert web.is_symlink() and bundle.check(web) == web
    # B published its own version while A served: A's and B's are both there
    assert len([p for p in tmp_path.iterdir() if p.name.startswith(".web.v-")]) == 2
    print(f"server A answered {answered} requests while server B rebuilt the folder")
