"""The implicit GEMM's native forms (`webgpu/conv_gemm.py`): its modules compiled without naga's
bounds checks (loop bounding kept), and conv2d_gemm.wgsl's INTERIOR form (no extent compares)
only where M, N, K and each K slice are whole tiles. Every mode (forward, the input gradient as
the gather and as the flipped forward, the weight gradient with and without split K) agrees with
numpy in the interior form, and a shape ragged in any one GEMM dimension never gets it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.webgpu import conv_gemm, native, unchecked_module
from pyrite.webgpu.matmul_config import CONFIGS
from pyrite.webgpu.unchecked_module import ALL_CHECKS, LOOP_BOUNDING

WIDE, NARROW = CONFIGS[conv_gemm.WIDE], CONFIGS[conv_gemm.NARROW]
PAD1 = ((1, 1), (1, 1))
NO_PAD = ((0, 0), (0, 0))
# x shape, w shape, stride, padding, dilation, groups: every GEMM of these is whole 64x64x16 tiles
WHOLE = [
    ((1, 64, 8, 8), (64, 64, 3, 3), (1, 1), PAD1, (1, 1), 1),  # M 64, N 64, K 576 (wgrad K 64)
    ((4, 64, 8, 8), (64, 64, 3, 3), (1, 1), PAD1, (1, 1), 1),  # wgrad K 256: split in slices
    ((1, 64, 16, 16), (64, 64, 3, 3), (2, 2), PAD1, (1, 1), 1),  # stride: the gather's dgrad
    ((2, 128, 8, 4), (128, 64, 1, 1), (1, 1), NO_PAD, (1, 1), 2),  # 1x1, two groups of 64
]
# one GEMM dimension ragged at a time (WIDE: 64x64x16)
RAGGED = [
    ((1, 64, 8, 8), (63, 64, 3, 3), (1, 1), PAD1, (1, 1), 1),  # M 63, dgrad K 567
    ((1, 64, 7, 9), (64, 64, 3, 3), (1, 1), PAD1, (1, 1), 1),  # pixels: forward N, wgrad K
    ((1, 60, 8, 8), (64, 60, 3, 3), (1, 1), PAD1, (1, 1), 1),  # K = 540, dgrad M, wgrad N
    ((1, 64, 9, 9), (64, 64, 3, 3), (1, 1), PAD1, (2, 2), 1),  # dilation: 7x7 outputs
    ((2, 3, 11, 10), (20, 3, 3, 3), (2, 2), NO_PAD, (1, 1), 1),  # a first layer
]


pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


def _spy(monkeypatch: pytest.MonkeyPatch, k: Any) -> list[tuple[int, bool, int]]:
    """(mode, interior, checks) of every conv GEMM pipeline looked up from now on."""
    seen: list[tuple[int, bool, int]] = []
    cached = k.cached

    def spy(key: Any, entry_point: str = "main") -> Any:
        if key.kernel == "conv2d_gemm":
            seen.append(key.params[:3])
        return cached(key, entry_point)
    monkeypatch.setattr(k, "cached", spy)
    return seen


def _check_modes(gpu: Any, ref: Any, down: Any, case: tuple[Any, ...],
                 cfg: Any) -> None:
    """Every GEMM mode of `case` on `cfg` against numpy (bias on the forward)."""
    xs, ws, stride, pads, dil, groups = case
    args = (stride, pads, dil, groups)
    rng = np.random.default_rng(1)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    g = rng.normal(size=want.shape).astype(np.float32)
    want_dx = ref.conv2d_input_grad(g, w, xs, *args)
    want_dw = ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args)
    k = gpu.kernels
    gx, gw, gb, gg = (gpu.from_data(TensorData(a)) for a in (x, w, b, g))
    out = k.empty(want.shape, gx.dtype, "test")
    conv_gemm.run(k, cfg, out, gx, gw, gb, xs, *args, conv_gemm.FORWARD)
    np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4)
    for gather in (False, True):
        out = k.empty(xs, gx.dtype, "test")
        conv_gemm.run(k, cfg, out, gg, gw, None, xs, *args, conv_gemm.INPUT_GRAD, gather=gather)
        np.testing.assert_allclose(down(out), want_dx, rtol=1e-4, atol=1e-4)
    for split in (None, (4096, 64)):
        out = k.empty(ws, gx.dtype, "test")
        conv_gemm.run(k, cfg, out, gx, gg, None, xs, *args, conv_gemm.WEIGHT_GRAD, split=split)
        np.testing.assert_allclose(down(out), want_dw, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", WHOLE)
def test_interior_agrees_with_numpy(gpu, ref, down, monkeypatch, case) -> None:  # type: ignore[no-untyped-def]
    seen = _spy(monkeypatch, gpu.kernels)
    _check_modes(gpu, ref, down, case, WIDE)
    assert conv_gemm.native(gpu.kernels)
    # forward, dgrad flipped (3, stride 1) or not, the gather (1), two weight gradients
    assert len(seen) == 5 and all(inside for _, inside, _ in seen), seen
    assert {checks for *_, checks in seen} == {LOOP_BOUNDING}


@pytest.mark.parametrize("case", RAGGED)
def test_ragged_shapes_keep_their_guards(gpu, ref, down, monkeypatch, case) -> None:  # type: ignore[no-untyped-def]
    seen = _spy(monkeypatch, gpu.kernels)
    _check_modes(gpu, ref, down, case, WIDE)
    _check_modes(gpu, ref, down, case, NARROW)
    # each of these shapes is ragged in at least one dimension of every mode's GEMM on both tiles
    assert len(seen) == 10 and not any(inside for _, inside, _ in seen), seen


def test_interior_rule() -> None:
    assert conv_gemm.interior(WIDE, 64, 128, 576, 576)
    assert conv_gemm.interior(WIDE, 128, 64, 4096, 128)  # slices of 128
    assert not conv_gemm.interior(WIDE, 64, 128, 576, 72)  # a slice not whole K steps
    assert not conv_gemm.interior(WIDE, 32, 128, 576, 576)  # M half a tile
    assert not conv_gemm.interior(WIDE, 64, 100, 576, 576)
    assert not conv_gemm.interior(WIDE, 64, 128, 24, 24)
    assert not conv_gemm.interior(WIDE, 0, 128, 576, 576)
    assert conv_gemm.interior(NARROW, 32, 64, 16, 16)


def test_checks_follow_the_switch(gpu, ref, down, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Natively the modules are compiled through unchecked_module with loop bounding only;
    NATIVE_CHECKS = ALL_CHECKS compiles them with every check (wgpu-py's own call)."""
    made: list[int] = []
    create = unchecked_module.create

    def spy(device: Any, code: str, label: str = "", checks: int = 0) -> Any:
        if "conv2d_gemm" in label:
            made.append(checks)
        return create(device, code, label, checks)
    monkeypatch.setattr(native.unchecked_module, "create", spy)
    k = gpu.kernels
    monkeypatch.setattr(k, "_sources", {})  # compile afresh (restored afterwards)
    monkeypatch.setattr(k.runtime.inner, "_pipelines", {})
    seen = _spy(monkeypatch, k)
    case = ((1, 8, 5, 6), (12, 8, 3, 3), (1, 1), PAD1, (1, 1), 1)
    _check_modes(gpu, ref, down, case, NARROW)
    assert made and set(made) == {LOOP_BOUNDING}
    made.clear()
    seen.clear()
    monkeypatch.setattr(conv_gemm, "NATIVE_CHECKS", ALL_CHECKS)
    _check_modes(gpu, ref, down, case, NARROW)
    assert not made and {checks for *_, checks in seen} == {ALL_CHECKS}


def test_interior_forward_takes_fusions_epilogue(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # relu(conv(x) * 0.5 + residual) on whole tiles: one kernel, INTERIOR, the epilogue stored
    import functools

    import pyrite
    from pyrite.activation import relu
    from pyrite.nn import functional as F
    from pyrite.webgpu import conv
    from pyrite.webgpu.fusion import inspect
    monkeypatch.setattr(conv, "prefers_gemm", lambda *args: True)
    monkeypatch.setattr(conv, "_heuristic", functools.lru_cache(conv._heuristic.__wrapped__))
    rng = np.random.default_rng(4)
    x, w, b, r = (rng.normal(size=s).astype(np.float32) for s in
                  ((2, 64, 8, 4), (64, 64, 3, 3), (64,), (2, 64, 8, 4)))
    ref = pyrite.device("numpy")
    want = relu(F.conv2d(*(pyrite.tensor(a, device=ref) for a in (x, w, b)), padding=1) * 0.5
                + pyrite.tensor(r, device=ref)).numpy()
    try:
        dev = pyrite.device("fusion<webgpu>")
    except pyrite.errors.BackendUnavailable as exc:
        pytest.skip(str(exc))
    tx, tw, tb, tr = (pyrite.tensor(a, device=dev) for a in (x, w, b, r))
    dev.sync()
    seen = _spy(monkeypatch, dev.inner.kernels)
    with inspect() as groups:
        got = relu(F.conv2d(tx, tw, tb, padding=1) * 0.5 + tr).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert [g["kind"] for g in groups.groups] == ["conv2d+epilogue"]
    assert seen and all(inside for _, inside, _ in seen), seen
