"""The submit policy (`batch.SubmitPolicy`, `batch.POLICY`): where a program is cut by work; an
eager batch submitted after a long kernel (the attention kernels give their FLOPs) and not
before its work or command limit; a compiled attention step gives the eager step's values with
one submit a replay, or the eager batch's parts with `split_replays`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyrite.backend.registry import get
from pyrite.data import TensorData
from pyrite.webgpu import batch, flash_attention

RNG = np.random.default_rng(21)


@pytest.mark.parametrize("costs, ends", [
    ([], [0]),
    ([0.0, 0.0, 0.0], [3]),
    ([0.0, 2.0, 0.0, 0.5, 0.6, 0.0], [2, 5, 6]),  # cut after the dispatch reaching the work
    ([0.4, 0.4, 0.4], [3]),  # reached by the last: one part
    ([1.0, 1.0], [1, 2]),
])
def test_chunks_cut_after_the_dispatch_that_reaches_the_work(costs, ends) -> None:
    assert batch.SubmitPolicy(work=1.0).chunks(costs) == ends


def test_no_cut_without_a_work_rule() -> None:
    assert batch.SubmitPolicy(work=math.inf).chunks([1e12, 1e12]) == [2]


def test_attention_work_counts_each_kernels_products() -> None:
    from pyrite.dtype import DType
    from pyrite.webgpu.tensor import GpuTensor

    def view(*shape: int) -> GpuTensor:
        return GpuTensor.dense(None, shape, DType.F32)  # type: ignore[arg-type]

    q, k, v = view(2, 3, 10, 8), view(2, 3, 20, 8), view(2, 3, 20, 4)
    pairs = 2 * 3 * 10 * 20
    assert flash_attention.work("forward", q, k, v, False) == 2 * pairs * (8 + 4)
    assert flash_attention.work("forward", q, k, v, True) == pairs * (8 + 4)
    assert flash_attention.work("query_grads", q, k, v, False) == 2 * pairs * (16 + 4)
    assert flash_attention.work("key_grads", q, k, v, False) == 2 * pairs * (16 + 8)
    assert flash_attention.work("key_grads", q, k, v, False, 1) == 2 * pairs * (16 + 4)
    assert flash_attention.work("key_grads", q, k, v, False, 2) == 2 * pairs * (8 + 8)


def _counters(gpu) -> tuple[float, bool]:  # type: ignore[no-untyped-def]
    """(submits so far, whether commands are pending) of the backend's runtime."""
    runtime = gpu.kernels.runtime
    inner = getattr(runtime, "inner", runtime)
    return inner.stats["submits"], inner._encoder is not None


@pytest.mark.parametrize("work, submitted", [(1.0, True), (math.inf, False)])
def test_a_long_kernel_is_submitted_at_once(gpu, monkeypatch, work, submitted) -> None:
    q, k, v = (gpu.from_data(TensorData(RNG.normal(size=(1, 2, 24, 8)).astype(np.float32)))
               for _ in range(3))
    gpu.to_data(gpu.attention(q, k, v, None, 0.3, False, False))  # the device's first checks
    monkeypatch.setattr(batch.POLICY, "work", work)
    before, _ = _counters(gpu)
    out = gpu.attention(q, k, v, None, 0.3, False, False)
    after, pending = _counters(gpu)
    assert after == before + int(submitted)
    assert pending is not submitted
    gpu.to_data(out)


def test_costless_commands_wait_for_the_command_limit(gpu, monkeypatch) -> None:
    x = gpu.from_data(TensorData(np.linspace(-2, 0, 8, dtype=np.float32)))
    gpu.kernels.runtime.flush()
    monkeypatch.setattr(batch.POLICY, "commands", 3)
    before, _ = _counters(gpu)
    y = gpu.unary(get("exp"), x)
    y = gpu.unary(get("exp"), y)
    assert _counters(gpu) == (before, True)
    y = gpu.unary(get("exp"), y)
    assert _counters(gpu) == (before + 1, False)
    np.testing.assert_allclose(gpu.to_data(y).to_numpy(),
                               np.exp(np.exp(np.exp(np.linspace(-2, 0, 8)))), rtol=1e-5)


@pytest.mark.parametrize("split", [False, True])
def test_a_compiled_attention_step_equals_eager(monkeypatch, split) -> None:
    """Forward + backward through pyrite.compile (an eager batch cut after each long kernel):
    the replays give the eager step's gradients, in one submit each, or with `split_replays`
    in the parts the eager step was submitted in."""
    import pyrite
    from pyrite.backend.autodiff import Autodiff
    from pyrite.nn import functional as F
    from pyrite.webgpu import WebGpu
    from pyrite.webgpu.fusion import Fusion

    raw = WebGpu()
    device = Autodiff(Fusion(raw))
    monkeypatch.setattr(batch.POLICY, "work", 1.0)  # every attention kernel is long
    monkeypatch.setattr(batch.POLICY, "split_replays", split)

    def step(q, k, v, w):  # type: ignore[no-untyped-def]
        grads = (F.attention(q, k, v) * w).sum().backward()
        return q.grad(grads), k.grad(grads), v.grad(grads)

    compiled = pyrite.compile(step)
    shape = (2, 2, 37, 16)
    arrays = [RNG.normal(size=shape).astype(np.float32) for _ in range(4)]
    q, k, v = (pyrite.tensor(a, device=device).require_grad() for a in arrays[:3])
    w = pyrite.tensor(arrays[3], device=device)
    want = [g.numpy() for g in step(q, k, v, w)]
    eager_before, _ = _counters(raw)
    step(q, k, v, w)
    eager_submits = _counters(raw)[0] - eager_before
    for _ in range(3):
        compiled(q, k, v, w)
    assert compiled.replays == 1
    raw.kernels.runtime.flush()
    before, _ = _counters(raw)
    got = compiled(q, k, v, w)
    submits = _counters(raw)[0] - before
    assert compiled.replays == 2
    # eagerly: after the forward, the key gradients and the query gradients (then the rest)
    assert eager_submits >= 3
    assert submits == (3 if split else 1)
    for g, x in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), x, rtol=1e-5, atol=1e-6)
