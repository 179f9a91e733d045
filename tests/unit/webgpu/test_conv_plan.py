"""Launch plans of the conv ops (`webgpu/conv_plan.py`): a repeated call replays what the
second call launched, binds the new call's tensors, and never makes the choice again."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.module_ops import ModuleOps
from pyrite.data import TensorData
from pyrite.webgpu import conv, conv_gemm, conv_plan
from pyrite.webgpu.kernels import Kernels

pytestmark = pytest.mark.usefixtures("fresh_conv_plans")


def _up(gpu, a):  # type: ignore[no-untyped-def]
    return gpu.from_data(TensorData(np.asarray(a, dtype=np.float32)))


CASES = [  # x shape, w shape, stride, padding, dilation, groups
    ((2, 8, 9, 7), (12, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 3, 11, 10), (20, 3, 3, 3), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    ((1, 6, 9, 9), (10, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),
    ((2, 40, 8, 8), (48, 40, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # GEMMs
    ((2, 256, 3, 4), (1024, 256, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # matmuls
]


@pytest.mark.parametrize("xs, ws, stride, pads, dil, groups", CASES)
def test_replayed_calls_bind_each_calls_tensors(gpu, ref, down, monkeypatch, xs, ws, stride,
                                                pads, dil, groups) -> None:
    args = (stride, pads, dil, groups)
    rng = np.random.default_rng(1)

    def calls(seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        r = np.random.default_rng(seed)
        x, w, b = (r.normal(size=s).astype(np.float32) for s in (xs, ws, ws[:1]))
        y = ModuleOps.conv2d(ref, x, w, b, *args)
        g = r.normal(size=np.shape(ref.to_data(y).to_numpy())).astype(np.float32)
        want = [ref.to_data(y).to_numpy(), ref.conv2d_input_grad(g, w, xs, *args),
                ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args)]
        gx, gw, gb, gg = (_up(gpu, a) for a in (x, w, b, g))
        got = [down(gpu.conv2d(gx, gw, gb, *args)),
               down(gpu.conv2d_input_grad(gg, gw, xs, *args)),
               down(gpu.conv2d_weight_grad(gx, gg, ws, *args))]
        return got, [np.asarray(a) for a in want]

    del rng
    for seed in (1, 2):  # the ordinary path, then the recording one
        got, want = calls(seed)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)
    plans = conv_plan._PLANS[gpu.kernels]
    assert sum(isinstance(p, conv_plan.Plan) for p in plans.values()) == 3

    def no_choice(*a, **kw):  # type: ignore[no-untyped-def]
        raise AssertionError("a replayed call chose its kernel again")

    monkeypatch.setattr(conv, "_choose", no_choice)
    for seed in (3, 4):  # replayed, with other tensors each time
        got, want = calls(seed)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)


def test_a_split_weight_gradient_replays_its_partial_sums(gpu, ref, down, monkeypatch) -> None:
    # the GEMM's K slices go to a temporary the plan allocates again on each call
    monkeypatch.setattr(conv_gemm, "MIN_SPLIT", 64)
    xs, ws, args = (2, 8, 32, 33), (12, 8, 3, 3), ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    monkeypatch.setattr(conv, "prefers_gemm", lambda *a: True)
    conv._heuristic.cache_clear()
    try:
        for seed in range(4):
            r = np.random.default_rng(seed)
            x = r.normal(size=xs).astype(np.float32)
            g = r.normal(size=(2, 12, 30, 31)).astype(np.float32)
            got = down(gpu.conv2d_weight_grad(_up(gpu, x), _up(gpu, g), ws, *args))
            want = ModuleOps.conv2d_weight_grad(ref, x, g, ws, *args)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
        plan = next(p for p in conv_plan._PLANS[gpu.kernels].values()
                    if isinstance(p, conv_plan.Plan))
        assert len(plan.steps) == 2 and len(plan.temps) == 2  # GEMM + sum; dw + slices
    finally:
        conv._heuristic.cache_clear()


def test_a_weight_views_copy_is_replayed_with_the_conv(gpu, ref, down) -> None:
    # a transposed weight view: the GEMM copies it dense first, and the plan replays the copy
    # (96 output channels: more than conv_channels.py's kernel, which reads views in place, takes)
    xs, ws, args = (2, 40, 8, 8), (96, 40, 1, 1), ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    for seed in range(4):
        r = np.random.default_rng(seed)
        x = r.normal(size=xs).astype(np.float32)
        wt = r.normal(size=(ws[1], ws[0], 1, 1)).astype(np.float32)
        w_view = _up(gpu, wt).permuted((1, 0, 2, 3))
        got = down(gpu.conv2d(_up(gpu, x), w_view, None, *args))
        want = ModuleOps.conv2d(ref, x, np.ascontiguousarray(wt.transpose(1, 0, 2, 3)), None,
                                *args)
        np.testing.assert_allclose(got, ref.to_data(want).to_numpy(), rtol=1e-4, atol=1e-3)
    (plan,) = conv_plan._PLANS[gpu.kernels].values()
    assert isinstance(plan, conv_plan.Plan) and len(plan.steps) == 2  # copy, GEMM


def test_work_launched_past_the_recorder_is_never_planned(gpu, down) -> None:
    # a call that launches through another Kernels than the one it is given (on the same
    # pool): the recorder sees the allocation but no kernel writing the result, so the
    # description keeps the ordinary path
    k = gpu.kernels
    other = Kernels(k.runtime, k.pool)
    x = _up(gpu, np.arange(6.0).reshape(2, 3)).permuted((1, 0))
    for _ in range(3):
        got = conv_plan.planned(k, ("test",), [x.block.buffer], lambda kk: other.copy(x))
        assert got is not None
        np.testing.assert_array_equal(down(got), np.arange(6.0).reshape(2, 3).T)
    assert conv_plan._PLANS[k][("test",)] is conv_plan._NEVER


def test_a_call_that_uploads_is_never_planned_and_the_recorder_is_taken_off(gpu, down) -> None:
    # plans replay launches only: an upload in the record keeps the ordinary path; the
    # recorder (capture's, recording.py) leaves Kernels and the pool as it found them
    k = gpu.kernels
    x = _up(gpu, np.arange(6.0).reshape(2, 3)).permuted((1, 0))

    def call(kk: Kernels):
        out = kk.copy(x)
        kk.write(out.block.buffer, 0, np.float32([7.0]).tobytes())
        return out

    want = np.arange(6.0).reshape(2, 3).T.copy()
    want[0, 0] = 7.0
    for _ in range(3):
        np.testing.assert_array_equal(down(conv_plan.planned(k, ("upload",), [x.block.buffer],
                                                             call)), want)
        assert k.recorder is None and k.pool.watch is None
    assert conv_plan._PLANS[k][("upload",)] is conv_plan._NEVER
