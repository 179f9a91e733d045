"""data_root and download_file: folder rule, checksums, mirrors, atomic writes (no network)."""

from __future__ import annotations

import hashlib
import io
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pyrite.dataset import DownloadError, data_root
from pyrite.dataset.download import download_file, sha256_file

PAYLOAD = b"pyrite test payload" * 1000
SHA = hashlib.sha256(PAYLOAD).hexdigest()


def serve(monkeypatch: pytest.MonkeyPatch, answers: dict[str, bytes | Exception]) -> list[str]:
    """Fake urlopen: each URL answers bytes or raises; returns the list of URLs asked."""
    asked: list[str] = []

    def urlopen(url: str, timeout: float | None = None) -> io.BytesIO:
        asked.append(url)
        assert timeout is not None and timeout > 0
        answer = answers[url]
        if isinstance(answer, Exception):
            raise answer
        return io.BytesIO(answer)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return asked


def test_data_root_rule(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYRITE_DATA", str(tmp_path / "env"))
    assert data_root() == tmp_path / "env"
    assert data_root(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("PYRITE_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_root() == tmp_path / "home/.cache/pyrite"


def test_download_writes_the_verified_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked = serve(monkeypatch, {"https://a/f": PAYLOAD})
    dest = tmp_path / "sub" / "f.bin"
    assert download_file(["https://a/f"], dest, SHA) == "https://a/f"
    assert dest.read_bytes() == PAYLOAD
    assert sha256_file(dest) == SHA
    assert asked == ["https://a/f"]
    assert [p.name for p in dest.parent.iterdir()] == ["f.bin"]


def test_download_falls_back_to_the_next_mirror(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked = serve(
        monkeypatch,
        {
            "https://a/f": urllib.error.URLError("connection refused"),
            "https://b/f": b"wrong content",
            "https://c/f": PAYLOAD,
        },
    )
    dest = tmp_path / "f.bin"
    assert download_file(["https://a/f", "https://b/f", "https://c/f"], dest, SHA) == "https://c/f"
    assert asked == ["https://a/f", "https://b/f", "https://c/f"]
    assert dest.read_bytes() == PAYLOAD


def test_all_mirrors_failing_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    serve(monkeypatch, {"https://a/f": TimeoutError("timed out"), "https://b/f": b"bad"})
    dest = tmp_path / "f.bin"
    with pytest.raises(DownloadError) as info:
        download_file(["https://a/f", "https://b/f"], dest, SHA)
    message = str(info.value)
    assert "https://a/f (TimeoutError: timed out)" in message
    assert f"https://b/f (sha256 {hashlib.sha256(b'bad').hexdigest()}, expected {SHA})" in message
    assert list(tmp_path.iterdir()) == []
