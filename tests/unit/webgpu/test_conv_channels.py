"""The channel-block conv kernel (`webgpu/conv_channels.py`, `shaders/conv2d_channels.wgsl`):
each block and slice count against numpy on ragged, strided, padded, dilated and grouped convs
and on weight views, the forward and the stride-1 input gradient; Fusion's epilogue on it,
unsliced (in the kernel) and sliced (in the slices' sum); the heuristic's rule; bad names."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.activation import relu
from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.nn import functional as F
from pyrite.webgpu import conv, conv_channels, conv_plan
from pyrite.webgpu.conv_channels import Form

PAD1 = ((1, 1), (1, 1))
NO_PAD = ((0, 0), (0, 0))
CASES = [  # x shape, w shape, stride, padding, dilation, groups
    ((2, 24, 7, 9), (10, 24, 1, 1), (1, 1), NO_PAD, (1, 1), 1),  # 1x1, ragged channels
    ((1, 40, 5, 6), (12, 40, 3, 3), (1, 1), PAD1, (1, 1), 1),  # 3x3, 40 input channels
    ((2, 12, 8, 6), (20, 6, 3, 3), (2, 1), ((1, 0), (2, 1)), (1, 2), 2),  # stride, groups
    ((1, 9, 9, 8), (7, 9, 3, 2), (1, 1), ((2, 2), (1, 1)), (2, 1), 1),  # dilation: 5x9 taps
]
FORMS = ["channels/4", "channels/8s2", "channels/16s3", "channels/12s64", "channels/64"]


pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


def _up(gpu: Any, a: np.ndarray) -> Any:
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_each_form_agrees_with_numpy(gpu, ref, down, xs, ws, stride, pads, dil,
                                     groups) -> None:
    args = (stride, pads, dil, groups)
    r = np.random.default_rng(7)
    x, w, b = (r.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    y = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    g = r.normal(size=y.shape).astype(np.float32)
    dx = np.asarray(ref.to_data(ref.conv2d_input_grad(g, w, xs, *args)).to_numpy())
    k = gpu.kernels
    gx, gw, gb, gg = (_up(gpu, a) for a in (x, w, b, g))
    # the weight as a view (its transpose, permuted back): read through its strides in place
    w_view = _up(gpu, np.ascontiguousarray(w.transpose(1, 0, 3, 2))).permuted((1, 0, 3, 2))
    for name in FORMS:
        for weight in (gw, w_view):
            out = k.empty(y.shape, DType.F32, "test")
            conv.launch_variant(k, "forward", name, out, gx, weight, gb, xs, *args)
            np.testing.assert_allclose(down(out), y, rtol=1e-4, atol=1e-4, err_msg=name)
        if stride == (1, 1):  # the input gradient as the forward conv of dy, flipped weight
            out = k.empty(xs, DType.F32, "test")
            conv.launch_variant(k, "input_grad", name, out, gg, gw, None, xs, *args)
            np.testing.assert_allclose(down(out), dx, rtol=1e-4, atol=1e-4, err_msg=name)


def test_a_strided_input_gradient_is_refused_in_one_line(gpu) -> None:
    k = gpu.kernels
    dy = k.empty((1, 2, 3, 3), DType.F32, "test")
    w = k.empty((2, 2, 3, 3), DType.F32, "test")
    dx = k.empty((1, 2, 7, 7), DType.F32, "test")
    with pytest.raises(ValueError, match="needs stride 1"):
        conv.launch_variant(k, "input_grad", "channels/8", dx, dy, w, None, dx.shape, (2, 2),
                            NO_PAD, (1, 1), 1)


@pytest.mark.parametrize("name", ["channels/6", "channels/x", "channels/8s0", "channels/0",
                                  "channels/8sx"])
def test_a_bad_form_name_is_refused_in_one_line(name: str) -> None:
    with pytest.raises(ValueError, match="bad conv channel-block variant") as info:
        Form.parse(name)
    assert "\n" not in str(info.value)


def test_forms_name_themselves() -> None:
    assert Form.parse("channels/16s4") == Form(16, 4) and Form(16, 4).name == "channels/16s4"
    assert Form.parse("channels/8") == Form(8) and Form(8).name == "channels/8"


@pytest.mark.parametrize("xs, ws, form", [
    ((2, 40, 8, 8), (16, 40, 1, 1), Form(16)),  # a 1x1 squeeze: the epilogue in the kernel
    ((1, 64, 4, 4), (8, 64, 3, 3), Form(8, 2)),  # few pixels, 576 terms: in the slices' sum
])
def test_fusions_epilogue_runs_on_the_kernel(monkeypatch: pytest.MonkeyPatch, xs, ws,
                                             form: Form) -> None:
    from pyrite.webgpu.fusion import inspect

    rng = np.random.default_rng(2)
    pad = 1 if ws[2] == 3 else 0
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    r = rng.normal(size=(xs[0], ws[0], xs[2], xs[3])).astype(np.float32)
    ref = pyrite.device("numpy")
    want = relu(F.conv2d(*(pyrite.tensor(a, device=ref) for a in (x, w, b)), padding=pad) * 0.5
                + pyrite.tensor(r, device=ref)).numpy()
    try:
        dev = pyrite.device("fusion<webgpu>")
    except pyrite.errors.BackendUnavailable as exc:
        pytest.skip(str(exc))
    k = dev.inner.kernels
    from pyrite.webgpu import software
    if software.software(k.runtime.adapter):
        pytest.skip("a page's software adapter keeps the other kernels")
    tx, tw, tb, tr = (pyrite.tensor(a, device=dev) for a in (x, w, b, r))
    dev.sync()
    seen: list[Any] = []
    cached = k.cached

    def spy(key: Any, entry_point: str = "main") -> Any:
        seen.append(key.kernel)
        return cached(key, entry_point)
    monkeypatch.setattr(k, "cached", spy)
    with inspect() as groups:
        got = relu(F.conv2d(tx, tw, tb, padding=pad) * 0.5 + tr).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert [g["kind"] for g in groups.groups] == ["conv2d+epilogue"]
    assert "conv2d_channels" in seen and "conv2d_gemm" not in seen, seen
    assert ("matmul_split_sum" in seen) == (form.slices > 1), seen


def test_the_rule() -> None:
    choose = conv_channels.choose
    # SqueezeNet at batch 16: fire2's squeeze (64 -> 16 on 56x56), fire9's (512 -> 64 on 14x14)
    assert choose(16, 64, 1, 16 * 56 * 56, 1, 16384) == Form(16)
    assert choose(64, 512, 1, 16 * 14 * 14, 1, 16384) == Form(8)
    # a 14x14 3x3 input gradient of 16 channels (the flipped forward: 256 -> 16): 4 slices
    assert choose(16, 256, 9, 16 * 14 * 14, 1, 16384, gradient=True) == Form(8, 4)
    # of 32-64 channels (fire4-9's): the GEMM's since session 8 (MAX_OUT_TAPS_GRAD)
    assert choose(64, 256, 9, 16 * 14 * 14, 1, 16384, gradient=True) is None
    assert choose(32, 128, 9, 16 * 28 * 28, 1, 16384, gradient=True) is None
    # a 56x56 one (128 -> 16): the pixels fill the GPU, no slices
    assert choose(16, 64, 9, 16 * 56 * 56, 1, 16384, gradient=True) == Form(16)
    assert choose(65, 64, 1, 50000, 1, 16384) is None  # too many output channels
    assert choose(64, 64, 9, 50000, 1, 16384) is None  # a 3x3 forward of 64: the GEMM's
    assert choose(16, 64, 25, 50000, 1, 16384) is None  # 5x5: more taps than MAX_TAPS
    assert choose(1, 8, 9, 50000, 1, 16384, gradient=True) is None  # one channel out
    assert choose(16, 64, 9, 50000, 1, 16 * 9 * 4 - 4) is None  # its staged weights don't fit


def test_a_software_adapter_keeps_the_other_kernels() -> None:
    for soft in (False, True):
        name = conv._heuristic("conv2d_kernel", 16, 16 * 56 * 56, 64, 1, 1, 16384, soft, True,
                               True)
        assert name.startswith(conv_channels.PREFIX) != soft, name


def test_a_sliced_input_gradient_replays_its_plan(gpu, ref, down) -> None:
    # few pixels over 576 terms: the rule's form has slices (a temporary and the sum); the
    # second call records the plan and the third replays it, each with new values
    xs, ws, args = (1, 16, 4, 4), (64, 16, 3, 3), ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    name = conv.heuristic_variant(gpu.kernels, "input_grad", xs, ws, *args)
    assert name.startswith(conv_channels.PREFIX) and Form.parse(name).slices > 1, name
    for seed in range(3):
        r = np.random.default_rng(seed)
        w = r.normal(size=ws).astype(np.float32)
        g = r.normal(size=(1, 64, 4, 4)).astype(np.float32)
        want = np.asarray(ref.to_data(ref.conv2d_input_grad(g, w, xs, *args)).to_numpy())
        got = down(gpu.conv2d_input_grad(_up(gpu, g), _up(gpu, w), xs, *args))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    (plan,) = conv_plan._PLANS[gpu.kernels].values()
    assert isinstance(plan, conv_plan.Plan) and len(plan.steps) == 2  # the kernel, the sum
