"""The strided input gradient with its weights staged in workgroup memory
(`webgpu/conv_strided_grad.py`): it agrees with numpy and with the plain gather on a first
layer's 3 channels at stride 2, ragged planes, dilation, asymmetric padding, groups and more
than 4 channels per group; the rule takes it natively on a GPU only."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.webgpu import conv, conv_strided_grad

CASES = [  # x shape, w shape, stride, padding pairs, dilation, groups
    ((2, 3, 15, 13), (16, 3, 3, 3), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),  # a first layer
    ((1, 6, 11, 10), (8, 3, 3, 2), (2, 3), ((1, 2), (0, 1)), (2, 1), 2),  # groups, dilation
    ((2, 9, 7, 8), (5, 9, 3, 3), (3, 2), ((1, 1), (2, 0)), (1, 1), 1),  # 9 channels: 3 blocks
    ((1, 4, 6, 6), (4, 4, 1, 1), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # stride 1, padded past
]


pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_staged_and_plain_gathers_agree_with_numpy(gpu, ref, down, xs, ws, stride, pads, dil,
                                                   groups) -> None:
    rng = np.random.default_rng(7)
    x, w = (rng.normal(size=s).astype(np.float32) for s in (xs, ws))
    args = (stride, pads, dil, groups)
    y = ref.to_data(ModuleOps.conv2d(ref, x, w, None, *args)).to_numpy()
    g = rng.normal(size=y.shape).astype(np.float32)
    want = ref.conv2d_input_grad(g, w, xs, *args)
    k = gpu.kernels
    gw, gg = (gpu.from_data(TensorData(a)) for a in (w, g))
    for name in (conv_strided_grad.NAME, "direct/gather", "direct"):
        out = k.empty(xs, gg.dtype, "test")
        conv.launch_variant(k, "input_grad", name, out, gg, gw, None, xs, *args)
        np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4, err_msg=name)


def test_the_rule_stages_natively_on_a_gpu_only(gpu) -> None:
    k = gpu.kernels
    first = ((16, 3, 227, 227), (64, 3, 3, 3), (2, 2), 1)  # SqueezeNet's conv1
    assert conv_strided_grad.fits(*first, 49152, 65535)
    assert not conv_strided_grad.fits(*first, 8192, 65535)  # 9 KiB of weights
    assert not conv_strided_grad.applies(k, *first)  # this machine's adapter is a CPU
