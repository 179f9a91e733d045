"""The software adapter's kernel for products of few rows (`pyrite.webgpu.gemv`), run natively
(lavapipe) by making the adapter count as a page's software adapter: every layout, ragged
sizes, batches, offsets and the fusion epilogue, against numpy. The page runs the same kernel
through the in-page conformance suite (its SwiftShader is a software adapter)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.dtype import DType
from pyrite.errors import BackendUnavailable
from pyrite.webgpu import gemv, linalg, software
from pyrite.webgpu.fusion import Fusion, inspect

RNG = np.random.default_rng(11)


@pytest.fixture
def soft(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every adapter counts as a page's software adapter for the test."""
    monkeypatch.setattr(software, "software", lambda adapter: True)
    yield


def _gemv_launches(gpu: Any, run: Any) -> tuple[Any, int]:
    """`run()`'s result and how many GEMV dispatches it made."""
    made = []
    launch = gpu.kernels.launch

    def counted(pipeline: Any, bindings: Any, groups: Any) -> Any:
        made.append(pipeline)
        return launch(pipeline, bindings, groups)

    gpu.kernels.launch = counted
    try:
        out = run()
    finally:
        del gpu.kernels.launch
    gemvs = [p for p in made if p is gpu.kernels.cached(_KEY)]
    return out, len(gemvs)


_KEY = linalg.KernelKey("matmul_gemv", "", (DType.F32,) * 3, 0, ())


@pytest.mark.parametrize("m", [1, 2, 3, 4, 16])
@pytest.mark.parametrize("n, k", [(1, 1), (5, 3), (10, 512), (257, 7), (513, 1030)])
def test_rows_of_a_product(gpu, up, down, soft, m, n, k) -> None:
    a = RNG.normal(size=(m, k)).astype(np.float32)
    b = RNG.normal(size=(k, n)).astype(np.float32)
    got, count = _gemv_launches(gpu, lambda: down(gpu.matmul(up(a), up(b))))
    assert count == 1
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout_a", ["n", "t"])
@pytest.mark.parametrize("layout_b", ["n", "t"])
def test_every_layout_read_in_place(gpu, up, down, soft, layout_a, layout_b) -> None:
    # transposed and sliced views (offsets, leading dimensions longer than a row): no copy
    m, k, n = 3, 37, 21
    a = RNG.normal(size=(m, k + 5) if layout_a == "n" else (k + 2, m + 4)).astype(np.float32)
    b = RNG.normal(size=(k + 3, n + 6) if layout_b == "n" else (n + 1, k + 7)).astype(np.float32)
    av, bv = up(a), up(b)
    if layout_a == "n":
        av, an = gpu.slice(av, ((0, m, 1), (5, k + 5, 1))), a[:m, 5:k + 5]
    else:
        av = gpu.permute(gpu.slice(av, ((2, k + 2, 1), (1, m + 1, 1))), (1, 0))
        an = a[2:k + 2, 1:m + 1].T
    if layout_b == "n":
        bv, bn = gpu.slice(bv, ((3, k + 3, 1), (0, n, 1))), b[3:k + 3, :n]
    else:
        bv = gpu.permute(gpu.slice(bv, ((1, n + 1, 1), (7, k + 7, 1))), (1, 0))
        bn = b[1:n + 1, 7:k + 7].T
    before = gpu.kernels.copies
    got, count = _gemv_launches(gpu, lambda: down(gpu.matmul(av, bv)))
    assert count == 1 and gpu.kernels.copies == before
    np.testing.assert_allclose(got, an @ bn, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("b_shape", [(2, 3, 19, 11), (1, 1, 19, 11)], ids=["dense", "broadcast"])
def test_batched(gpu, up, down, soft, b_shape) -> None:
    a = RNG.normal(size=(2, 3, 2, 19)).astype(np.float32)
    b = RNG.normal(size=b_shape).astype(np.float32)
    got, count = _gemv_launches(gpu, lambda: down(gpu.matmul(up(a), up(b))))
    assert count == 1
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_more_rows_and_other_dtypes_keep_their_kernels(gpu, up, down, soft) -> None:
    a = RNG.normal(size=(gemv.MAX_ROWS + 1, 64)).astype(np.float32)
    b = RNG.normal(size=(64, 64)).astype(np.float32)
    got, count = _gemv_launches(gpu, lambda: down(gpu.matmul(up(a), up(b))))
    assert count == 0
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    ai = RNG.integers(-4, 4, (1, 9)).astype(np.int32)
    bi = RNG.integers(-4, 4, (9, 5)).astype(np.int32)
    got, count = _gemv_launches(gpu, lambda: down(gpu.matmul(up(ai), up(bi))))
    assert count == 0
    np.testing.assert_array_equal(got, ai @ bi)


def test_native_adapters_keep_the_tiled_kernel(gpu, up, down) -> None:
    # no monkeypatch: lavapipe is not a page's software adapter
    a = RNG.normal(size=(1, 1024)).astype(np.float32)
    b = RNG.normal(size=(1024, 512)).astype(np.float32)
    got, count = _gemv_launches(gpu, lambda: down(gpu.matmul(up(a), up(b))))
    assert count == 0
    np.testing.assert_allclose(got, a @ b, rtol=1e-3, atol=1e-3)
    assert not gemv.takes(1, DType.F32, software=False)


def test_dense_layer_epilogue(soft) -> None:
    # bias add and relu as the GEMV's epilogue: one kernel on fusion<webgpu>
    try:
        device = pyrite.device("fusion<webgpu>")
    except BackendUnavailable as exc:
        pytest.skip(f"fusion<webgpu> unavailable: {exc}")
    assert isinstance(device, Fusion)
    device.sync()
    xa = RNG.normal(size=(2, 300)).astype(np.float32)
    wa = RNG.normal(size=(300, 77)).astype(np.float32)
    ba = RNG.normal(size=(77,)).astype(np.float32)
    x, w, bias = (pyrite.tensor(v, device=device) for v in (xa, wa, ba))
    with inspect() as seen:
        got = (x @ w + bias).clamp_min(0.0).numpy()
    assert [g["kind"] for g in seen.groups] == ["matmul+epilogue"], seen.groups
    raw = device.inner
    assert any(key.kernel == "matmul_gemv" and key.params
               for key, _ in raw.kernels._sources), "the epilogue's GEMV pipeline"
    np.testing.assert_allclose(got, np.maximum(xa @ wa + ba, 0.0), rtol=1e-4, atol=1e-4)
