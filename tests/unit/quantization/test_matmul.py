"""Integer products against the float product of the dequantized operands, on every backend
(and both dot products on webgpu)."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite import tensor
from pyrite.quantization import QuantizationScheme, QuantizationType, int_kernels

S, T = QuantizationScheme, QuantizationType
WEIGHTS = [S.PerTensorSymmetric(T.QInt8), S.PerTensorAffine(T.QInt8),
           S.PerChannelAffine(T.QInt8), S.PerBlock(T.QInt4, 16),
           S.PerChannelAffine(T.QInt4), S.PerBlockAffine(T.QInt8, 7, axis=1),
           S.PerChannelSymmetric(T.QInt8, axis=0)]


def _operands(m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m + k + n)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


@pytest.mark.parametrize("scheme", WEIGHTS, ids=repr)
def test_quantized_weight_matmul(backend: pyrite.Backend, scheme: QuantizationScheme) -> None:
    """Weight-only paths equal x @ dequantize(w); int8 paths equal the product of the
    dynamically quantized x and w."""
    x, w = _operands(37, 70, 45)
    xt = tensor(x, device=backend)
    qw = tensor(w, device=backend).quantize_dynamic(scheme)
    got = (xt @ qw).numpy()
    int8 = scheme.qtype is T.QInt8 and (scheme.granularity.value == "Tensor" or (
        scheme.granularity.value == "Channel" and scheme.resolved_axis(w.shape) == 1))
    lhs = xt.quantize_dynamic(S.PerTensorSymmetric(T.QInt8)).dequantize() if int8 else xt
    want = lhs.numpy().astype(np.float64) @ qw.dequantize().numpy().astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_static_affine_activations_times_affine_weights(backend: pyrite.Backend) -> None:
    x, w = _operands(9, 1100, 13)  # inner dim past numpy's exact-chunk length (1024)
    xq = tensor(x, device=backend).quantize_dynamic(S.PerTensorAffine(T.QInt8))
    qw = tensor(w, device=backend).quantize_dynamic(S.PerChannelAffine(T.QInt8))
    want = xq.dequantize().numpy().astype(np.float64) @ qw.dequantize().numpy()
    np.testing.assert_allclose((xq @ qw).numpy(), want, rtol=1e-4, atol=2e-4)


def test_batched_input_keeps_its_leading_dims(backend: pyrite.Backend) -> None:
    x, w = _operands(6, 20, 5)
    qw = tensor(w, device=backend).quantize_dynamic(S.PerBlock(T.QInt4, 8))
    got = tensor(x.reshape(2, 3, 20), device=backend) @ qw
    assert got.shape == (2, 3, 5)
    np.testing.assert_allclose(got.numpy().reshape(6, 5), x @ qw.dequantize().numpy(),
                               rtol=1e-4, atol=1e-4)


def test_int8_accumulators_are_exact(backend: pyrite.Backend) -> None:
    """Extreme values everywhere: every product is 127 * 127 or -128 * 127."""
    kernels = int_kernels(backend)
    if kernels is None:
        pytest.skip(f"{backend.name} has no integer kernels")
    k = 1500
    a = np.full((3, k), 127, np.int64)
    a[1] = -128
    b = np.full((k, 4), 127, np.int64)
    b[::3, 1] = -127
    qb = tensor(b.astype(np.float32), device=backend).quantize_dynamic(
        S.PerTensorSymmetric(T.QInt8))
    lhs = tensor(a.astype(np.int32), device=backend).cast(qb.values.dtype)
    got = kernels.int8_matmul(lhs, qb).numpy()
    np.testing.assert_array_equal(got, a @ qb.values.numpy().astype(np.int64))


@pytest.mark.parametrize("shape", [(33, 77, 70), (520, 77, 530), (130, 1030, 67), (1, 3, 2),
                                   (515, 203, 517)],
                         ids=["4x4", "8x8-blocks", "ragged-long-k", "k-below-a-word",
                              "8x8-ragged"])
def test_webgpu_portable_dot_product_agrees(device_named: object,
                                            shape: tuple[int, int, int]) -> None:
    backend = device_named("webgpu")  # type: ignore[operator]
    from pyrite.webgpu.quantized import WebGpuIntKernels
    x, w = _operands(*shape)
    qx = tensor(x, device=backend).quantize_dynamic(S.PerTensorSymmetric(T.QInt8))
    qw = tensor(w, device=backend).quantize_dynamic(S.PerTensorSymmetric(T.QInt8))
    want = qx.values.numpy().astype(np.int64) @ qw.values.numpy().astype(np.int64)
    for packed in (False, True):
        kernels = WebGpuIntKernels(backend, packed=packed)
        np.testing.assert_array_equal(kernels.int8_matmul(qx.values, qw).numpy(), want)


@pytest.mark.parametrize("shape", [(70, 101, 130), (3, 5, 2)], ids=["ragged", "tiny"])
def test_webgpu_int4_weight_only_ragged(device_named: object, shape: tuple[int, int, int]) -> None:
    """M, N and K not multiples of the 64 x 64 tile or of the 32 values of a k step."""
    backend = device_named("webgpu")  # type: ignore[operator]
    x, w = _operands(*shape)
    qw = tensor(w, device=backend).quantize_dynamic(S.PerBlock(T.QInt4, 32))
    got = (tensor(x, device=backend) @ qw).numpy()
    want = x.astype(np.float64) @ qw.dequantize().numpy().astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_autodiff_devices_take_the_differentiable_float_path() -> None:
    ad = pyrite.device("autodiff<numpy>")
    x, w = _operands(4, 6, 3)
    xt = tensor(x, device=ad).require_grad()
    qw = tensor(w, device=ad).quantize_dynamic(S.PerTensorSymmetric(T.QInt8))
    grads = (xt @ qw).sum().backward()
    np.testing.assert_allclose(xt.grad(grads).numpy(),
                               np.broadcast_to(qw.dequantize().numpy().sum(1), x.shape),
                               rtol=1e-6)
