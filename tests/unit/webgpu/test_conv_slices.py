"""The implicit-GEMM conv with K split inside the workgroup (`webgpu/conv_slices.py`): each form
agrees with numpy on the forward (with bias), the flipped stride-1 input gradient and the
strided gather, on ragged shapes (M, N and K not whole tiles, K steps not a multiple of the
slices), whole tiles (the INTERIOR form), strides, groups, dilation and asymmetric padding, with
the geometry baked and read at run time; Fusion's epilogue goes into its store; the rule picks it
natively on a GPU only; bad names are refused in one line."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pyrite
from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.webgpu import conv, conv_gemm, conv_plan, conv_slices

CASES = [  # x shape, w shape, stride, padding pairs, dilation, groups
    ((2, 6, 7, 9), (20, 6, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # ragged M, N and K
    ((1, 16, 8, 8), (64, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),  # whole tiles, 9 steps
    ((2, 6, 11, 10), (8, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),  # strided, grouped
    ((1, 64, 4, 4), (32, 64, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # 1x1, 4 K steps
]
FORMS = ("slices/64x64s2", "slices/32x64s4", "slices/16x32s2")


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_every_form_agrees_with_numpy(gpu, ref, down, xs, ws, stride, pads, dil,
                                      groups) -> None:
    rng = np.random.default_rng(5)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    args = (stride, pads, dil, groups)
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    g = rng.normal(size=want.shape).astype(np.float32)
    want_dx = ref.conv2d_input_grad(g, w, xs, *args)
    k = gpu.kernels
    gx, gw, gb, gg = (_up(gpu, a) for a in (x, w, b, g))
    for name in FORMS:
        form = conv_slices.Form.parse(name)
        for constant in (True, False):
            label = f"{name} constant={constant}"
            out = k.empty(want.shape, gx.dtype, "test")
            conv_slices.run(k, form, out, gx, gw, gb, xs, *args, conv_gemm.FORWARD,
                            constant=constant)
            np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4, err_msg=label)
            for gather in (False, True):
                out = k.empty(xs, gx.dtype, "test")
                conv_slices.run(k, form, out, gg, gw, None, xs, *args, conv_gemm.INPUT_GRAD,
                                gather=gather, constant=constant)
                np.testing.assert_allclose(down(out), want_dx, rtol=1e-4, atol=1e-4,
                                           err_msg=f"{label} gather={gather}")


def test_launch_variant_runs_the_forms(gpu, ref, down) -> None:
    rng = np.random.default_rng(6)
    xs, ws = (2, 12, 6, 6), (40, 12, 3, 3)
    args = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, b, *args)).to_numpy()
    g = rng.normal(size=want.shape).astype(np.float32)
    want_dx = ref.conv2d_input_grad(g, w, xs, *args)
    k = gpu.kernels
    gx, gw, gb, gg = (_up(gpu, a) for a in (x, w, b, g))
    out = k.empty(want.shape, gx.dtype, "test")
    conv.launch_variant(k, "forward", "slices/32x32s4", out, gx, gw, gb, xs, *args)
    np.testing.assert_allclose(down(out), want, rtol=1e-4, atol=1e-4)
    out = k.empty(xs, gx.dtype, "test")
    conv.launch_variant(k, "input_grad", "slices/32x32s4", out, gg, gw, None, xs, *args)
    np.testing.assert_allclose(down(out), want_dx, rtol=1e-4, atol=1e-4)


def _force(monkeypatch, form: str) -> None:  # type: ignore[no-untyped-def]
    """Every forward and input gradient on `form` (the rule, with a fresh cache)."""
    monkeypatch.setattr(conv_slices, "applies", lambda k: True)
    monkeypatch.setattr(conv_slices, "choose", lambda *args, **kw: conv_slices.Form.parse(form))
    monkeypatch.setattr(conv, "_heuristic", functools.lru_cache(conv._heuristic.__wrapped__))
    conv_plan.clear()


def test_sliced_conv_takes_fusions_epilogue(monkeypatch) -> None:
    # relu(conv(x) * 0.5 + residual): one kernel, the sliced GEMM's store applies the rest
    _force(monkeypatch, "slices/32x64s2")
    from pyrite.activation import relu
    from pyrite.nn import functional as F
    from pyrite.webgpu.fusion import inspect
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 40, 9, 7)).astype(np.float32)  # K = 360: 23 steps, odd
    w = rng.normal(size=(48, 40, 3, 3)).astype(np.float32)
    b = rng.normal(size=(48,)).astype(np.float32)
    r = rng.normal(size=(2, 48, 9, 7)).astype(np.float32)
    want = relu(F.conv2d(*(pyrite.tensor(a) for a in (x, w, b)), padding=1) * 0.5
                + pyrite.tensor(r)).numpy()
    try:
        dev = pyrite.device("fusion<webgpu>")
    except pyrite.errors.BackendUnavailable as exc:
        pytest.skip(str(exc))
    tx, tw, tb, tr = (pyrite.tensor(a, device=dev) for a in (x, w, b, r))
    dev.sync()
    with inspect() as seen:
        got = relu(F.conv2d(tx, tw, tb, padding=1) * 0.5 + tr).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert [g["kind"] for g in seen.groups] == ["conv2d+epilogue"]
    assert "conv2d_gemm_slices" in {key.kernel for key, _ in dev.inner.kernels._sources}


def test_input_gradient_takes_the_activation_mask_as_epilogue(monkeypatch) -> None:
    # d/dx of sum(conv2(relu(conv1(x)))): conv2's input gradient and relu's mask in one kernel
    _force(monkeypatch, "slices/16x32s4")
    from pyrite.activation import relu
    from pyrite.nn import functional as F
    from pyrite.webgpu.fusion import inspect
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 36, 7, 6)).astype(np.float32)
    w1 = rng.normal(size=(40, 36, 3, 3)).astype(np.float32)
    w2 = rng.normal(size=(36, 40, 3, 3)).astype(np.float32)
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
            grads[name] = tx.grad(got).numpy()
        if name != "autodiff<numpy>":
            kinds = [g["kind"] for g in seen.groups]
            assert "conv2d_input_grad+epilogue" in kinds, kinds
    np.testing.assert_allclose(grads["autodiff<fusion<webgpu>>"], grads["autodiff<numpy>"],
                               rtol=1e-4, atol=1e-3)


def test_the_rule_follows_the_measured_layers_natively_on_a_gpu_only(gpu) -> None:
    fwd, dgrad = "conv2d_kernel", "conv2d_input_grad_kernel"
    h = conv._heuristic.__wrapped__
    # SqueezeNet's fire9 squeeze forward (64 x 3136, K 512, 1x1): sliced where it may run
    assert h(fwd, 64, 3136, 512, 1, 1, 49152, False, True, True, 65535,
             1024) == conv_slices.FORWARD_1X1.name
    # not where it may not (a page, lavapipe: `sliced` 0), nor where it does not fit (16 KiB,
    # 256 threads)
    assert h(fwd, 64, 3136, 512, 1, 1, 49152, False, True, True, 65535, 0) != \
        conv_slices.FORWARD_1X1.name
    assert not h(fwd, 64, 3136, 512, 1, 1, 16384, False, True, True, 65535,
                 256).startswith(conv_slices.PREFIX)
    # fire6-8's squeezes (48-64 x 3136, K 256-384) too
    for m, kdim in ((48, 256), (48, 384), (64, 384)):
        assert h(fwd, m, 3136, kdim, 1, 1, 49152, False, True, True, 65535,
                 1024) == conv_slices.FORWARD_1X1.name
    # nor where it lost on the H100: fire5's squeeze (32 x 12544), the 3x3 forwards and
    # gradients, a layer of many tiles (conv10), a short K (fire4's squeeze, 128)
    for family, m, n, kdim, taps in ((fwd, 32, 12544, 256, 1), (fwd, 256, 3136, 576, 9),
                                     (dgrad, 64, 3136, 2304, 9), (fwd, 1000, 3136, 512, 1),
                                     (fwd, 48, 3136, 128, 1)):
        assert not h(family, m, n, kdim, 1, taps, 49152, False, taps == 1, True, 65535,
                     1024).startswith(conv_slices.PREFIX)
    assert not conv_slices.applies(gpu.kernels)  # this machine's adapter is a CPU (lavapipe)


def test_bad_forms_are_refused_in_one_line() -> None:
    for name in ("slices/64x64", "slices/48x64s2", "slices/64x64s3", "slices/axbs2"):
        with pytest.raises(ValueError, match="slices/64x64s2") as err:
            conv_slices.Form.parse(name)
        assert "\n" not in str(err.value)
    assert conv_slices.fits(conv_slices.Form(32, 64, 2), 16384, 256) is False  # 24 KiB
    assert conv_slices.fits(conv_slices.Form(32, 32, 2), 16384, 256) is True
