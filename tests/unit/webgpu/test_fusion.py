"""fusion<webgpu>: inspection, stream length, debug output and errors.

The fusion tests are split by what they decide: test_fusion_elementwise.py (chains,
broadcasting, what is written, caches, in place), test_fusion_products.py (reductions, matmul
and conv epilogues, autodiff and the optimizer) and this file. Their fixtures (`fdev`, the
shared fusion<webgpu> device with nothing pending, and `fx`, the helpers) are in conftest.py.
Counters are compared as deltas, since the device and its caches are shared by the session.
"""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.dtype import DType
from pyrite.errors import BackendUnavailable
from pyrite.webgpu import fusion
from pyrite.webgpu.fusion import MAX_STREAM, Fusion


# ---- f16 inside an f32 kernel ----------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda t: t.cast("f16").cast("f32") * 2.0,
    lambda t: t.cast("f16").cast("f32").sum_dim(1),
], ids=["elementwise", "fused_reduce"])
def test_f16_intermediate_between_f32_buffers(fdev, fn, fx) -> None:
    """Every buffer is f32, a step in between is f16: the kernel still needs `enable f16;`."""
    if not fdev.supports(DType.F16):
        pytest.skip("the adapter has no f16")
    a = fx.f32((4, 8))
    (x,) = fx.on(fdev, a)
    got = fn(x).numpy()
    fx.close(got, fx.reference(fn, a), rtol=1e-5, atol=1e-5)


def test_inspect_counts_flushes(fdev, fx) -> None:
    (x,) = fx.on(fdev, fx.f32((4, 4)))
    with fusion.inspect() as seen:
        (x * 2.0).numpy()
        (x + 1.0).sum_dim(0).numpy()
    assert seen.kernels == 2
    assert seen.flushes == 2, seen  # `Inspection.flushes` is declared but never counted


# ---- stream length, debug output, errors --------------------------------------------------------
def _long_stream(x: pyrite.Tensor) -> pyrite.Tensor:
    y = x
    for _ in range(MAX_STREAM):  # 2 * MAX_STREAM nodes
        y = y * 0.99 + 0.01
    return y


def test_stream_longer_than_max_flushes_by_itself(fdev, fx) -> None:
    a = fx.f32((4, 8))
    (x,) = fx.on(fdev, a)
    before = fx.stats(fdev)
    y = _long_stream(x)
    assert fx.delta(fdev, before)["flushes"] >= 1  # before any readback
    got = y.numpy()
    fx.close(got, fx.reference(_long_stream, a))


def test_debug_wgsl_prints_each_new_kernel_with_its_key(gpu, monkeypatch, capsys, fx) -> None:
    dev = Fusion(gpu)  # a fresh Fusion; the op mix below is used nowhere else
    monkeypatch.setenv("PYRITE_DEBUG", "wgsl")

    def odd(x: pyrite.Tensor) -> pyrite.Tensor:
        return ((x.sin() * 3.25).cos() - x.floor()).abs().sqrt().log1p()

    a = fx.f32((4, 4))
    capsys.readouterr()
    got = odd(pyrite.tensor(a, device=dev)).numpy()
    err = capsys.readouterr().err
    assert "// pyrite wgsl KernelKey(kernel='fused'" in err, err[:2000]
    assert "@compute" in err and "sin(" in err and "cos(" in err, err[:2000]
    fx.close(got, fx.reference(odd, a))
    odd(pyrite.tensor(a, device=dev)).numpy()
    assert "// pyrite wgsl" not in capsys.readouterr().err  # compiled once, printed once


def test_fusion_needs_a_webgpu_inner_backend() -> None:
    with pytest.raises(BackendUnavailable, match=r"fusion<webgpu>"):
        Fusion(pyrite.device("numpy"))
    with pytest.raises(BackendUnavailable, match=r"fusion<numpy>.*fusion<webgpu>"):
        pyrite.device("fusion<numpy>")


def test_kernels_never_bind_more_buffers_than_webgpu_allows(fdev, fx) -> None:
    # WebGPU guarantees 8 storage buffers per kernel: a sum of 40 tensors and 31 held results
    # of one shape are split into kernels that each bind at most that many
    arrays = [fx.f32((3, 4)) for _ in range(40)]
    xs = fx.on(fdev, *arrays)
    with fusion.inspect() as seen:
        total = xs[0]
        for x in xs[1:]:
            total = total + x
        got = total.numpy()
    np.testing.assert_allclose(got, np.sum(arrays, axis=0), rtol=1e-5)
    assert all(g["inputs"] + g["outputs"] + 1 <= fusion.MAX_BINDINGS for g in seen.groups)
    with fusion.inspect() as seen:
        held = [x * 2.0 + 1.0 for x in xs[:31]]
        fdev.sync()
    for h, a in zip(held, arrays[:31], strict=True):
        np.testing.assert_allclose(h.numpy(), a * 2 + 1, rtol=1e-6)
    assert all(g["inputs"] + g["outputs"] + 1 <= fusion.MAX_BINDINGS for g in seen.groups)
    with fusion.inspect() as seen:
        s = sum(xs[1:12], xs[0]).sum_dim(1).numpy()
    np.testing.assert_allclose(s, np.sum(arrays[:12], axis=0).sum(1, keepdims=True), rtol=1e-5)
    assert all(g["inputs"] + g["outputs"] + 1 <= fusion.MAX_BINDINGS for g in seen.groups)


def test_a_result_too_large_for_one_buffer_fails_where_it_is_asked_for(fdev, fx) -> None:
    # the error comes from the op, not from a later flush that would carry it to other work
    from pyrite.errors import DeviceMemoryError

    limit = fdev.inner.kernels.runtime.limits.max_allocation
    with pytest.raises(DeviceMemoryError, match="smaller batch"):
        pyrite.zeros((limit // 4 + 1,), device=fdev)
    (x,) = fx.on(fdev, fx.f32((2, 2)))
    np.testing.assert_allclose((x + 1.0).numpy(), x.numpy() + 1.0)
