"""Shared fixtures: `backend` runs a case on every available base backend, `ad_backend` on
Autodiff of each. A backend joins by registering itself (pyrite.register_backend or the
`pyrite.backends` entry point); missing ones are skipped with their reason, unless named in
PYRITE_REQUIRE, in which case they fail."""

from __future__ import annotations

import os
import tempfile

import pytest

import pyrite
from pyrite import config

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="pyrite-xdg-"))

_CACHE: dict[str, object] = {}


def _available(name: str) -> object:
    if name not in _CACHE:
        try:
            _CACHE[name] = pyrite.device(name)
        except Exception as exc:  # noqa: BLE001 - any failure means "not available here"
            _CACHE[name] = exc
    return _CACHE[name]


def _get(name: str) -> pyrite.Backend:
    found = _available(name)
    if isinstance(found, Exception):
        if name.split("<")[-1].rstrip(">") in config.required_backends():
            pytest.fail(f"{name} is required (PYRITE_REQUIRE) but unavailable: {found}")
        pytest.skip(f"{name} unavailable: {found}")
    return found  # type: ignore[return-value]


BASE = pyrite.backend_names()


@pytest.fixture(params=BASE)
def backend(request: pytest.FixtureRequest) -> pyrite.Backend:
    """Each available base backend (numpy, webgpu, ...)."""
    return _get(request.param)


@pytest.fixture(params=[f"autodiff<{b}>" for b in BASE])
def ad_backend(request: pytest.FixtureRequest) -> pyrite.Backend:
    """Autodiff over each available base backend."""
    return _get(request.param)


@pytest.fixture(autouse=True)
def _seeded() -> None:
    pyrite.seed(0, device="numpy")
