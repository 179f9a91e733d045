"""The implicit-GEMM convolution (`webgpu/conv_gemm.py`): every variant autotune may choose for
a shape (the direct kernel and each candidate tile of the GEMM), forward and input gradient,
agrees with the numpy backend on ragged shapes, strides, asymmetric padding, dilation, groups and
3-channel inputs; and the GEMM carries fusion's epilogue (bias, activation, scale, residual)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pyrite
from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.webgpu import conv, conv_channels, conv_gemm, conv_geometry, conv_plan
from pyrite.webgpu.matmul_config import CONFIGS

CASES = [  # x shape, w shape, stride, padding pairs, dilation, groups
    ((2, 3, 11, 10), (20, 3, 3, 3), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),  # first layer, ragged
    ((2, 8, 9, 7), (12, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # 3x3, padded
    ((1, 6, 9, 9), (10, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),  # groups, dilation
    ((3, 5, 6, 6), (7, 5, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # 1x1
    ((1, 4, 8, 8), (4, 1, 3, 3), (2, 3), ((1, 0), (1, 1)), (1, 1), 4),  # depthwise
]


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


@pytest.fixture(params=["runtime", "baked"])
def geometry(request, monkeypatch):  # type: ignore[no-untyped-def]
    """The GEMM's geometry read at run time (this CPU adapter's default), or compiled into its
    modules as on a native GPU (`conv_geometry.py`)."""
    if request.param == "baked":
        monkeypatch.setattr(conv_geometry, "applies", lambda adapter_type, native: native)
    return request.param


def _force(monkeypatch, gemm: bool) -> None:  # type: ignore[no-untyped-def]
    """Make the heuristic answer `gemm` for every conv, never the channel-block kernel (a fresh
    cache, restored afterwards)."""
    monkeypatch.setattr(conv, "prefers_gemm", lambda *args: gemm)
    monkeypatch.setattr(conv_channels, "choose", lambda *args: None)
    monkeypatch.setattr(conv, "_heuristic", functools.lru_cache(conv._heuristic.__wrapped__))
    conv_plan.clear()


def _variants(gpu, xs, ws, out_hw, groups, mode):  # type: ignore[no-untyped-def]
    m, n, kdim = conv_gemm.sizes(xs, ws, out_hw, groups, mode)
    return [c.name for c in conv_gemm.tiles(gpu.kernels, m, n, kdim, groups)]  # autotune's


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_every_candidate_agrees_with_numpy(gpu, ref, down, xs, ws, stride, pads, dil,
                                           groups) -> None:
    rng = np.random.default_rng(0)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    args = (stride, pads, dil, groups)
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    g = rng.normal(size=want.shape).astype(np.float32)
    want_dx = ref.conv2d_input_grad(g, w, xs, *args)
    k = gpu.kernels
    gx, gw, gb, gg = (_up(gpu, a) for a in (x, w, b, g))
    want_dw = ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args)
    tiles = _variants(gpu, xs, ws, want.shape[2:], groups, conv_gemm.FORWARD)
    assert len(tiles) >= 2
    for name in tiles:
        out = k.empty(want.shape, gx.dtype, "test")
        conv_gemm.run(k, CONFIGS[name], out, gx, gw, gb, xs, *args, conv_gemm.FORWARD)
        np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4, err_msg=name)
    for name in _variants(gpu, xs, ws, want.shape[2:], groups, conv_gemm.INPUT_GRAD):
        out = k.empty(xs, gx.dtype, "test")
        conv_gemm.run(k, CONFIGS[name], out, gg, gw, None, xs, *args, conv_gemm.INPUT_GRAD)
        np.testing.assert_allclose(down(out), want_dx, rtol=1e-4, atol=1e-4, err_msg=name)
    for name in _variants(gpu, xs, ws, want.shape[2:], groups, conv_gemm.WEIGHT_GRAD):
        out = k.empty(ws, gx.dtype, "test")
        conv_gemm.run(k, CONFIGS[name], out, gx, gg, None, xs, *args, conv_gemm.WEIGHT_GRAD)
        np.testing.assert_allclose(down(out), want_dw, rtol=1e-4, atol=1e-3, err_msg=name)
    # and whatever the dispatcher picks (direct or GEMM)
    np.testing.assert_allclose(down(gpu.conv2d(gx, gw, gb, *args)), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(down(gpu.conv2d_input_grad(gg, gw, xs, *args)), want_dx,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(down(gpu.conv2d_weight_grad(gx, gg, ws, *args)), want_dw,
                               rtol=1e-4, atol=1e-3)


def test_weight_gradient_splits_a_long_reduction(gpu, ref, down, monkeypatch) -> None:
    # 8 -> 12 channels over 2 x 30 x 31 pixels: few output tiles, K split into slices whose
    # partial sums one more kernel adds (short slices here, so the test stays small)
    monkeypatch.setattr(conv_gemm, "MIN_SPLIT", 64)
    rng = np.random.default_rng(5)
    xs, ws, args = (2, 8, 32, 33), (12, 8, 3, 3), ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    x = rng.normal(size=xs).astype(np.float32)
    g = rng.normal(size=(2, 12, 30, 31)).astype(np.float32)
    want = ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args)
    cfg = CONFIGS["t32x32x16_4x4_u16"]
    count, length = conv_gemm.splits(cfg, 12, 72, 2 * 30 * 31, 1)
    assert count > 6 and length % 64 == 0  # more slices than one elementwise kernel could add
    gx = _up(gpu, x)
    out = gpu.kernels.empty(ws, gx.dtype, "test")
    conv_gemm.run(gpu.kernels, cfg, out, gx, _up(gpu, g), None, xs, *args,
                  conv_gemm.WEIGHT_GRAD)
    np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_input_gradient_splits_a_long_reduction_over_few_pixels(gpu, ref, down, monkeypatch,
                                                                geometry, stride) -> None:
    # 8 input channels of 7x7 under 40 output channels of 3x3: one tile, K (360) in slices
    monkeypatch.setattr(conv_gemm, "MIN_SPLIT", 64)
    rng = np.random.default_rng(9)
    xs, ws = (2, 8, 7, 7), (40, 8, 3, 3)
    args = (stride, ((1, 1), (1, 1)), (1, 1), 1)
    x, w = rng.normal(size=xs).astype(np.float32), rng.normal(size=ws).astype(np.float32)
    g = rng.normal(size=ModuleOps.conv2d(ref, x, w, None, *args).shape).astype(np.float32)
    want = ref.conv2d_input_grad(g, w, xs, *args)
    cfg = CONFIGS[conv_gemm.NARROW]
    assert conv_gemm.splits(cfg, *conv_gemm.sizes(xs, ws, xs[2:], 1, conv_gemm.INPUT_GRAD),
                            1)[0] > 1
    out = gpu.kernels.empty(xs, _up(gpu, x).dtype, "test")
    conv_gemm.run(gpu.kernels, cfg, out, _up(gpu, g), _up(gpu, w), None, xs, *args,
                  conv_gemm.INPUT_GRAD)
    np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs, ws, pads", [
    ((2, 8, 26, 26), (16, 8, 3, 3), ((0, 0), (0, 0))),  # MNIST's conv2: 128 pairs x slices
    ((2, 2, 24, 23), (3, 2, 7, 5), ((3, 3), (2, 2))),  # 35 taps: three chunks of 16
])
def test_direct_weight_gradient_in_slices_and_tap_chunks(gpu, ref, down, xs, ws, pads) -> None:
    rng = np.random.default_rng(7)
    args = ((1, 1), pads, (1, 1), 1)
    x = rng.normal(size=xs).astype(np.float32)
    oh = xs[2] + sum(pads[0]) - ws[2] + 1
    g = rng.normal(size=(xs[0], ws[0], oh, xs[3] + sum(pads[1]) - ws[3] + 1)).astype(np.float32)
    want = ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args)
    chunks = -(-ws[2] * ws[3] // conv.WEIGHT_GRAD_TAPS)
    assert conv.weight_grad_slices(ws[0] * ws[1] * chunks, xs[0] * g.shape[2] * g.shape[3]) > 1
    out = gpu.kernels.empty(ws, _up(gpu, x).dtype, "test")
    conv._direct_weight_grad(gpu.kernels, out, _up(gpu, x), _up(gpu, g), *args)
    np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-3)


def test_heuristic_follows_the_measured_layers(gpu, monkeypatch) -> None:
    k = gpu.kernels
    monkeypatch.setattr(k.autotune, "mode", "off")  # the heuristic's answer, nothing timed
    wide, narrow = "gemm/" + conv_gemm.WIDE, "gemm/" + conv_gemm.NARROW
    # forward (M, N, K): 64 channels of K 27 over few pixels on the 64-row tile, a 16-channel
    # 1x1 squeeze of the 28x28 layers on the 32-row one, MNIST's conv2 (16 channels of 3x3)
    # direct; from 32768 columns and at most 128 terms direct (SqueezeNet's conv1, the 56x56
    # layers' 1x1s), with more terms the GEMM (their 3x3s)
    assert conv._choose(k, "conv2d_kernel", (64, 4096, 27), 1, 9, print) == wide
    assert conv._choose(k, "conv2d_kernel", (16, 12544, 64), 1, 1, print) == narrow
    assert conv._choose(k, "conv2d_kernel", (16, 36864, 72), 1, 9, print) == "direct"
    assert conv._choose(k, "conv2d_kernel", (64, 204304, 27), 1, 9, print) == "direct"
    assert conv._choose(k, "conv2d_kernel", (16, 50176, 64), 1, 1, print) == "direct"
    assert conv._choose(k, "conv2d_kernel", (64, 50176, 144), 1, 9, print) == wide
    # input gradient (M = input channels): GEMM from 32 (16 on 1x1), direct below; direct
    # from 32768 columns and at most 128 terms
    assert conv._choose(k, "conv2d_input_grad_kernel", (64, 3136, 2304), 1, 9, print) == wide
    assert conv._choose(k, "conv2d_input_grad_kernel", (16, 12544, 64), 1, 1, print) == narrow
    assert conv._choose(k, "conv2d_input_grad_kernel", (16, 50176, 64), 1, 1, print) == "direct"
    assert conv._choose(k, "conv2d_input_grad_kernel", (16, 50176, 576), 1, 9, print) == "direct"
    assert conv._choose(k, "conv2d_input_grad_kernel", (3, 824464, 576), 1, 9, print) == "direct"
    # weight gradient: natively its own tiled kernel (conv_wgrad.py), MNIST's conv1 (8 x 9)
    # included; the GEMM's tiles where it is switched off (conv.WEIGHT_GRAD_TILED): 32 rows up
    # to 16 rows with more than 64 columns (MNIST's conv2, 16 x 72), 64 rows else (32 x 128,
    # 16 x 64), MNIST's conv1 direct
    wgrad = "conv2d_weight_grad_kernel"
    assert conv._choose(k, wgrad, (16, 72, 36864), 1, 9, print) == "wgrad/16x64"
    assert conv._choose(k, wgrad, (1000, 512, 3136), 1, 1, print) == "wgrad/64x64"
    assert conv._choose(k, wgrad, (8, 9, 43264), 1, 9, print) == "wgrad/16x64"
    monkeypatch.setattr(conv, "WEIGHT_GRAD_TILED", False)
    conv._heuristic.cache_clear()
    assert conv._choose(k, wgrad, (16, 72, 36864), 1, 9, print) == narrow
    assert conv._choose(k, wgrad, (32, 128, 12544), 1, 1, print) == wide
    assert conv._choose(k, wgrad, (16, 64, 50176), 1, 1, print) == wide
    assert conv._choose(k, wgrad, (1000, 512, 3136), 1, 1, print) == wide
    assert conv._choose(k, wgrad, (8, 9, 43264), 1, 9, print) == "direct"
    monkeypatch.setattr(conv, "WEIGHT_GRAD_TILED", True)
    conv._heuristic.cache_clear()


def test_gemm_conv_takes_fusions_epilogue(monkeypatch, geometry) -> None:
    # relu(conv(x) * 0.5 + residual): one kernel, the GEMM's store applies the rest
    _force(monkeypatch, True)
    from pyrite.activation import relu
    from pyrite.nn import functional as F
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 8, 9, 7)).astype(np.float32)
    w = rng.normal(size=(12, 8, 3, 3)).astype(np.float32)
    b = rng.normal(size=(12,)).astype(np.float32)
    r = rng.normal(size=(2, 12, 9, 7)).astype(np.float32)
    want = None
    for name in ("numpy", "fusion<webgpu>"):
        try:
            dev = pyrite.device(name)
        except pyrite.errors.BackendUnavailable as exc:
            pytest.skip(str(exc))
        tx, tw, tb, tr = (pyrite.tensor(a, device=dev) for a in (x, w, b, r))
        if name == "numpy":
            want = relu(F.conv2d(tx, tw, tb, padding=1) * 0.5 + tr).numpy()
            continue
        from pyrite.webgpu.fusion import inspect
        dev.sync()
        with inspect() as seen:
            got = relu(F.conv2d(tx, tw, tb, padding=1) * 0.5 + tr).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert [g["kind"] for g in seen.groups] == ["conv2d+epilogue"]
        keys = {key.kernel for key, _ in dev.inner.kernels._sources}
        assert "conv2d_gemm" in keys


@pytest.mark.parametrize("gemm", [False, True], ids=["direct", "gemm"])
def test_conv_with_an_activation_alone_as_epilogue(monkeypatch, gemm) -> None:
    # relu(conv(x)): an epilogue with no input besides the conv's value (MNIST's conv2)
    _force(monkeypatch, gemm)
    from pyrite.activation import relu
    from pyrite.nn import functional as F
    from pyrite.webgpu.fusion import inspect
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 8, 9, 7)).astype(np.float32)
    w = rng.normal(size=(12, 8, 3, 3)).astype(np.float32)
    want = np.maximum(F.conv2d(pyrite.tensor(x), pyrite.tensor(w)).numpy(), 0)
    try:
        dev = pyrite.device("fusion<webgpu>")
    except pyrite.errors.BackendUnavailable as exc:
        pytest.skip(str(exc))
    dev.sync()
    with inspect() as seen:
        got = relu(F.conv2d(pyrite.tensor(x, device=dev), pyrite.tensor(w, device=dev))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert [g["kind"] for g in seen.groups] == ["conv2d+epilogue"]


@pytest.mark.parametrize("gemm", [False, True], ids=["direct", "gemm"])
def test_input_gradient_takes_the_activation_mask_as_epilogue(monkeypatch, geometry,
                                                              gemm) -> None:
    # d/dx of sum(conv2(relu(conv1(x)))): conv2's input gradient and relu's mask are one
    # kernel (Fusion records the input gradient like conv2d), direct or GEMM
    _force(monkeypatch, gemm)
    from pyrite.activation import relu
    from pyrite.nn import functional as F
    from pyrite.webgpu.fusion import inspect
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 3, 9, 8)).astype(np.float32)
    w1 = rng.normal(size=(6, 3, 3, 3)).astype(np.float32)
    w2 = rng.normal(size=(5, 6, 3, 3)).astype(np.float32)
    grads = {}
    for name in ("autodiff<numpy>", "autodiff<fusion<webgpu>>"):
        try:
            dev = pyrite.device(name)
        except pyrite.errors.BackendUnavailable as exc:
            pytest.skip(str(exc))
        tx = pyrite.tensor(x, device=dev).require_grad()
        t1 = pyrite.tensor(w1, device=dev)
        t2 = pyrite.tensor(w2, device=dev).require_grad()
        loss = F.conv2d(relu(F.conv2d(tx, t1, None, padding=1)), t2, None, padding=1).sum()
        with inspect() as seen:
            got = loss.backward()
            grads[name] = (tx.grad(got).numpy(), t2.grad(got).numpy())
        if name != "autodiff<numpy>":
            kinds = [g["kind"] for g in seen.groups]
            assert "conv2d_input_grad+epilogue" in kinds, kinds
    want, got = grads["autodiff<numpy>"], grads["autodiff<fusion<webgpu>>"]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("xs, ws, pads, dil, groups", [
    ((2, 6, 9, 8), (8, 3, 3, 2), ((1, 2), (0, 1)), (2, 1), 2),  # groups, dilation, asymmetric
    ((2, 5, 7, 7), (6, 5, 5, 5), ((2, 2), (2, 2)), (1, 1), 1),  # 25 taps
    ((1, 4, 6, 6), (4, 4, 1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # padding past reach: gather
])
def test_stride_one_input_gradient_as_a_flipped_forward(gpu, ref, down, xs, ws, pads, dil,
                                                        groups) -> None:
    # MODE 3 (the forward of dy with the flipped weight) and MODE 1 (the gather) agree with
    # numpy on every candidate tile
    rng = np.random.default_rng(13)
    args = ((1, 1), pads, dil, groups)
    x, w = rng.normal(size=xs).astype(np.float32), rng.normal(size=ws).astype(np.float32)
    g = rng.normal(size=ModuleOps.conv2d(ref, x, w, None, *args).shape).astype(np.float32)
    want = ref.conv2d_input_grad(g, w, xs, *args)
    assert (conv_gemm.flipped_padding(ws, (1, 1), pads, dil) is None) == (ws[2] == 1)
    gg, gw = _up(gpu, g), _up(gpu, w)
    for name in _variants(gpu, xs, ws, g.shape[2:], groups, conv_gemm.INPUT_GRAD):
        for form in ({}, {"gather": True}):
            out = gpu.kernels.empty(xs, gg.dtype, "test")
            conv_gemm.run(gpu.kernels, CONFIGS[name], out, gg, gw, None, xs, *args,
                          conv_gemm.INPUT_GRAD, **form)
            np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name} {form}")


def test_wide_1x1_gradients_run_as_plain_matmuls(gpu, ref, down, monkeypatch) -> None:
    # 1024 x 256 weights (conv.MATMUL_MIN_WEIGHTS): dx = W^T @ dy and dw = sum dy @ x^T per
    # image through linalg's batched matmul; padded, the same layer keeps the conv GEMM (and the
    # weight gradient its own tiled kernel)
    monkeypatch.setattr(gpu.kernels.autotune, "mode", "off")
    k = gpu.kernels
    for pads, want_names in ((((0, 0), (0, 0)), ("matmul", "matmul")),
                             (((1, 1), (0, 0)), ("gemm/", "wgrad/"))):
        xs, ws = (2, 256, 3, 4), (1024, 256, 1, 1)
        args = ((1, 1), pads, (1, 1), 1)
        rng = np.random.default_rng(17)
        x, w = rng.normal(size=xs).astype(np.float32), rng.normal(size=ws).astype(np.float32)
        g = rng.normal(size=ModuleOps.conv2d(ref, x, w, None, *args).shape).astype(np.float32)
        plain = conv._plain(ws, (1, 1), pads, 1)
        for family, mode, want_name in (
                ("conv2d_input_grad_kernel", conv_gemm.INPUT_GRAD, want_names[0]),
                ("conv2d_weight_grad_kernel", conv_gemm.WEIGHT_GRAD, want_names[1])):
            gemm = conv_gemm.sizes(xs, ws, g.shape[2:], 1, mode)
            assert conv._choose(k, family, gemm, 1, 1, print, plain).startswith(want_name)
        gx, gw, gg = _up(gpu, x), _up(gpu, w), _up(gpu, g)
        np.testing.assert_allclose(down(gpu.conv2d_input_grad(gg, gw, xs, *args)),
                                   ref.conv2d_input_grad(g, w, xs, *args), rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(down(gpu.conv2d_weight_grad(gx, gg, ws, *args)),
                                   ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args),
                                   rtol=1e-4, atol=1e-3)


def test_split_rules_follow_the_measured_layers() -> None:
    # (M, N) per group and taps -> the K split measured best on the H100 (conv_gemm.py)
    wide, narrow = conv_gemm.WIDE, conv_gemm.NARROW
    wg, dg = conv_gemm.WEIGHT_GRAD, conv_gemm.INPUT_GRAD
    assert conv_gemm.split_rule(wg, 64, 27, 9, wide) == conv_gemm.SMALL_WEIGHTS_SPLIT  # conv1
    assert conv_gemm.split_rule(wg, 192, 48, 1, wide) == conv_gemm.WEIGHT_GRAD_SPLIT[1]
    assert conv_gemm.split_rule(wg, 256, 576, 9, wide) == conv_gemm.WEIGHT_GRAD_SPLIT[0]
    assert conv_gemm.split_rule(dg, 64, 3136, 9, wide) == conv_gemm.INPUT_GRAD_SPLIT
    assert conv_gemm.split_rule(dg, 32, 12544, 9, narrow) is None
    assert conv_gemm.split_rule(dg, 64, 3136, 1, wide) is None
    # a page's software adapter keeps the default everywhere
    assert conv_gemm.split_rule(wg, 64, 27, 9, wide, soft=True) is None
    cfg = CONFIGS[wide]
    # SqueezeNet's conv1: K = 16 x 113 x 113 in 246 slices (64 before), each a multiple of
    # 64 terms long
    assert conv_gemm.splits(cfg, 64, 27, 204304, 1, conv_gemm.SMALL_WEIGHTS_SPLIT) == (246, 832)
    assert conv_gemm.splits(cfg, 64, 27, 204304, 1)[0] == conv_gemm.MAX_SPLITS


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
def test_a_forward_with_few_tiles_splits_k_and_keeps_bias_and_epilogue(monkeypatch, geometry,
                                                                      with_bias) -> None:
    # 64 channels of 3x3 (K 576) over 2 x 5 x 5 pixels, K split into slices as the sweep asks
    # for (not by default): the bias goes with the first slice, relu(y * 0.5 + residual) with
    # the sum
    _force(monkeypatch, True)
    split = (1024, 128)
    original = conv_gemm.run
    monkeypatch.setattr(conv_gemm, "run", lambda *a, **kw: original(
        *a, **({**kw, "split": split} if a[11] == conv_gemm.FORWARD else kw)))
    from pyrite.activation import relu
    from pyrite.nn import functional as F
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 64, 5, 5)).astype(np.float32)
    w = rng.normal(size=(24, 64, 3, 3)).astype(np.float32)
    b = rng.normal(size=(24,)).astype(np.float32) if with_bias else None
    r = rng.normal(size=(2, 24, 5, 5)).astype(np.float32)
    cfg = CONFIGS[conv_gemm.NARROW]
    assert conv_gemm.splits(cfg, 24, 50, 576, 1, split)[0] > 1
    want: dict[str, np.ndarray] = {}
    for name in ("numpy", "webgpu-unfused", "fusion<webgpu>"):
        try:
            dev = pyrite.device(name)
        except pyrite.errors.BackendUnavailable as exc:
            pytest.skip(str(exc))
        tx, tw, tr = (pyrite.tensor(a, device=dev) for a in (x, w, r))
        tb = pyrite.tensor(b, device=dev) if b is not None else None
        plain = F.conv2d(tx, tw, tb, padding=1).numpy()
        fused = relu(F.conv2d(tx, tw, tb, padding=1) * 0.5 + tr).numpy()
        if name == "numpy":
            want = {"plain": plain, "fused": fused}
            continue
        np.testing.assert_allclose(plain, want["plain"], rtol=1e-4, atol=1e-3, err_msg=name)
        np.testing.assert_allclose(fused, want["fused"], rtol=1e-4, atol=1e-3, err_msg=name)
