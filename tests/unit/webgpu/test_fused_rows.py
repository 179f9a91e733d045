"""fusion<webgpu>'s row kernels (`webgpu/fused_rows.py`): softmax and log-softmax recorded in
the stream instead of flushing it, computed with their producers and, where nothing else reads
the result, their consumer; the decisions (kernels, flushes) and the values against numpy.
(The same expressions on every backend, gradients and the page included, are in
tests/conformance/test_activation.py and test_grad_elementwise.py.)"""

from __future__ import annotations

from typing import Any

import numpy as np

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.webgpu import fusion

RNG = np.random.default_rng(5)


# `fdev`: the shared fusion<webgpu> device (conftest.py)


def _softmax(z: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(z - z.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _kinds(seen: Any) -> list[str]:
    return [g["kind"] for g in seen.groups]


def test_softmax_between_elementwise_ops_is_one_kernel(fdev) -> None:
    a, b = RNG.normal(size=(4, 6, 9)).astype(np.float32), RNG.normal(size=(1, 6, 1))
    x, bias = pyrite.tensor(a, device=fdev), pyrite.tensor(b.astype(np.float32), device=fdev)
    with fusion.inspect() as seen:
        y = (x * 0.5 + bias).softmax(1) * 3.0 - 1.0
        assert seen.flushes == 0  # recorded, not run
        got = y.numpy()
    assert _kinds(seen) == ["softmax+epilogue"] and seen.flushes == 1, seen.groups
    np.testing.assert_allclose(got, _softmax(a * 0.5 + b, 1) * 3.0 - 1.0, rtol=1e-5, atol=1e-6)


def test_a_held_softmax_is_written_and_its_consumer_runs_after(fdev) -> None:
    """The epilogue would hide the weights the program still holds: two kernels."""
    a = RNG.normal(size=(5, 7)).astype(np.float32)
    x = pyrite.tensor(a, device=fdev)
    with fusion.inspect() as seen:
        w = (x * 2.0).log_softmax(-1)
        y = w.exp()
        got_w, got_y = w.numpy(), y.numpy()
    assert _kinds(seen) == ["fused_log_softmax", "elementwise"], seen.groups
    z = a * 2.0
    want = z - z.max(-1, keepdims=True)
    want -= np.log(np.exp(want).sum(-1, keepdims=True))
    np.testing.assert_allclose(got_w, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_y, np.exp(want), rtol=1e-5, atol=1e-6)


def test_softmax_of_a_tensor_in_memory_runs_the_raw_kernel(fdev) -> None:
    a = RNG.normal(size=(3, 8)).astype(np.float32)
    x = pyrite.tensor(a, device=fdev)
    with fusion.inspect() as seen:
        got = x.softmax(0).numpy()
    assert _kinds(seen) == ["softmax"], seen.groups
    np.testing.assert_allclose(got, _softmax(a, 0), rtol=1e-5, atol=1e-6)


def test_training_step_records_softmax_without_flushing(fdev) -> None:
    """The forward (producers, softmax, consumer, sum) stays in the stream; Autodiff's backward
    of softmax (elementwise ops and a sum) is fused like any other stream."""
    ad = Autodiff(fdev)
    a = RNG.normal(size=(6, 10)).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, size=(6, 10)).astype(np.float32)
    x = pyrite.tensor(a, device=ad).require_grad()
    with fusion.inspect() as seen:
        # sum_dim, not sum: sum() reshapes to one dim, which flushes
        loss = ((x * 1.5).softmax(1) * pyrite.tensor(w, device=ad)).sum_dim(1).sum_dim(0)
        assert seen.flushes == 0
        got = x.grad(loss.backward()).numpy()
    assert "fused_softmax" in _kinds(seen) and "fused_reduce" in _kinds(seen), seen.groups
    p = _softmax(a * 1.5, 1)
    want = 1.5 * p * (w - (w * p).sum(1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_repeated_streams_reuse_the_plan_and_the_pipeline(fdev) -> None:
    a = RNG.normal(size=(4, 33)).astype(np.float32)
    x = pyrite.tensor(a, device=fdev)
    (x - 1.0).softmax(1).mul_scalar(2.0).numpy()
    misses = fdev.stats.pipeline_misses
    for _ in range(3):
        got = (x - 1.0).softmax(1).mul_scalar(2.0).numpy()
    assert fdev.stats.pipeline_misses == misses
    np.testing.assert_allclose(got, _softmax(a - 1.0, 1) * 2.0, rtol=1e-5, atol=1e-6)
