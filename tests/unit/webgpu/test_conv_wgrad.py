"""conv2d's weight gradient on its own tiled kernel (`conv_wgrad.py`,
shaders/conv2d_wgrad_tiled.wgsl): every tile, one slice and many (a ragged last slice, slices
shorter than the batch's pixels of one row), strides, padding, dilation and groups, against
numpy; the rules for the tile and the slices; a bad variant name refused in one line; the
dispatcher's choice."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import conv, conv_wgrad

CASES = {  # x shape, w shape, stride, padding, dilation, groups
    "3x3 padded": ((3, 8, 11, 9), (20, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    "first layer, stride 2": ((2, 3, 23, 21), (40, 3, 3, 3), (2, 2), ((0, 0), (0, 0)),
                              (1, 1), 1),
    "groups, dilation, asymmetric padding": ((2, 6, 13, 10), (9, 2, 3, 2), (2, 1),
                                             ((1, 2), (0, 1)), (2, 1), 3),
    "1x1, rows past a tile": ((2, 70, 7, 5), (67, 70, 1, 1), (1, 1), ((0, 0), (0, 0)),
                              (1, 1), 1),
    "narrow rows (4 px wide)": ((5, 4, 6, 4), (17, 4, 3, 3), (1, 1), ((1, 1), (1, 1)),
                                (1, 1), 1),
}


def _want(ref, x, g, ws, args):  # type: ignore[no-untyped-def]
    return np.asarray(ref.to_data(ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args))
                      .to_numpy())


def _operands(gpu, ref, xs, ws, args):  # type: ignore[no-untyped-def]
    r = np.random.default_rng(7)
    x = r.normal(size=xs).astype(np.float32)
    w = r.normal(size=ws).astype(np.float32)
    y = ref.to_data(ModuleOps.conv2d(ref, x, w, None, *args)).to_numpy()
    g = r.normal(size=y.shape).astype(np.float32)
    return x, g, gpu.from_data(TensorData(x)), gpu.from_data(TensorData(g))


@pytest.mark.parametrize("case", list(CASES))
def test_every_tile_and_slicing_agrees_with_numpy(gpu, ref, down, case) -> None:
    xs, ws, *rest = CASES[case]
    args = tuple(rest)
    x, g, gx, gg = _operands(gpu, ref, xs, ws, args)
    want = _want(ref, x, g, ws, args)
    k = gpu.kernels
    pixels = g.shape[0] * g.shape[2] * g.shape[3]
    lengths = [None, conv_wgrad.STEP, 3 * conv_wgrad.STEP,
               -(-pixels // conv_wgrad.STEP) * conv_wgrad.STEP]
    for tile in conv_wgrad.TILES:
        for length in lengths:
            name = f"wgrad/{tile}" + ("" if length is None else f"/l{length}")
            out = k.empty(ws, DType.F32, "test")
            conv.launch_variant(k, "weight_grad", name, out, gx, gg, None, xs, *args)
            np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{case} {name}")


def test_the_dispatcher_runs_it(gpu, ref, down) -> None:
    """Natively every weight gradient runs on the tiled kernel (its result agrees), but a
    plain 1x1 layer of MATMUL_MIN_WEIGHTS; on a page's software adapter those of 1024 or more
    weights per group (the GEMM's before), the smaller ones direct."""
    xs, ws, stride, pads, dil, groups = CASES["3x3 padded"]
    args = (stride, pads, dil, groups)
    k = gpu.kernels
    assert conv.heuristic_variant(k, "weight_grad", xs, (40, 8, 3, 3), *args) == "wgrad/64x64"
    assert conv.heuristic_variant(k, "weight_grad", xs, ws, *args) == "wgrad/32x64"
    assert conv.heuristic_variant(k, "weight_grad", xs, (4, 8, 3, 3), *args) == "wgrad/16x64"
    assert conv.heuristic_variant(k, "weight_grad", (2, 512, 14, 14), (1000, 512, 1, 1),
                                  (1, 1), ((0, 0), (0, 0)), (1, 1), 1) == "matmul"
    family = "conv2d_weight_grad_kernel"
    assert conv._heuristic(family, 20, 72, 500, 1, 9, 16384, soft=True) == "wgrad/64x64"
    assert conv._heuristic(family, 4, 72, 500, 1, 9, 16384, soft=True) == "direct"
    x, g, gx, gg = _operands(gpu, ref, xs, ws, args)
    got = gpu.conv2d_weight_grad(gx, gg, ws, *args)
    np.testing.assert_allclose(down(got), _want(ref, x, g, ws, args), rtol=1e-4, atol=1e-4)


def test_the_tile_rule() -> None:
    assert conv_wgrad.choose_tile(64, 144) == "64x64"
    assert conv_wgrad.choose_tile(16, 72) == "16x64"
    assert conv_wgrad.choose_tile(16, 16) == "16x64"
    assert conv_wgrad.choose_tile(64, 16) == "64x16"
    assert conv_wgrad.choose_tile(32, 16) == "64x16"
    assert conv_wgrad.choose_tile(64, 27) == "64x32"
    assert conv_wgrad.choose_tile(32, 128) == "32x64"
    assert conv_wgrad.choose_tile(20, 30) == "32x32"
    assert conv_wgrad.choose_tile(16, 72, soft=True) == conv_wgrad.SOFTWARE_TILE == "64x64"


def test_the_slice_rule() -> None:
    # SqueezeNet's conv1: one 64x32 tile of 128 invocations over 204,304 pixels
    length = conv_wgrad.slice_length("64x32", 64, 27, 1, 204304)
    assert length % conv_wgrad.STEP == 0 and length >= conv_wgrad.MIN_LENGTH
    assert -(-204304 // length) <= conv_wgrad.MAX_SLICES
    assert -(-204304 // length) * 128 <= 2 * conv_wgrad.TARGET_INVOCATIONS
    # few pixels: one slice of at least MIN_LENGTH
    assert conv_wgrad.slice_length("64x64", 64, 144, 1, 100) == conv_wgrad.MIN_LENGTH
    # a page's software adapter takes fewer, longer slices
    assert conv_wgrad.slice_length("64x64", 64, 144, 1, 50176, soft=True) > \
        conv_wgrad.slice_length("64x64", 64, 144, 1, 50176)


@pytest.mark.parametrize("name", ["wgrad/48x64", "wgrad/64x64/l17", "wgrad/64x64/x16",
                                  "wgrad/64x64/l0", "wgrad/64x64/l16/l16"])
def test_a_bad_variant_is_refused_in_one_line(name) -> None:
    with pytest.raises(ValueError, match="unknown weight-gradient variant") as e:
        conv_wgrad.parse(name)
    assert "\n" not in str(e.value)


def test_many_slices_sum_the_same_bits_every_time(gpu, ref, down) -> None:
    """Slices of 16 pixels (one kernel step each) added by the split sum: the same result, bit
    for bit, on every run (no atomics, a fixed order), and within float error of numpy."""
    xs, ws, *rest = CASES["first layer, stride 2"]
    args = tuple(rest)
    x, g, gx, gg = _operands(gpu, ref, xs, ws, args)
    k = gpu.kernels
    runs = []
    for _ in range(3):
        out = k.empty(ws, DType.F32, "test")
        conv_wgrad.run(k, out, gx, gg, *args, tile="64x32", length=conv_wgrad.STEP)
        runs.append(down(out))
    assert all(np.array_equal(runs[0], r) for r in runs[1:])
    np.testing.assert_allclose(runs[0], _want(ref, x, g, ws, args), rtol=1e-4, atol=1e-4)
