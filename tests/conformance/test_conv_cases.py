"""conv2d and its gradients (a backend's overrides, numpy's per-sample GEMMs among them) against
the composites of `module_ops.py`: odd sizes, groups, dilation, stride and asymmetric padding,
non-contiguous inputs, 1x1 convolutions with few and many pixels, depthwise, one sample."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.module_ops import ModuleOps

CASES = {  # x, w, stride, padding pairs, dilation, groups
    "odd sizes, stride, asymmetric padding": ((3, 5, 11, 7), (4, 5, 3, 2), (2, 3),
                                              ((2, 0), (1, 1)), (1, 1), 1),
    "groups and dilation": ((2, 6, 9, 10), (9, 2, 3, 3), (1, 2), ((1, 1), (2, 1)), (2, 3), 3),
    "1x1 (few pixels)": ((4, 6, 5, 3), (8, 6, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    "1x1 (many pixels)": ((2, 3, 40, 30), (5, 3, 1, 1), (1, 1), ((0, 0), (0, 0)),
                                     (1, 1), 1),
    "1x1 grouped": ((3, 4, 33, 32), (6, 2, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 2),
    "1x1 with stride": ((2, 3, 9, 8), (4, 3, 1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    "depthwise": ((2, 12, 8, 8), (12, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 12),
    "one sample": ((1, 3, 6, 5), (2, 3, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), 1),
    "5x5 (taps past one chunk)": ((2, 3, 12, 11), (4, 3, 5, 5), (1, 1), ((2, 2), (2, 1)),
                                  (1, 1), 1),
    # weight gradients of 1024 or more weights per group: the tiled weight-gradient kernel on a
    # page's software adapter too (ragged 40 x 108, 16 x 108 and, grouped, 16 x 108 with a
    # dilation and 40 x 108)
    "many weights": ((2, 12, 10, 9), (40, 12, 3, 3), (1, 1), ((1, 0), (1, 1)), (1, 1), 1),
    "many weights, 16 rows": ((2, 12, 10, 9), (16, 12, 3, 3), (1, 1), ((1, 0), (1, 1)),
                              (1, 1), 1),
    "many weights, grouped": ((2, 24, 9, 8), (32, 12, 3, 3), (2, 1), ((1, 1), (0, 1)),
                              (1, 2), 2),
    "many weights, 2 groups of 40": ((2, 24, 10, 9), (80, 12, 3, 3), (1, 1), ((1, 0), (1, 1)),
                                     (1, 1), 2),
}


def _np(backend: pyrite.Backend, prim: object) -> np.ndarray:
    return np.asarray(backend.to_data(prim).to_numpy(), dtype=np.float64)


def _inputs(backend: pyrite.Backend, xs, ws, *, views: bool, rng=None):
    """x, w and bias drawn from `rng` (seed 5 by default) as tensors, and x as drawn."""
    rng = np.random.default_rng(5) if rng is None else rng
    x, w, b = rng.normal(size=xs), rng.normal(size=ws), rng.normal(size=ws[0])
    if views:  # x a channel slice of a transposed tensor, w a permuted view
        big = np.concatenate([x, x], axis=1).transpose(0, 1, 3, 2)
        xt = pyrite.tensor(np.ascontiguousarray(big).astype(np.float32),
                           device=backend).swap_dims(2, 3).narrow(1, xs[1], xs[1])
        wt = pyrite.tensor(np.ascontiguousarray(w.transpose(3, 2, 1, 0)).astype(np.float32),
                           device=backend).permute([3, 2, 1, 0])
    else:
        xt = pyrite.tensor(x.astype(np.float32), device=backend)
        wt = pyrite.tensor(w.astype(np.float32), device=backend)
    return xt, wt, pyrite.tensor(b.astype(np.float32), device=backend), x


def _check(backend: pyrite.Backend, xs, ws, stride, pads, dil, groups, *, views: bool) -> None:
    rng = np.random.default_rng(3)
    xt, wt, bt, _ = _inputs(backend, xs, ws, views=views, rng=rng)
    px, pw, pb = xt.into_primitive(), wt.into_primitive(), bt.into_primitive()
    args = (stride, pads, dil, groups)
    out, saved = backend.conv2d_saving(px, pw, pb, *args)
    want = ModuleOps.conv2d(backend, px, pw, pb, *args)
    np.testing.assert_allclose(_np(backend, out), _np(backend, want), rtol=1e-4, atol=1e-4)
    g = pyrite.tensor(rng.normal(size=backend.shape(out)).astype(np.float32),
                      device=backend).into_primitive()
    np.testing.assert_allclose(
        _np(backend, backend.conv2d_input_grad(g, pw, xs, *args)),
        _np(backend, ModuleOps.conv2d_input_grad(backend, g, pw, xs, *args)),
        rtol=1e-4, atol=1e-4)
    want_w = _np(backend, ModuleOps.conv2d_weight_grad(backend, px, g, ws, *args))
    for kept in (saved, None):  # with the forward's columns and rebuilding them
        np.testing.assert_allclose(
            _np(backend, backend.conv2d_weight_grad(px, g, ws, *args, kept)), want_w,
            rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", CASES)
def test_conv2d_and_gradients(backend, case) -> None:
    _check(backend, *CASES[case], views=False)


@pytest.mark.parametrize("case", ["odd sizes, stride, asymmetric padding", "groups and dilation",
                                  "1x1 (few pixels)", "1x1 (many pixels)"])
def test_conv2d_and_gradients_of_views(backend, case) -> None:
    _check(backend, *CASES[case], views=True)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_relu_is_relu_of_the_composite(backend, case, bias) -> None:
    """The inference forward (numpy: per sample, bias and ReLU in place) and the fused op."""
    xs, ws, stride, pads, dil, groups = CASES[case]
    for views in (False, True):
        xt, wt, bt, x = _inputs(backend, xs, ws, views=views)
        before = xt.to_data().to_numpy().copy()
        px, pw = xt.into_primitive(), wt.into_primitive()
        pb = bt.into_primitive() if bias else None
        args = (stride, pads, dil, groups)
        want = _np(backend, ModuleOps.conv2d(backend, px, pw, pb, *args))
        np.testing.assert_allclose(_np(backend, backend.conv2d(px, pw, pb, *args)), want,
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(_np(backend, backend.conv2d_relu(px, pw, pb, *args)),
                                   np.maximum(want, 0), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(xt.to_data().to_numpy(), before)  # input untouched


def test_conv2d_activation_through_the_front_end_and_its_gradient(ad_backend) -> None:
    """F.conv2d(activation="relu") and nn.Conv2d(x, activation="relu") equal relu(conv2d);
    on Autodiff the fused op's gradient is the composition's."""
    from pyrite import activation
    from pyrite.nn import Conv2dConfig
    from pyrite.nn import functional as F

    rng = np.random.default_rng(1)
    conv = Conv2dConfig(3, 4, (3, 2), stride=(2, 1), padding=(1, 0)).init(ad_backend)
    x = pyrite.tensor(rng.normal(size=(2, 3, 7, 6)).astype(np.float32), device=ad_backend)
    fused = conv(x, activation="relu")
    plain = activation.relu(conv(x))
    np.testing.assert_allclose(fused.to_data().to_numpy(), plain.to_data().to_numpy(),
                               rtol=1e-5, atol=1e-5)
    g1, g2 = fused.sum().backward(), plain.sum().backward()
    w = conv.weight.val
    np.testing.assert_allclose(w.grad(g1).to_data().to_numpy(),
                               w.grad(g2).to_data().to_numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="activation must be None or 'relu'"):
        F.conv2d(x, w, activation="gelu")


@pytest.mark.parametrize("batch", [5, 2, 1])
@pytest.mark.parametrize("case", ["odd sizes, stride, asymmetric padding", "groups and dilation",
                                  "1x1 grouped", "1x1 (many pixels)", "depthwise"])
def test_the_sample_pool_gives_the_serial_results(case, batch) -> None:
    """With a budget of 3 threads: 5 samples go to 3 workers; 2 samples or 1 have their output
    rows split into bands (2 or 3 per sample). Forward, fused ReLU, training forward and input
    gradient equal the one-thread results."""
    from pyrite.backend import blas_threads, sample_pool

    pytest.importorskip("numpy")
    if blas_threads.blas_switch() is None:
        pytest.skip("no way to change BLAS's threads here: the pool is off")
    backend = pyrite.device("numpy")
    xs, ws, stride, pads, dil, groups = CASES[case]
    xs = (batch, *xs[1:])
    xt, wt, bt, _ = _inputs(backend, xs, ws, views=False)
    px, pw, pb = xt.into_primitive(), wt.into_primitive(), bt.into_primitive()
    args = (stride, pads, dil, groups)

    def results() -> list[np.ndarray]:
        out, _ = backend.conv2d_saving(px, pw, pb, *args)
        g = np.ones(out.shape, dtype=np.float32)
        return [backend.conv2d(px, pw, pb, *args), backend.conv2d_relu(px, pw, pb, *args),
                out, backend.conv2d_input_grad(g, pw, xs, *args)]

    old = blas_threads.budget()
    try:
        blas_threads.set_blas_threads(1)
        assert sample_pool.workers(batch * 8) == 1
        serial = results()
        blas_threads.set_blas_threads(3)
        assert sample_pool.workers(batch * 8) == 3
        pooled = results()
    finally:
        blas_threads.set_blas_threads(old)
        sample_pool.shutdown()  # no idle threads left for a later test's fork
    for a, b in zip(serial, pooled, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_numpy_keeps_the_training_forwards_columns() -> None:
    """Autodiff's conv2d rule hands numpy's im2col back to the weight gradient: the training
    forward must return it (else every weight gradient builds it again)."""
    backend = pyrite.device("numpy")
    xt, wt, bt, _ = _inputs(backend, (2, 3, 6, 5), (4, 3, 3, 3), views=False)
    out, saved = backend.conv2d_saving(xt.into_primitive(), wt.into_primitive(),
                                       bt.into_primitive(), (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    assert saved is not None and saved.shape == (2, 1, 27, 30)


# conv_channels.py's kernel (`shaders/conv2d_channels.wgsl`), each form launched by name: a
# page's software adapter never picks it, so this runs it there by hand, the same code as
# natively (the page awaits its readbacks and has no numpy), against a plain-Python conv.
CHANNEL_FORMS_CHECK = """
import array
import random

import pyrite
from pyrite import Tensor
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import conv

CASES = [  # x, w, stride, padding, dilation, groups
    ((2, 24, 7, 9), (10, 24, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((1, 40, 5, 6), (12, 40, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 12, 8, 7), (20, 6, 3, 2), (1, 1), ((2, 1), (0, 1)), (2, 1), 2),
    ((2, 5, 11, 10), (6, 5, 3, 3), (2, 3), ((1, 0), (1, 1)), (1, 1), 1),
]
FORMS = ["channels/4", "channels/8s2", "channels/16s3"]


def out_shape(xs, ws, stride, pads, dil):
    return (xs[0], ws[0], *((xs[2 + d] + sum(pads[d]) - dil[d] * (ws[2 + d] - 1) - 1)
                            // stride[d] + 1 for d in (0, 1)))


def taps(xs, ws, stride, pads, dil, groups):
    # (output index, input index, weight index) of every product of the conv, flat NCHW
    n, c, h, w = xs
    co, cg, kh, kw = ws
    _, _, oh, ow = out_shape(xs, ws, stride, pads, dil)
    cog = co // groups
    for b in range(n):
        for o in range(co):
            g = o // cog
            for oy in range(oh):
                for ox in range(ow):
                    out = ((b * co + o) * oh + oy) * ow + ox
                    for ci in range(cg):
                        for ky in range(kh):
                            iy = oy * stride[0] - pads[0][0] + ky * dil[0]
                            if iy < 0 or iy >= h:
                                continue
                            for kx in range(kw):
                                ix = ox * stride[1] - pads[1][0] + kx * dil[1]
                                if 0 <= ix < w:
                                    yield (out, ((b * c + g * cg + ci) * h + iy) * w + ix,
                                           ((o * cg + ci) * kh + ky) * kw + kx)


async def check():
    dev = pyrite.device("webgpu")
    raw = getattr(dev, "inner", dev)
    k = raw.kernels
    rnd = random.Random(4)
    errors = []

    def up(values, shape):
        return raw.from_data(TensorData(values, shape, "float32"))

    async def down(t):
        data = await Tensor.from_primitive(t, raw).to_data_async()
        return array.array("f", data.bytes).tolist()

    for xs, ws, stride, pads, dil, groups in CASES:
        x, w, b = ([rnd.uniform(-1, 1) for _ in range(sz)]
                   for sz in (xs[0] * xs[1] * xs[2] * xs[3], ws[0] * ws[1] * ws[2] * ws[3],
                              ws[0]))
        ys = out_shape(xs, ws, stride, pads, dil)
        plane = ys[2] * ys[3]
        y = [b[(i // plane) % ws[0]] for i in range(ys[0] * ys[1] * plane)]
        products = list(taps(xs, ws, stride, pads, dil, groups))
        for o, i, j in products:
            y[o] += x[i] * w[j]
        dy = [rnd.uniform(-1, 1) for _ in range(len(y))]
        dx = [0.0] * len(x)
        for o, i, j in products:
            dx[i] += dy[o] * w[j]
        args = (stride, pads, dil, groups)
        for name in FORMS:
            out = k.empty(ys, DType.F32, "test")
            conv.launch_variant(k, "forward", name, out, up(x, xs), up(w, ws), up(b, ws[:1]),
                                xs, *args)
            got = await down(out)
            errors.append([name, "forward", max(abs(p - q) for p, q in zip(got, y))])
            if stride == (1, 1):
                grad = k.empty(xs, DType.F32, "test")
                conv.launch_variant(k, "input_grad", name, grad, up(dy, ys), up(w, ws), None,
                                    xs, *args)
                got = await down(grad)
                errors.append([name, "input_grad", max(abs(p - q) for p, q in zip(got, dx))])
    return errors
"""


def test_channel_block_kernel_forms(backend) -> None:
    """Each form of the channel-block kernel against numpy: natively on the webgpu backends, and
    in the page (`page-webgpu`), where it runs as the page's checked module."""
    if type(backend).__name__ == "PageBackend":
        evaluate = backend.channel.evaluate  # type: ignore[attr-defined]
        errors = evaluate("(code) => window.pyriteModule.run(code)",
                          CHANNEL_FORMS_CHECK + "\nawait check()")
    elif hasattr(getattr(backend, "inner", backend), "kernels"):
        import asyncio

        space: dict[str, object] = {}
        exec(CHANNEL_FORMS_CHECK, space)  # noqa: S102 - the same code the page runs
        errors = asyncio.run(space["check"]())  # type: ignore[operator]
    else:
        pytest.skip("the channel-block kernel is webgpu's")
    assert len(errors) == 21, errors
    for name, op, err in errors:
        assert err < 1e-3, (name, op, err)
