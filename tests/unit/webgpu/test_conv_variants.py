"""Conv variants launched by name (`conv.launch_variant`, `conv.heuristic_variant`): what
benchmarks/conv_layers.py times, each against numpy on strided, grouped, dilated and padded
convs; an unknown name is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import conv, conv_gemm

CASES = [  # x shape, w shape, stride, padding, dilation, groups
    ((2, 8, 9, 7), (12, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 3, 11, 10), (20, 3, 3, 3), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    ((1, 6, 9, 9), (10, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),
]
NAMES = {"forward": ["direct", "direct/8x2", f"gemm/{conv_gemm.WIDE}", "channels/8",
                     "channels/4s2"],
         "input_grad": ["direct", f"gemm/{conv_gemm.NARROW}", "channels/8", "channels/4s3"],
         "weight_grad": ["direct", "direct/s128", "direct/s3", f"gemm/{conv_gemm.FALLBACK}",
                         "wgrad/32x32", "wgrad/64x16/l32"]}


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_each_variant_agrees_with_numpy(gpu, ref, down, xs, ws, stride, pads, dil,
                                        groups) -> None:
    args = (stride, pads, dil, groups)
    r = np.random.default_rng(3)
    x, w, b = (r.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    y = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    g = r.normal(size=y.shape).astype(np.float32)
    want = {"forward": y, "input_grad": ref.conv2d_input_grad(g, w, xs, *args),
            "weight_grad": ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args)}
    gx, gw, gb, gg = (_up(gpu, a) for a in (x, w, b, g))
    operands = {"forward": (gx, gw, gb), "input_grad": (gg, gw, None),
                "weight_grad": (gx, gg, None)}
    k = gpu.kernels
    for op in conv.OPS:
        assert conv.heuristic_variant(k, op, xs, ws, *args).split("/")[0] in (
            "direct", "gemm", "channels", "wgrad")
        expected = np.asarray(ref.to_data(want[op]).to_numpy() if not isinstance(
            want[op], np.ndarray) else want[op])
        for name in NAMES[op]:
            if name == "direct/8x2" and groups > 1:
                continue
            out = k.empty(expected.shape, DType.F32, "test")
            if op == "input_grad" and name.startswith("channels") and stride != (1, 1):
                # the strided input gradient is no forward conv: refused in one line
                with pytest.raises(ValueError, match="needs stride 1"):
                    conv.launch_variant(k, op, name, out, *operands[op], xs, *args)
                continue
            conv.launch_variant(k, op, name, out, *operands[op], xs, *args)
            np.testing.assert_allclose(down(out), expected, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{op} {name}")


def test_an_unknown_variant_is_refused_by_name(gpu) -> None:
    k = gpu.kernels
    x = k.empty((1, 2, 4, 4), DType.F32, "test")
    w = k.empty((2, 2, 3, 3), DType.F32, "test")
    out = k.empty((1, 2, 2, 2), DType.F32, "test")
    with pytest.raises(ValueError, match="unknown conv variant 'fast'"):
        conv.launch_variant(k, "forward", "fast", out, x, w, None, x.shape, (1, 1),
                            ((0, 0), (0, 0)), (1, 1), 1)
