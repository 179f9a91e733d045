"""Quantize/dequantize against a numpy reference for every scheme, on every backend; the
rule for other ops; calibration; QAT gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite import tensor
from pyrite.errors import KindError, QuantizationError
from pyrite.quantization import (
    MinMaxCalibration,
    PercentileCalibration,
    QuantizationParameters,
    QuantizationScheme,
    QuantizationType,
    QuantizedTensor,
)
from pyrite.quantization.qat import fake_quantize

S, T = QuantizationScheme, QuantizationType
SCHEMES = [S.PerTensorSymmetric(T.QInt8), S.PerTensorAffine(T.QInt8),
           S.PerChannelSymmetric(T.QInt8), S.PerChannelAffine(T.QInt4, axis=0),
           S.PerBlock(T.QInt4, 8), S.PerBlockAffine(T.QInt8, 5, axis=1)]


def reference(x: np.ndarray, s: QuantizationScheme) -> tuple[np.ndarray, np.ndarray]:
    """(int values, dequantized) written directly in numpy, groups made explicit."""
    qmax = 2 ** (s.qtype.bits - 1) - 1
    lo_q, hi_q = (-qmax, qmax) if s.is_symmetric else (-qmax - 1, qmax)
    x64 = x.astype(np.float64)
    q = np.zeros(x.shape, np.int64)
    out = np.zeros(x.shape)
    if s.granularity.value == "Tensor":
        groups = [np.ones(x.shape, bool)]
    elif s.granularity.value == "Channel":
        axis = s.resolved_axis(x.shape)
        groups = [np.moveaxis(np.indices(x.shape)[axis], 0, 0) == c for c in range(x.shape[axis])]
    else:
        axis = s.resolved_axis(x.shape)
        idx = np.indices(x.shape)[axis] // s.block_size
        other = [np.indices(x.shape)[d] for d in range(x.ndim) if d != axis]
        groups = []
        for b in range(idx.max() + 1):
            for pos in np.ndindex(*[x.shape[d] for d in range(x.ndim) if d != axis]):
                mask = idx == b
                for o, p in zip(other, pos, strict=True):
                    mask &= o == p
                groups.append(mask)
    for mask in groups:
        lo, hi = min(x64[mask].min(), 0.0), max(x64[mask].max(), 0.0)
        if s.is_symmetric:
            amax = max(hi, -lo)
            scale, zero = (amax / hi_q if amax > 0 else 1.0), 0
        else:
            scale = (hi - lo) / (hi_q - lo_q) if hi > lo else 1.0
            zero = int(np.clip(np.round(lo_q - lo / np.float32(scale)), lo_q, hi_q))
        scale = float(np.float32(scale))
        q[mask] = np.clip(np.round(x64[mask] / scale) + zero, lo_q, hi_q)
        out[mask] = (q[mask] - zero) * scale
    return q, out


@pytest.mark.parametrize("scheme", SCHEMES, ids=repr)
@pytest.mark.parametrize("shape", [(13, 7), (12, 10)])
def test_round_trip_matches_numpy(backend: pyrite.Backend, scheme: QuantizationScheme,
                                  shape: tuple[int, int]) -> None:
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 3
    q = tensor(x, device=backend).quantize_dynamic(scheme)
    want_q, want = reference(x, scheme)
    assert isinstance(q, QuantizedTensor) and q.shape == shape
    assert q.qparams.scale.shape == scheme.params_shape(shape)
    # a value exactly between two steps may round either way after float32 division
    assert np.abs(q.values.numpy() - want_q).max() <= 1
    assert np.mean(q.values.numpy() != want_q) < 0.01
    np.testing.assert_allclose(q.dequantize().numpy(), want, atol=float(
        q.qparams.scale.numpy().max()) * 1.001)


@pytest.mark.parametrize("scheme", SCHEMES, ids=repr)
def test_all_zero_tensor_stays_zero(backend: pyrite.Backend, scheme: QuantizationScheme) -> None:
    q = tensor(np.zeros((6, 9), np.float32), device=backend).quantize_dynamic(scheme)
    assert np.all(q.dequantize().numpy() == 0.0)
    assert np.all(q.qparams.scale.numpy() == 1.0)


def test_quantize_with_given_params() -> None:
    scheme = S.PerTensorAffine(T.QInt8)
    q = tensor([-1.0, 0.0, 1.0, 5.0]).quantize(
        scheme, QuantizationParameters(tensor([0.02]), tensor([-10])))
    assert q.values.to_list() == [-60, -10, 40, 127]  # 5.0 clamps to 127


def test_bad_params_are_refused_with_the_fix() -> None:
    x = tensor(np.ones((4, 3), np.float32))
    with pytest.raises(QuantizationError, match=r"needs a scale of shape \(1, 3\)"):
        x.quantize(S.PerChannelSymmetric(T.QInt8), QuantizationParameters(tensor([1.0])))
    with pytest.raises(QuantizationError, match="has no zero point"):
        x.quantize(S.PerTensorSymmetric(T.QInt8),
                   QuantizationParameters(tensor([1.0]), tensor([0])))
    with pytest.raises(QuantizationError, match="block_size must be >= 1"):
        S.PerBlock(T.QInt4, 0)
    with pytest.raises(KindError, match="convert with .float"):
        tensor([1, 2]).quantize_dynamic(S.PerTensorSymmetric(T.QInt8))


def test_other_ops_run_on_dequantized_values(backend: pyrite.Backend) -> None:
    x = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    q = tensor(x, device=backend).quantize_dynamic(S.PerTensorAffine(T.QInt8))
    d = q.dequantize().numpy()
    for got, want in [(q + 1.0, d + 1.0), (tensor(x, device=backend) - q, x - d),
                      (q.exp(), np.exp(d)), (q.sum_dim(1), d.sum(1, keepdims=True))]:
        assert type(got) is pyrite.Tensor
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    moved = q.reshape((6, 4)).transpose()
    assert isinstance(moved, QuantizedTensor)
    np.testing.assert_array_equal(moved.dequantize().numpy(), d.reshape(6, 4).T)
    with pytest.raises(KindError, match="not trained"):
        q.require_grad()


def test_percentile_calibration_ignores_outliers() -> None:
    values = np.concatenate([np.linspace(-1, 1, 9998), [50.0, -40.0]]).astype(np.float32)
    rng = PercentileCalibration(99.9).compute_range(tensor(values))
    assert -1.01 < rng.min.item() < -0.99 and 0.99 < rng.max.item() < 1.01
    full = MinMaxCalibration().compute_range(tensor(values))
    assert (full.min.item(), full.max.item()) == (-40.0, 50.0)
    with pytest.raises(QuantizationError, match="per-tensor schemes only"):
        PercentileCalibration().compute_range(tensor(values), S.PerBlock(T.QInt8, 4))


@pytest.mark.parametrize("scheme", [S.PerTensorAffine(T.QInt8), S.PerChannelSymmetric(T.QInt4),
                                    S.PerBlockAffine(T.QInt4, 3, axis=1)], ids=repr)
def test_fake_quantize_gradient_is_the_straight_through_estimate(
        scheme: QuantizationScheme) -> None:
    """d/dx of fake_quantize is the derivative of its STE surrogate clamp(x, lo, hi), checked
    by finite differences of that surrogate in float64."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)) * 2
    qparams = scheme.compute_q_params(MinMaxCalibration().compute_range(
        tensor(x.astype(np.float32) * 0.7), scheme))  # narrower than x: some values clamp
    scale = np.broadcast_to(_params(qparams.scale, scheme, x.shape), x.shape)
    zero = 0.0 if qparams.offset is None else np.broadcast_to(
        _params(qparams.offset, scheme, x.shape), x.shape)
    lo_q, hi_q = scheme.q_bounds
    lo, hi = (lo_q - zero) * scale, (hi_q - zero) * scale
    weights = rng.standard_normal(x.shape)

    def surrogate(v: np.ndarray) -> float:
        return float((np.clip(v, lo, hi) * weights).sum())

    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        fd[i] = (surrogate(x + step) - surrogate(x - step)) / (2 * eps)
    ad = pyrite.device("autodiff<numpy>")
    xt = tensor(x.astype(np.float32), device=ad).require_grad()
    qp = QuantizationParameters(tensor(qparams.scale.numpy(), device=ad),
                                None if qparams.offset is None
                                else tensor(qparams.offset.numpy(), device=ad))
    out = fake_quantize(xt, scheme, qp)
    grads = (out * tensor(weights.astype(np.float32), device=ad)).sum().backward()
    np.testing.assert_allclose(xt.grad(grads).numpy(), fd, atol=1e-4)
    assert 0 < np.count_nonzero(fd == 0) < x.size  # both sides of the clamp were exercised
    forward = xt.inner().quantize(scheme, QuantizationParameters(
        qparams.scale, qparams.offset)).dequantize().numpy()
    np.testing.assert_allclose(out.numpy(), forward, atol=1e-6)


def _params(p: pyrite.Tensor, scheme: QuantizationScheme,
            shape: tuple[int, ...]) -> np.ndarray:
    """Params spread to one per element (blocks repeated along their axis)."""
    values = p.numpy().astype(np.float64)
    if scheme.granularity.value != "Block":
        return values
    axis = scheme.resolved_axis(shape)
    return np.repeat(values, scheme.block_size, axis=axis).take(range(shape[axis]), axis=axis)


def test_dequantize_is_one_fused_kernel_on_webgpu(device_named: object) -> None:
    backend = device_named("webgpu")  # type: ignore[operator]
    from pyrite.webgpu import fusion
    if not isinstance(backend, fusion.Fusion):
        pytest.skip("PYRITE_FUSION=off")
    w = tensor(np.random.default_rng(4).standard_normal((16, 8, 3, 3)).astype(np.float32),
               device=backend)
    q = w.quantize_dynamic(S.PerChannelAffine(T.QInt8))
    backend.sync()
    with fusion.inspect() as seen:
        values = q.dequantize().numpy()
    assert seen.kernels == 1  # cast, subtract the zero point, scale: one generated kernel
    np.testing.assert_allclose(values, w.numpy(), atol=float(q.qparams.scale.numpy().max()))
