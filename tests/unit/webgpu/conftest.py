"""Fixtures of the webgpu unit tests: one WebGpu backend per session (skipped without an
adapter unless PYRITE_REQUIRE names webgpu), the numpy backend as reference, and converters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pyrite import config
from pyrite.backend.numpy import NumpyBackend
from pyrite.data import TensorData
from pyrite.errors import BackendUnavailable
from pyrite.webgpu import WebGpu


@pytest.fixture(scope="session")
def gpu() -> WebGpu:
    """The raw backend (the "webgpu" device wraps it in Fusion; test_fusion.py covers that)."""
    try:
        backend = WebGpu()
        backend.kernels  # noqa: B018 - request the adapter now
    except BackendUnavailable as exc:
        if "webgpu" in config.required_backends():
            pytest.fail(f"webgpu is required (PYRITE_REQUIRE) but unavailable: {exc}")
        pytest.skip(f"webgpu unavailable: {exc}")
    assert isinstance(backend, WebGpu)
    return backend


@pytest.fixture(scope="session")
def ref() -> NumpyBackend:
    return NumpyBackend()


@pytest.fixture(scope="session")
def up(gpu: WebGpu) -> Callable[[Any], Any]:
    """A numpy array (or nested list) as a webgpu tensor."""
    return lambda a: gpu.from_data(TensorData(np.asarray(a)))


@pytest.fixture(scope="session")
def down(gpu: WebGpu) -> Callable[[Any], np.ndarray]:
    """A webgpu tensor as a numpy array."""
    return lambda x: gpu.to_data(x).to_numpy()
