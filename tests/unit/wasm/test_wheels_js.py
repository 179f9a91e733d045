"""wasm/wheels.js, the worker's wheel installer, under Node: it writes a wheel's files as
zipfile reads them (stored and deflated members, nested folders), and refuses a member that
would leave site-packages and an archive that is not one, with one message naming the wheel."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "wasm" / "wheels.js"
RUNNER = Path(__file__).with_name("wheels_run.mjs")

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")


def _install(zip_path: Path) -> dict[str, Any]:
    done = subprocess.run(["node", str(RUNNER), str(SCRIPT), str(zip_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _zip(path: Path, members: dict[str, tuple[str, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, (text, method) in members.items():
            z.writestr(zipfile.ZipInfo(name), text) if method < 0 else \
                z.writestr(name, text, compress_type=method)
    return path


def test_members_are_written_as_zipfile_reads_them(tmp_path: Path) -> None:
    long = "def f():\n    return 1\n" * 500  # deflates to far less than it is
    members = {"pkg/__init__.py": ("", zipfile.ZIP_STORED),
               "pkg/sub/": ("", -1),  # a folder entry: nothing to write
               "pkg/sub/mod.py": (long, zipfile.ZIP_DEFLATED),
               "pkg/sub/data.json": ('{"a": [1, 2]}', zipfile.ZIP_STORED),
               "pkg-1.0.dist-info/METADATA": ("Name: pkg\n", zipfile.ZIP_DEFLATED)}
    got = _install(_zip(tmp_path / "w.whl", members))
    with zipfile.ZipFile(tmp_path / "w.whl") as z:
        expected = {f"/site/{i.filename}": z.read(i).decode() for i in z.infolist()
                    if not i.is_dir()}
    assert got["files"] == expected and got["count"] == 4
    assert sorted(set(got["dirs"])) == ["/site/pkg", "/site/pkg-1.0.dist-info",
                                        "/site/pkg/sub"]


def test_the_page_wheel_installs_whole(tmp_path: Path) -> None:
    from pyrite.wasm import build

    wheel = build.build_wheel(tmp_path)
    got = _install(wheel)
    with zipfile.ZipFile(wheel) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
        assert got["count"] == len(z.infolist())
        assert got["files"]["/site/pyrite/__init__.py"] == z.read("pyrite/__init__.py").decode()


@pytest.mark.parametrize(("name", "why"), [("../evil.py", "outside site-packages"),
                                           ("/abs.py", "outside site-packages")])
def test_a_member_outside_site_packages_is_refused(tmp_path: Path, name: str, why: str) -> None:
    got = _install(_zip(tmp_path / "w.whl", {name: ("x = 1\n", zipfile.ZIP_STORED)}))
    assert why in got["error"] and got["error"].startswith("wheel w: ")
    assert "export the bundle again" in got["error"]


def test_not_a_zip_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "w.whl"
    bad.write_bytes(b"this is no zip archive, only text" * 4)
    assert _install(bad) == {"error": "wheel w: not a zip archive; export the bundle again"}
