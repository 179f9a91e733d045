"""pyrite's own backends are found without installed metadata: a source tree on PYTHONPATH
(and the Ray workers of such a run) declares no entry points, yet `webgpu` must resolve."""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

import pytest

device_module = importlib.import_module("pyrite.device")


@pytest.fixture
def no_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """No installed package declares any entry point, and nothing is registered yet."""
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    monkeypatch.setattr(device_module, "_FACTORIES", {
        k: v for k, v in device_module._FACTORIES.items() if k != "webgpu"})


def test_webgpu_is_a_backend_without_metadata(no_metadata: None) -> None:
    assert "webgpu" in device_module.backend_names()
    (ep,) = device_module.backend_entry_points("webgpu")
    assert ep.value == "pyrite.webgpu:create"
    factory: Any = ep.load()
    assert callable(factory)


def test_a_declared_backend_is_not_listed_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    declared = importlib.metadata.EntryPoint("webgpu", "pyrite.webgpu:create", "pyrite.backends")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [declared])
    assert [ep.name for ep in device_module.backend_entry_points()] == ["webgpu"]
