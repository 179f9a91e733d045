"""The Winograd F(2x2, 3x3) conv (`webgpu/conv_winograd.py`): its forward (with and without the
bias) and its input gradient (the output gradient convolved with the flipped, transposed weight)
agree with numpy on odd planes (a last row and column of half tiles), every padding from 0 to 2
on each side, channel counts that are no multiple of 4; the weight transform is G g G^T of the
kernel or of its flipped transpose; other geometry is refused in one line. No rule dispatches
it (it lost to the GEMM on the H100), so it runs here by name."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import conv, conv_winograd

CASES = [  # x shape, w shape, padding pairs
    ((2, 5, 7, 9), (3, 5, 3, 3), ((1, 1), (1, 1))),  # odd planes: half tiles at the edges
    ((1, 4, 6, 6), (8, 4, 3, 3), ((0, 0), (0, 0))),
    ((1, 3, 5, 4), (2, 3, 3, 3), ((2, 2), (2, 2))),
    ((2, 6, 8, 7), (5, 6, 3, 3), ((1, 0), (0, 2))),  # asymmetric
    ((1, 17, 3, 3), (33, 17, 3, 3), ((1, 1), (1, 1))),  # one tile per plane, more channels
]
ONE = (1, 1)


pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


def _data(xs, ws, pads, ref):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(11)
    x, w = (rng.normal(size=s).astype(np.float32) for s in (xs, ws))
    b = rng.normal(size=ws[0]).astype(np.float32)
    y = ref.to_data(ModuleOps.conv2d(ref, x, w, b, ONE, pads, ONE, 1)).to_numpy()
    g = rng.normal(size=y.shape).astype(np.float32)
    return x, w, b, y, g


@pytest.mark.parametrize("xs, ws, pads", CASES)
def test_forward_and_input_gradient_agree_with_numpy(gpu, ref, down, xs, ws, pads) -> None:
    x, w, b, y, g = _data(xs, ws, pads, ref)
    k = gpu.kernels
    gx, gw, gb, gg = (gpu.from_data(TensorData(a)) for a in (x, w, b, g))
    out = k.empty(y.shape, gx.dtype, "test")
    conv.launch_variant(k, "forward", conv_winograd.NAME, out, gx, gw, gb, xs, ONE, pads, ONE, 1)
    np.testing.assert_allclose(down(out), y, rtol=1e-4, atol=1e-4)
    unbiased = ref.to_data(ModuleOps.conv2d(ref, x, w, None, ONE, pads, ONE, 1)).to_numpy()
    conv_winograd.run(k, out, gx, gw, None, pads)
    np.testing.assert_allclose(down(out), unbiased, rtol=1e-4, atol=1e-4)
    want = ref.conv2d_input_grad(g, w, xs, ONE, pads, ONE, 1)
    dx = k.empty(xs, gx.dtype, "test")
    conv.launch_variant(k, "input_grad", conv_winograd.NAME, dx, gg, gw, None, xs, ONE, pads,
                        ONE, 1)
    np.testing.assert_allclose(down(dx), want, rtol=1e-4, atol=1e-4)


def test_weight_transform_matches_g_g_gt(gpu, down) -> None:
    rng = np.random.default_rng(3)
    w = rng.normal(size=(3, 2, 3, 3)).astype(np.float32)
    big_g = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], np.float32)
    gw = gpu.from_data(TensorData(w))
    u = down(conv_winograd.weights(gpu.kernels, gw, False)).reshape(4, 4, 3, 2)
    want = np.einsum("ai,kcij,bj->abkc", big_g, w, big_g)
    np.testing.assert_allclose(u, want, rtol=1e-6, atol=1e-6)
    flipped = down(conv_winograd.weights(gpu.kernels, gw, True)).reshape(4, 4, 2, 3)
    w_flip = w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
    np.testing.assert_allclose(flipped, np.einsum("ai,kcij,bj->abkc", big_g, w_flip, big_g),
                               rtol=1e-6, atol=1e-6)


def test_the_form_and_the_limits() -> None:
    assert conv_winograd.takes((8, 4, 3, 3), ONE, ((1, 1), (1, 1)), ONE, 1)
    for ws, stride, pads, dil, groups in (((8, 4, 3, 3), (2, 2), ((1, 1), (1, 1)), ONE, 1),
                                          ((8, 4, 5, 5), ONE, ((1, 1), (1, 1)), ONE, 1),
                                          ((8, 4, 3, 3), ONE, ((1, 1), (1, 1)), (2, 2), 1),
                                          ((8, 2, 3, 3), ONE, ((1, 1), (1, 1)), ONE, 2),
                                          ((8, 4, 3, 3), ONE, ((3, 3), (1, 1)), ONE, 1)):
        assert not conv_winograd.takes(ws, stride, pads, dil, groups)
    fire8 = ((16, 256, 14, 14), 64, (14, 14))  # the input gradient's conv: 256 onto 64
    assert conv_winograd.fits(*fire8, 65535, 1 << 27)
    assert not conv_winograd.fits(*fire8, 65535, 1 << 22)  # V: 16 x 256 x 784 floats
    assert not conv_winograd.fits(*fire8, 2048, 1 << 27)  # 16 x 256 planes
    assert not conv_winograd.fits((16, 64, 14, 14), 256, (14, 14), 65535, 1 << 22)  # M too


@pytest.mark.parametrize("op", ["forward", "input_grad"])
def test_other_geometry_is_refused_in_one_line(gpu, op) -> None:
    k = gpu.kernels
    a = k.empty((1, 4, 8, 8), DType.F32, "test")
    w = k.empty((4, 4, 3, 3), a.dtype, "test")
    out = k.empty((1, 4, 4, 4), a.dtype, "test")
    with pytest.raises(ValueError, match=r"^the winograd .* needs a 3x3 kernel, stride 1[^\n]*$"):
        conv.launch_variant(k, op, conv_winograd.NAME, out, a, w, None, (1, 4, 8, 8), (2, 2),
                            ((1, 1), (1, 1)), ONE, 1)



