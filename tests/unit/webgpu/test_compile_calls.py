"""How a compiled function is called: as a method, inside another function's capture, and
with tensors autodiff tracks (`inference=True`)."""

from __future__ import annotations

import numpy as np

import pyrite
from pyrite import nn
from pyrite.backend.autodiff import Autodiff
from pyrite.module import Module
from pyrite.tensor import Tensor
from pyrite.webgpu import WebGpu
from pyrite.webgpu.fusion import Fusion


class _Affine(Module):
    def __init__(self, device: pyrite.Backend) -> None:
        self.fc = nn.LinearConfig(4, 3).init(device)

    @pyrite.compile(warn=False, inference=True)
    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x) * 2.0 + 1.0


def _inputs(device: pyrite.Backend, n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.normal(size=(2, 4)).astype(np.float32) for _ in range(n)]


def _expected(model: _Affine, x: np.ndarray) -> np.ndarray:
    w, b = model.fc.weight.val.numpy(), model.fc.bias.val.numpy()  # type: ignore[union-attr]
    return (x @ w + b) * 2.0 + 1.0  # type: ignore[no-any-return]


def test_a_compiled_method_binds_its_module_and_replays() -> None:
    device = Fusion(WebGpu(seed=1))
    model = _Affine(device)
    forward = _Affine.forward  # from the class: the compiled function itself
    before = forward.replays  # type: ignore[attr-defined]
    for x in _inputs(device, 4):
        got = model(pyrite.tensor(x, device=device)).numpy()
        np.testing.assert_allclose(got, _expected(model, x), rtol=1e-5, atol=1e-5)
    assert forward.replays == before + 2  # type: ignore[attr-defined]  # capture, check, replay


def test_inside_another_capture_a_compiled_function_does_not_replay() -> None:
    """The inner function has a program of its own; called inside the outer's capture it
    must run its ops (recorded by the outer), or the outer's replays would skip them."""
    device = Fusion(WebGpu(seed=2))
    inner = pyrite.compile(lambda x: x * 2.0 + 1.0)
    outer = pyrite.compile(lambda x: inner(x) * 3.0)
    xs = _inputs(device, 4)
    for x in xs[:3]:
        inner(pyrite.tensor(x, device=device))
    assert inner.replays == 1
    for x in xs:
        got = outer(pyrite.tensor(x, device=device)).numpy()
        np.testing.assert_allclose(got, (x * 2.0 + 1.0) * 3.0, rtol=1e-6)
    assert outer.replays == 2 and inner.replays == 1


def test_inference_runs_eagerly_where_autodiff_tracks_so_gradients_reach_the_params() -> None:
    device = Autodiff(Fusion(WebGpu(seed=3)))
    model = _Affine(device)
    forward = _Affine.forward
    replays = forward.replays  # type: ignore[attr-defined]
    for x in _inputs(device):
        y = model(pyrite.tensor(x, device=device))
        grads = y.sum().backward()
        grad = model.fc.weight.val.grad(grads)  # type: ignore[union-attr]
        assert grad is not None
        np.testing.assert_allclose(grad.numpy(), np.repeat(x.sum(0)[:, None] * 2.0, 3, 1),
                                   rtol=1e-5)
    assert forward.replays == replays  # type: ignore[attr-defined]
    # the same model on the inner device (no tracking) replays
    valid = model.valid()  # type: ignore[attr-defined]
    for x in _inputs(device):
        got = valid(pyrite.tensor(x, device=valid.devices()[0])).numpy()
        np.testing.assert_allclose(got, _expected(valid, x), rtol=1e-5, atol=1e-5)
    assert forward.replays == replays + 1  # type: ignore[attr-defined]


def test_a_model_changed_in_place_between_replays_replays_its_new_values() -> None:
    """A model passed to every call is not walked again while unchanged (capture/memo.py):
    a param given a new value, a layer swapped and a new batch shape between replays must
    each give what the eager call gives."""
    device = Fusion(WebGpu(seed=3))
    model = _Affine(device)
    run = pyrite.compile(lambda m, x: m.fc(x) * 2.0 + 1.0)
    xs = _inputs(device, 4)
    for x in xs:  # capture, check, replays: the module is remembered from its second call
        run(model, pyrite.tensor(x, device=device)).numpy()
    replays = run.replays
    rng = np.random.default_rng(9)
    model.fc.weight.val = pyrite.tensor(rng.normal(size=(4, 3)).astype(np.float32),
                                        device=device)
    got = run(model, pyrite.tensor(xs[0], device=device)).numpy()
    np.testing.assert_allclose(got, _expected(model, xs[0]), rtol=1e-5, atol=1e-5)
    assert run.replays == replays + 1  # the same signature: replayed with the new buffer
    model.fc = nn.LinearConfig(4, 3).init(device)  # new params (new ids): a new signature
    got = run(model, pyrite.tensor(xs[1], device=device)).numpy()
    np.testing.assert_allclose(got, _expected(model, xs[1]), rtol=1e-5, atol=1e-5)
    wide = rng.normal(size=(5, 4)).astype(np.float32)  # another batch: a new program
    got = run(model, pyrite.tensor(wide, device=device)).numpy()
    np.testing.assert_allclose(got, _expected(model, wide), rtol=1e-5, atol=1e-5)
    assert run.replays == replays + 1


def test_a_quantized_model_the_engine_cannot_take_runs_eagerly() -> None:
    # its weights are dequantized lazily into tensors still pending at the capture's start:
    # the call falls back to eager (counted) and gives eager's values, never an error
    from pyrite.quantization import QuantizationScheme, QuantizationType
    from pyrite.quantization.module import Quantizer

    device = Fusion(WebGpu(seed=0))
    scheme = QuantizationScheme.PerChannelSymmetric(QuantizationType.QInt8)
    model = nn.LinearConfig(16, 4).init(device).quantize_weights(Quantizer(scheme=scheme))
    run = pyrite.compile(lambda m, x: m(x).softmax(1), warn=False)
    x = pyrite.tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(2, 16), device=device)
    want = model(x).softmax(1).numpy()
    for _ in range(3):
        np.testing.assert_allclose(run(model, x).numpy(), want, rtol=1e-5, atol=1e-6)
    assert run.captures + run.fallbacks == 3
