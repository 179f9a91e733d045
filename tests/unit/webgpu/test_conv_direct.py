"""The direct conv kernel's blocks (`webgpu/conv_direct.py`): every block computes the conv the
numpy backend computes, forward (with bias, with fusion's epilogue) and the stride-1 input
gradient, on ragged shapes (channels past a block's end, rows past a pixel block's end,
groups, stride, dilation, padding); and the heuristic's choices."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import conv, conv_direct
from pyrite.webgpu.codegen import scalar_bits
from pyrite.webgpu.conv_direct import BLOCKS, PLAIN, Block, choose_block
from pyrite.webgpu.fused import INPUT, SCALAR, STEP, DenseEpilogue, Program, Step

CASES = [  # x shape, w shape, stride, padding pairs, dilation, groups
    ((2, 3, 7, 6), (5, 3, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # 5 channels: ragged
    ((2, 4, 7, 9), (6, 2, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),
    ((1, 4, 8, 11), (20, 4, 3, 3), (1, 1), ((1, 1), (2, 0)), (2, 1), 1),  # 16 + 4 channels
    ((2, 4, 9, 9), (4, 1, 3, 3), (2, 3), ((1, 0), (1, 1)), (1, 1), 4),  # depthwise
]


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_every_block_computes_the_conv(gpu, ref, down, block, xs, ws, stride, pads, dil,
                                       groups) -> None:
    rng = np.random.default_rng(0)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    args = (stride, pads, dil, groups)
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    k = gpu.kernels
    out = k.empty(want.shape, DType.F32, "test")
    conv._direct(k, out, _up(gpu, x), _up(gpu, w), _up(gpu, b), *args, block=block)
    np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block", [PLAIN, Block(8, 2), Block(16, 4)], ids=lambda b: b.name)
def test_a_block_stores_through_fusions_epilogue(gpu, ref, down, block) -> None:
    # relu(v * 2 - 0.5), the epilogue fusion hands the conv: each value stored once, through it
    rng = np.random.default_rng(1)
    xs, ws = (2, 3, 6, 7), (10, 3, 3, 3)
    x, w = (rng.normal(size=s).astype(np.float32) for s in (xs, ws))
    args = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, None, *args)).to_numpy()
    program = Program((Step("binary", "mul", DType.F32, ((INPUT, 0), (SCALAR, 0))),
                       Step("binary", "sub", DType.F32, ((STEP, 0), (SCALAR, 1))),
                       Step("unary", "relu", DType.F32, ((STEP, 1),))),
                      (DType.F32,), (DType.F32, DType.F32))
    words = [*want.shape, scalar_bits(2.0, DType.F32), scalar_bits(0.5, DType.F32)]
    epilogue = DenseEpilogue(program, 0, 2, 4, (), words)
    k = gpu.kernels
    out = k.empty(want.shape, DType.F32, "test")
    conv._direct(k, out, _up(gpu, x), _up(gpu, w), None, *args, epilogue, block)
    np.testing.assert_allclose(down(out), np.maximum(want * 2 - 0.5, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_every_block_computes_the_stride_one_input_gradient(gpu, ref, down, block) -> None:
    rng = np.random.default_rng(2)
    xs, ws = (2, 6, 9, 10), (12, 3, 3, 3)
    args = ((1, 1), ((1, 0), (2, 1)), (1, 1), 2)
    w = rng.normal(size=ws).astype(np.float32)
    out_shape = ref.to_data(ModuleOps.conv2d(ref, np.zeros(xs, np.float32), w, None,
                                             *args)).to_numpy().shape
    g = rng.normal(size=out_shape).astype(np.float32)
    k = gpu.kernels
    out = k.empty(xs, DType.F32, "test")
    conv._direct_input_grad(k, out, _up(gpu, g), _up(gpu, w), *args, block=block)
    np.testing.assert_allclose(down(out), ref.conv2d_input_grad(g, w, xs, *args),
                               rtol=1e-4, atol=1e-4)


def test_the_heuristic_on_the_mnist_convs_and_its_bounds() -> None:
    # the choices measured fastest (or within 3%) on the H100 (conv_direct_h100_s5.json)
    assert choose_block(256, 8, 1, 26, 26, 9, False).name == "8x2"
    assert choose_block(256, 16, 1, 24, 24, 72, False).name == "16x2"
    assert choose_block(64, 8, 1, 26, 26, 9, False).name == "8x1"
    assert choose_block(64, 8, 1, 26, 26, 144, False).name == "8x2"
    # a page's software adapter keeps the kernel it was measured with
    assert choose_block(256, 16, 1, 24, 24, 72, True) is PLAIN
    # few invocations: the plain kernel; never more channels than a group has, nor pixels
    # than a row
    assert choose_block(1, 16, 1, 4, 4, 72, False) is PLAIN
    assert choose_block(512, 32, 8, 30, 1, 9, False).channels == 4
    assert choose_block(512, 32, 8, 30, 1, 9, False).pixels == 1
    for block in conv_direct.candidates(8, 6, 1, 5, 1):
        assert block.channels <= 8 and block.pixels == 1
    assert Block.parse("16x2") == Block(16, 2)
