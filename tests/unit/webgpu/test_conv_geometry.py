"""The conv GEMM's geometry compiled into its module (`webgpu/conv_geometry.py`): the forward
and the input gradient (the flipped stride-1 form and the strided gather) agree with numpy with
the words as module constants and as run-time reads, on ragged, whole-tile, strided, grouped,
dilated and asymmetric-padded convs, on the heuristic's tiles and with matmul_options' warp
layout and deeper prefetch; the modules differ as they should; bad words are refused."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.capture import traced
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import conv_gemm, conv_geometry
from pyrite.webgpu.kernels import Kernels
from pyrite.webgpu.matmul_config import tile

CASES = [  # x shape, w shape, stride, padding pairs, dilation, groups
    ((2, 6, 7, 9), (20, 6, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # ragged M, N and K
    ((1, 16, 8, 8), (64, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # whole tiles
    ((2, 6, 11, 10), (8, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),  # strided, grouped
]
TILES = (conv_gemm.WIDE, conv_gemm.NARROW, conv_gemm.WIDE + "_w8x4_d2")


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_constant_and_runtime_geometry_agree_with_numpy(gpu, ref, down, xs, ws, stride, pads,
                                                        dil, groups) -> None:
    rng = np.random.default_rng(1)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    args = (stride, pads, dil, groups)
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    g = rng.normal(size=want.shape).astype(np.float32)
    want_dx = ref.conv2d_input_grad(g, w, xs, *args)
    k = gpu.kernels
    gx, gw, gb, gg = (_up(gpu, a) for a in (x, w, b, g))
    for name in TILES:
        for constant in (True, False):
            label = f"{name} constant={constant}"
            out = k.empty(want.shape, gx.dtype, "test")
            conv_gemm.run(k, tile(name), out, gx, gw, gb, xs, *args, conv_gemm.FORWARD,
                          constant=constant)
            np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4, err_msg=label)
            for gather in (False, True):
                out = k.empty(xs, gx.dtype, "test")
                conv_gemm.run(k, tile(name), out, gg, gw, None, xs, *args,
                              conv_gemm.INPUT_GRAD, gather=gather, constant=constant)
                np.testing.assert_allclose(down(out), want_dx, rtol=1e-4, atol=1e-4,
                                           err_msg=f"{label} gather={gather}")


def _sources(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    seen: list[str] = []
    real = Kernels.pipeline

    def spy(self, key, source, *rest, **kw):  # type: ignore[no-untyped-def]
        if key.kernel == "conv2d_gemm":
            seen.append(source)
        return real(self, key, source, *rest, **kw)

    monkeypatch.setattr(Kernels, "pipeline", spy)
    return seen


def test_modules_bake_the_geometry_on_a_gpu_but_not_the_weight_gradient(gpu, monkeypatch) -> None:
    seen = _sources(monkeypatch)
    k = gpu.kernels
    monkeypatch.setattr(k, "_sources", {})  # every pipeline of this test compiled afresh
    # as on a native GPU adapter (this one may be lavapipe, a CPU adapter: see the next test)
    monkeypatch.setattr(conv_geometry, "applies", lambda adapter_type, native: native)
    xs, ws = (1, 5, 6, 7), (9, 5, 3, 3)  # a shape no other test compiles
    rng = np.random.default_rng(2)
    gx, gw = _up(gpu, rng.normal(size=xs)), _up(gpu, rng.normal(size=ws))
    conv = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    cfg = tile(conv_gemm.WIDE)
    out = k.empty((1, 9, 6, 7), gx.dtype, "test")
    conv_gemm.run(k, cfg, out, gx, gw, None, xs, *conv, conv_gemm.FORWARD)
    assert len(seen) == 1 and "const cm = array<i32, 16>(6i, 7i, 6i, 7i, 3i, 3i," in seen[0]
    conv_gemm.run(k, cfg, out, gx, gw, None, xs, *conv, conv_gemm.FORWARD, constant=False)
    assert len(seen) == 2 and "cm_words" not in seen[1] and "var<storage, read> cm:" in seen[1]
    dw = k.empty(ws, gx.dtype, "test")
    conv_gemm.run(k, cfg, dw, gx, out, None, xs, *conv, conv_gemm.WEIGHT_GRAD)
    assert len(seen) == 3 and "cm_words" not in seen[2]
    # another geometry is another module; the same one is the cached pipeline
    conv_gemm.run(k, cfg, out, gx, gw, None, xs, *conv, conv_gemm.FORWARD)
    assert len(seen) == 3
    xs2 = (1, 5, 6, 8)
    gx2, out2 = _up(gpu, rng.normal(size=xs2)), k.empty((1, 9, 6, 8), gx.dtype, "test")
    conv_gemm.run(k, cfg, out2, gx2, gw, None, xs2, *conv, conv_gemm.FORWARD)
    assert len(seen) == 4 and "const cm = array<i32, 16>(6i, 8i," in seen[3]


def test_which_adapters_bake_by_default(gpu, monkeypatch) -> None:
    assert conv_geometry.applies("DiscreteGPU", True)
    assert conv_geometry.applies("IntegratedGPU", True)
    assert not conv_geometry.applies("CPU", True)  # lavapipe: compiles cost, no GPU to gain
    assert not conv_geometry.applies("DiscreteGPU", False)  # a page
    monkeypatch.setattr(conv_geometry, "CONSTANT", False)
    assert not conv_geometry.applies("DiscreteGPU", True)
    if gpu.kernels.runtime.adapter.adapter_type == "CPU":  # this machine's default: run time
        seen = _sources(monkeypatch)
        monkeypatch.setattr(gpu.kernels, "_sources", {})
        monkeypatch.setattr(conv_geometry, "CONSTANT", True)
        k = gpu.kernels
        xs, ws = (1, 3, 5, 5), (4, 3, 3, 3)
        out = k.empty((1, 4, 3, 3), DType.F32, "test")
        conv_gemm.run(k, tile(conv_gemm.WIDE), out, _up(gpu, np.ones(xs)), _up(gpu, np.ones(ws)),
                      None, xs, (1, 1), ((0, 0), (0, 0)), (1, 1), 1, conv_gemm.FORWARD)
        assert len(seen) == 1 and "cm_words" not in seen[0]
        np.testing.assert_allclose(gpu.to_data(out).to_numpy(), 27.0)


def test_traced_words_and_bad_words() -> None:
    words = list(range(17))
    assert conv_geometry.constant_words(words) == tuple(range(16))
    held = traced.TracedInt(3)
    held._expr = ("input", 0)
    assert conv_geometry.constant_words([held, *words[1:]]) is None
    assert "var<storage, read> cm: array<i32>;" in conv_geometry.source(None)
    with pytest.raises(ValueError, match="takes 16 words, got 3"):
        conv_geometry.source((1, 2, 3))

