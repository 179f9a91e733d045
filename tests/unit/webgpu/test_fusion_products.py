"""fusion<webgpu> with reductions, matmul and conv: producers absorbed into reductions,
epilogues (bias, activation) run by the product's kernel, the MNIST model's inference, split K,
and an MLP's gradients and Adam step against autodiff<numpy> (fixtures in conftest.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.module import Module
from pyrite.nn import CrossEntropyLossConfig, LinearConfig
from pyrite.optim import AdamConfig, GradientsParams
from pyrite.webgpu import fusion


# ---- reductions and matmul ----------------------------------------------------------------------
def test_reduction_absorbs_its_producer(fdev, fx) -> None:
    a = fx.f32((5, 7))
    (x,) = fx.on(fdev, a)
    with fusion.inspect() as seen:
        got = (x * x).sum_dim(1).numpy()
    assert fx.kinds(seen) == ["fused_reduce"], seen.groups  # x * x is never written
    assert seen.groups[0]["ops"] == ["binary:mul"]
    fx.close(got, fx.reference(lambda t: (t * t).sum_dim(1), a))


@pytest.mark.parametrize("fn", [
    lambda t: (t * t).sum_dim(0),                    # along a strided dim
    lambda t: (t - 5.0).max_dim(1),                  # all negative: the identity is -inf
    lambda t: (t + 5.0).min_dim(0),
    lambda t: (t > 0.0).int().sum_dim(1),            # bool -> int, an int accumulator
    lambda t: (t * 0.5).prod_dim(1),
], ids=["sum0", "max", "min0", "count", "prod"])
def test_fused_reductions(fdev, fn, fx) -> None:
    a = fx.f32((6, 9))
    (x,) = fx.on(fdev, a)
    with fusion.inspect() as seen:
        got = fn(x).numpy()
    assert fx.kinds(seen) == ["fused_reduce"], seen.groups
    fx.close(got, fx.reference(fn, a))


def test_fused_reduction_with_a_broadcast_input(fdev, fx) -> None:
    def fn(x: pyrite.Tensor, col: pyrite.Tensor) -> pyrite.Tensor:
        return (x * col).exp().sum_dim(1)

    a, c = fx.f32((5, 300)), fx.f32((5, 1))  # longer than one workgroup
    x, col = fx.on(fdev, a, c)
    with fusion.inspect() as seen:
        got = fn(x, col).numpy()
    assert fx.kinds(seen) == ["fused_reduce"] and seen.groups[0]["inputs"] == 2, seen.groups
    fx.close(got, fx.reference(fn, a, c), rtol=1e-5, atol=1e-5)


def _softmax(x: pyrite.Tensor) -> pyrite.Tensor:
    e = (x - x.max_dim(1)).exp()
    return e / e.sum_dim(1)


def test_softmax_from_primitives(fdev, fx) -> None:
    a = fx.f32((6, 10), -5.0, 5.0)
    (x,) = fx.on(fdev, a)
    with fusion.inspect() as seen:
        got = _softmax(x).numpy()
    # max; sum of exp(x - max) computed as it reads; exp(x - max) / sum: e is never written
    assert fx.kinds(seen) == ["reduce", "fused_reduce", "elementwise"], seen.groups
    assert seen.groups[2]["outputs"] == 1
    fx.close(got, fx.reference(_softmax, a))
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)


def _dense_relu(x: pyrite.Tensor, w: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
    return (x @ w + b).clamp_min(0.0)


@pytest.mark.parametrize("m, k, n, tol", [(8, 6, 5, 1e-5), (96, 128, 80, 1e-4)],
                         ids=["naive kernel", "tiled kernel"])
def test_matmul_bias_relu(fdev, m, k, n, tol, fx) -> None:
    """The bias add and relu run as the product's epilogue: one kernel, nothing else written.
    The larger product takes the tiled template, whose bind group then carries the epilogue's
    own bindings too."""
    xa, wa, ba = fx.f32((m, k)), fx.f32((k, n)), fx.f32((n,))
    x, w, b = fx.on(fdev, xa, wa, ba)
    with fusion.inspect() as seen:
        got = _dense_relu(x, w, b).numpy()
    assert fx.kinds(seen) == ["matmul+epilogue"], seen.groups
    fx.close(got, fx.reference(_dense_relu, xa, wa, ba), rtol=tol, atol=tol)


def test_linear_layer_bias_and_relu_run_as_the_products_epilogue(fdev, fx) -> None:
    # nn.Linear off autodiff adds its bias through pyrite.consuming (binary_consuming): once
    # forwarded, it flushed the product alone and ran the raw add, then a relu kernel; the
    # MNIST model's inference took 10 kernels instead of 6
    layer = LinearConfig(96, 80).init(fdev)
    (xa,) = (fx.f32((64, 96)),)
    (x,) = fx.on(fdev, xa)
    with fusion.inspect() as seen:
        got = pyrite.activation.relu(layer(x)).numpy()
    assert fx.kinds(seen) == ["matmul+epilogue"], seen.groups
    w, b = layer.weight.val.numpy(), layer.bias.val.numpy()  # type: ignore[union-attr]
    fx.close(got, np.maximum(xa @ w + b, 0), rtol=1e-4, atol=1e-4)
    # and the plain-op fallbacks of consuming: a scalar operand, a unary
    (y,) = fx.on(fdev, fx.f32((5, 3)))
    with fusion.inspect() as seen:
        got = pyrite.consuming.relu(pyrite.consuming.mul(y * 1.0, 2.0)).numpy()
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    fx.close(got, np.maximum(y.numpy() * 2.0, 0))


def test_the_mnist_models_inference_fuses_every_epilogue(fdev, fx) -> None:
    # the guide model off autodiff (webgpu_mnist.py's and compile.py's inference): conv2's
    # ReLU, both biases and linear1's ReLU run in the stores of the conv and the products;
    # with the bias add flushed apart, this took 4 more kernels than the raw backend saves
    from pyrite.demos.mnist import ModelConfig

    model = ModelConfig(10, 32).init(fdev)
    images = fx.f32((3, 28, 28), 0.0, 1.0)
    (x,) = fx.on(fdev, images)
    with fusion.inspect() as seen:
        got = model.forward(x).numpy()
    assert fx.kinds(seen) == ["conv2d", "conv2d+epilogue", "matmul+epilogue",
                            "matmul+epilogue"], seen.groups
    want = model.to_device("numpy").forward(pyrite.tensor(images, device="numpy")).numpy()
    fx.close(got, want, rtol=1e-4, atol=1e-4)


def test_a_split_k_product_runs_its_epilogue_in_the_sum(fdev, fx, monkeypatch) -> None:
    # few output tiles and a long K: the product is split in K slices, so the epilogue runs in
    # the kernel that adds the slices (before, the naive kernel ran such a product whole);
    # with at most 16 columns the narrow kernel would take it whole (test_linalg)
    from pyrite.webgpu import matmul_narrow
    monkeypatch.setattr(matmul_narrow, "MAX_COLS", 0)
    xa, wa, ba = fx.f32((16, 2048)), fx.f32((2048, 12)), fx.f32((12,))
    x, w, b = fx.on(fdev, xa, wa, ba)
    with fusion.inspect() as seen:
        got = _dense_relu(x, w, b).numpy()
    assert fx.kinds(seen) == ["matmul+epilogue"], seen.groups
    assert any(key.kernel == "matmul_split_sum" and key.params  # the epilogue's key
               for key, _ in fdev.inner.kernels._sources), "no split sum took the epilogue"
    fx.close(got, fx.reference(_dense_relu, xa, wa, ba), rtol=1e-4, atol=1e-3)


# ---- autodiff and the optimizer -----------------------------------------------------------------
class _Mlp(Module):
    def __init__(self, device: Any) -> None:
        self.first = LinearConfig(6, 16).init(device)
        self.second = LinearConfig(16, 4).init(device)

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return self.second(pyrite.activation.relu(self.first(x)))


def _params(model: Module) -> dict[str, np.ndarray]:
    return {path: p.val.numpy() for path, p in model.named_params()}


def test_mlp_gradients_and_adam_match_autodiff_numpy(fdev, fx) -> None:
    pyrite.seed(3, device="numpy")
    start = _Mlp("autodiff<numpy>").into_record()
    xs, ys = fx.f32((12, 6)), fx.rng.integers(0, 4, 12).astype(np.int32)
    loss_fn = CrossEntropyLossConfig().init()
    lr = 1e-2
    runs = {}
    for name in ("autodiff<numpy>", "autodiff<fusion<webgpu>>"):
        dev = pyrite.device(name)
        model = _Mlp(dev).load_record(start)
        optim = AdamConfig().init()
        x, y = pyrite.tensor(xs, device=dev), pyrite.tensor(ys, device=dev)
        grads_seen, losses, inplace = [], [], []
        for _ in range(2):
            loss = loss_fn(model(x), y)
            losses.append(float(loss.numpy()[0]))
            grads = GradientsParams.from_grads(loss.backward(), model)
            grads_seen.append({path: grads.get(p.id).numpy()
                               for path, p in model.named_params()})
            del loss
            before = fdev.stats.inplace
            model = optim.step(lr, model, grads)
            del grads
            params = _params(model)  # flushes the update
            inplace.append(fdev.stats.inplace - before)
        runs[name] = (losses, grads_seen, params, inplace)
    np_losses, np_grads, np_params, _ = runs["autodiff<numpy>"]
    f_losses, f_grads, f_params, f_inplace = runs["autodiff<fusion<webgpu>>"]
    np.testing.assert_allclose(f_losses, np_losses, rtol=1e-5)
    for step, (want, got) in enumerate(zip(np_grads, f_grads, strict=True)):
        for path in want:
            fx.close(got[path], want[path], rtol=1e-5, atol=1e-6)
            assert np.abs(want[path]).max() > 0, (step, path)
    for path, want in np_params.items():
        # Adam moves each weight by about lr a step; the backends agree far closer
        fx.close(f_params[path], want, rtol=1e-5, atol=lr * 1e-3)
    assert all(n >= 1 for n in f_inplace), f_inplace  # the updates reuse dead buffers




# ---- conv epilogues ------------------------------------------------------------------------------
def test_conv_activation_relu_is_one_kernel(fdev, fx) -> None:
    # nn.Conv2d(activation="relu") (conv2d_relu): recorded, so the ReLU is the conv's
    # epilogue; forwarded to the inner backend it flushed and ran a conv and a relu kernel
    from pyrite.nn import functional

    xa, wa, ba = fx.f32((1, 4, 9, 7)), fx.f32((6, 4, 3, 3)), fx.f32((6,))
    x, w, b = fx.on(fdev, xa, wa, ba)
    xn, wn, bn = (pyrite.tensor(a, device="numpy") for a in (xa, wa, ba))
    with fusion.inspect() as seen:
        got = functional.conv2d(x, w, b, padding=1, activation="relu").numpy()
    assert fx.kinds(seen) == ["conv2d+epilogue"], seen.groups
    want = functional.conv2d(xn, wn, bn, padding=1, activation="relu").numpy()
    fx.close(got, want, rtol=1e-4, atol=1e-5)


def test_two_convs_of_one_shape_each_take_their_epilogue(fdev, fx) -> None:
    # a fire module's two expand convs (1x1 and 3x3 of one input, one output shape), each with
    # its ReLU: the two ReLUs grouped by shape made one two-output kernel, and neither conv
    # could take its ReLU as epilogue; now each result of a conv is a group of its own
    from pyrite.nn import functional

    xa, w1a, w3a = fx.f32((1, 4, 6, 6)), fx.f32((5, 4, 1, 1)), fx.f32((5, 4, 3, 3))
    x, w1, w3 = fx.on(fdev, xa, w1a, w3a)
    xn, w1n, w3n = (pyrite.tensor(a, device="numpy") for a in (xa, w1a, w3a))

    def fire(x: pyrite.Tensor, w1: pyrite.Tensor, w3: pyrite.Tensor) -> pyrite.Tensor:
        e1 = functional.conv2d(x, w1, activation="relu")
        e3 = functional.conv2d(x, w3, padding=1, activation="relu")
        return pyrite.cat([e1, e3], 1)

    with fusion.inspect() as seen:
        got = fire(x, w1, w3).numpy()
    assert fx.kinds(seen) == ["conv2d+epilogue", "conv2d+epilogue"], seen.groups
    fx.close(got, fire(xn, w1n, w3n).numpy(), rtol=1e-4, atol=1e-5)


def test_conv_with_an_epilogue_is_one_kernel(fdev, fx) -> None:
    # conv2d -> scale, shift, relu: one kernel; values as on numpy (padding, stride, groups)
    from pyrite import activation
    from pyrite.nn import functional

    xa, wa, ba = fx.f32((2, 4, 9, 7)), fx.f32((6, 2, 3, 3)), fx.f32((6,))
    x, w, b = fx.on(fdev, xa, wa, ba)
    xn, wn, bn = (pyrite.tensor(a, device="numpy") for a in (xa, wa, ba))

    def net(x: pyrite.Tensor, w: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
        y = functional.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)
        return activation.relu(y * 2.0 - 0.5)

    with fusion.inspect() as seen:
        got = net(x, w, b).numpy()
    assert fx.kinds(seen) == ["conv2d+epilogue"], seen.groups
    fx.close(got, net(xn, wn, bn).numpy(), rtol=1e-4, atol=1e-5)
    # the conv output held by the program: written as it is, the epilogue runs on its own
    with fusion.inspect() as seen:
        y = functional.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)
        z = activation.relu(y).numpy()
    assert "conv2d" in fx.kinds(seen)
    fx.close(z, np.maximum(y.numpy(), 0))
