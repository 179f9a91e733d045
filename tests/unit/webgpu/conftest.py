"""Fixtures of the webgpu unit tests: one WebGpu backend per session (skipped without an
adapter unless PYRITE_REQUIRE names webgpu), the numpy backend as reference, and converters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pyrite import config
from pyrite.backend.numpy import NumpyBackend
from pyrite.data import TensorData
from pyrite.errors import BackendUnavailable
from pyrite.webgpu import WebGpu, conv_plan


@pytest.fixture(scope="session")
def gpu() -> WebGpu:
    """The raw backend (the "webgpu" device wraps it in Fusion: see the test_fusion*.py files)."""
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


@pytest.fixture
def fresh_conv_plans() -> Iterator[None]:
    """Launch plans (conv_plan.py) recorded under one test's forced rule stay out of the next:
    the conv test files use it for every test (`pytest.mark.usefixtures`)."""
    conv_plan.clear()
    yield
    conv_plan.clear()


# ---- fusion<webgpu> (the test_fusion*.py files) -------------------------------------------------
@pytest.fixture(scope="session")
def _fused() -> Any:
    import pyrite

    try:
        return pyrite.device("fusion<webgpu>")
    except BackendUnavailable as exc:
        if "webgpu" in config.required_backends():
            pytest.fail(f"webgpu is required (PYRITE_REQUIRE) but unavailable: {exc}")
        pytest.skip(f"fusion<webgpu> unavailable: {exc}")


@pytest.fixture
def fdev(_fused: Any) -> Any:
    """The shared fusion<webgpu> device, with nothing pending from an earlier test."""
    from pyrite.webgpu.fusion import Fusion

    assert isinstance(_fused, Fusion) and not isinstance(_fused.inner, Fusion)
    _fused.sync()
    return _fused


def _fusion_helpers() -> SimpleNamespace:
    import pyrite

    rng = np.random.default_rng(7)
    rtol, atol = 1e-5, 1e-6

    def f32(shape: tuple[int, ...], lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
        return rng.uniform(lo, hi, shape).astype(np.float32)

    def on(device: Any, *arrays: np.ndarray) -> list[Any]:
        return [pyrite.tensor(a, device=device) for a in arrays]

    def reference(fn: Callable[..., Any], *arrays: np.ndarray) -> Any:
        """fn on the numpy backend, as numpy arrays (a tuple for a tuple)."""
        out = fn(*on("numpy", *arrays))
        return tuple(t.numpy() for t in out) if isinstance(out, tuple) else out.numpy()

    def close(got: np.ndarray, want: np.ndarray, rtol: float = rtol, atol: float = atol) -> None:
        # same kind of values (the numpy backend's ints are i64, webgpu's i32)
        assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, (got.dtype,
                                                                               want.dtype)
        if got.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

    def stats(dev: Any) -> dict[str, int]:
        return dict(dev.stats.as_dict())

    def delta(dev: Any, before: dict[str, int]) -> dict[str, int]:
        now = dev.stats.as_dict()
        return {k: now[k] - before[k] for k in now}

    def kinds(seen: Any) -> list[str]:
        return [g["kind"] for g in seen.groups]

    return SimpleNamespace(rng=rng, f32=f32, on=on, reference=reference, close=close,
                           stats=stats, delta=delta, kinds=kinds)


@pytest.fixture(scope="session")
def fx() -> SimpleNamespace:
    """The fusion tests' helpers: seeded f32 arrays, tensors on a device, numpy-backend
    references, value checks (ints exactly), counter deltas and the kinds of inspected kernels."""
    return _fusion_helpers()
