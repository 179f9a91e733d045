"""Fixtures for the dataset tests: no network, a private data folder, the shared real data."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[3]


def _shared_data() -> Path | None:
    """The shared data folder (MNIST, photos): $PYRITE_TEST_DATA or a `shared/data` nearby."""
    candidates = [
        os.environ.get("PYRITE_TEST_DATA", ""),
        _REPO / "shared/data",
        _REPO.parent / "shared/data",
    ]
    for c in candidates:
        if c and (Path(c) / "mnist").is_dir():
            return Path(c)
    return None


SHARED = _shared_data()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never touch the network nor ~/.cache: urlopen fails, PYRITE_DATA is an empty folder."""

    def no_network(url: str, *args: object, **kwargs: object) -> None:
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    monkeypatch.setenv("PYRITE_DATA", str(tmp_path_factory.mktemp("pyrite_data")))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder holding `mnist/*.gz` and `samples/*.jpg`; tests skip when it is absent."""
    if SHARED is None:
        pytest.skip(
            "shared data folder not found; set PYRITE_TEST_DATA to the folder holding mnist/"
        )
    return SHARED


@pytest.fixture(scope="session")
def samples(shared_data: Path) -> Path:
    """The sample photos (cat.jpg, car.jpg, ...)."""
    return shared_data / "samples"
