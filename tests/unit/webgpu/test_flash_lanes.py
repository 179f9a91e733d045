"""The row kernels' shapes (`webgpu/flash_lanes.py`): several rows a thread and several threads
a row (subgroup lanes) give the recomputing default's values and gradients at ragged sizes,
with padded lanes (head dims not a multiple of 4 lanes' vec4s), masks and the causal flag;
`lane_sum`'s source; one thread a row without subgroups; workgroups within the invocation
limit. (Lavapipe has subgroups, so the lanes run natively here; the page has none.)"""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend.numpy import NumpyBackend
from pyrite.data import TensorData
from pyrite.webgpu import flash_attention, flash_lanes, flash_tiles

RNG = np.random.default_rng(13)
ENTRIES = ("forward", "query_grads", "key_grads")


def _check(gpu, dims: tuple[int, ...], mask: np.ndarray | None, causal: bool) -> None:
    """Output, lse-based gradients dq, dk, dv against numpy's recomputing default in f64."""
    b, h, sq, sk, dk, dv = dims
    q, k, v = (RNG.normal(size=s) for s in ((b, h, sq, dk), (b, h, sk, dk), (b, h, sk, dv)))
    grad = RNG.normal(size=(b, h, sq, dv))
    ref = NumpyBackend()
    prims = [ref.from_data(TensorData(a)) for a in (q, k, v)]
    ref_mask = None if mask is None else ref.from_data(TensorData(mask))
    out = ref.attention(*prims, ref_mask, 0.35, False, causal)
    want = [ref.to_data(t).to_numpy() for t in (out, *ref.attention_grad(
        *prims, ref_mask, out, None, ref.from_data(TensorData(grad)), 0.35, False, causal,
        (True, True, True)))]

    def up(a: np.ndarray):  # type: ignore[no-untyped-def]
        return gpu.from_data(TensorData(a.astype(np.float32)))

    gpu_mask = None if mask is None else up(mask)
    found = gpu.attention_saving(up(q), up(k), up(v), gpu_mask, 0.35, False, causal)
    assert found is not None
    got = [found[0], *gpu.attention_grad(up(q), up(k), up(v), gpu_mask, found[0], found[1],
                                          up(grad), 0.35, False, causal, (True, True, True))]
    for name, g, w in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        np.testing.assert_allclose(gpu.to_data(g).to_numpy(), w, rtol=1e-4, atol=2e-5,
                                   err_msg=name)


@pytest.mark.parametrize("shape, dims, mask_kind, causal", [
    ((1, 2), (2, 2, 70, 37, 9, 5), "bias", False),  # 3 and 2 vec4s: lanes padded
    ((2, 2), (1, 2, 70, 70, 16, 8), None, True),
    ((4, 4), (2, 1, 33, 150, 12, 20), "padding", True),  # 33 rows: 4 a thread, ragged
    ((2, 1), (1, 1, 45, 60, 24, 24), None, False),  # several rows a thread, no subgroups
])
def test_row_shapes_match_the_recomputing_default(gpu, monkeypatch, shape, dims, mask_kind,
                                                  causal) -> None:
    if shape[1] > 1 and not flash_attention.lanes_usable(gpu.kernels):
        pytest.skip("the adapter has no usable subgroups")
    for table in ("TILED_HEADS", "TILED_HEADS_LANES"):
        monkeypatch.setattr(flash_tiles, table, dict.fromkeys(flash_tiles.ENTRIES, (0, 0)))
    monkeypatch.setattr(flash_lanes, "FORCED", dict.fromkeys(ENTRIES, shape))
    b, h, sq, sk = dims[:4]
    mask = None
    if mask_kind == "bias":
        mask = RNG.normal(size=(1, h, sq, sk))
    elif mask_kind == "padding":
        mask = np.zeros((b, 1, 1, sk))
        mask[..., sk - 40:] = -np.inf
    _check(gpu, dims, mask, causal)


def test_the_measured_width_takes_the_measured_shapes(gpu, monkeypatch) -> None:
    """Head dim 64 runs `flash_lanes.SHAPES` where the adapter has usable subgroups (else one
    thread a row), ragged, with the causal flag."""
    for table in ("TILED_HEADS", "TILED_HEADS_LANES"):
        monkeypatch.setattr(flash_tiles, table, dict.fromkeys(flash_tiles.ENTRIES, (0, 0)))
    subgroups = flash_attention.lanes_usable(gpu.kernels)
    for entry in ENTRIES:
        want = flash_lanes.SHAPES[entry] if subgroups else (1, 1)
        assert flash_lanes.shape(entry, 64, 64, subgroups) == want
    _check(gpu, (1, 1, 70, 90, 64, 64), None, True)


def test_lane_sum_source() -> None:
    """One lane: no subgroup builtin in the source (the page requests no subgroups); 2 and 4
    lanes: a butterfly of 1 and 2 shuffles."""
    assert "subgroup" not in flash_lanes.lane_sum(1)
    assert flash_lanes.lane_sum(2).count("subgroupShuffleXor(s, 1u)") == 1
    four = flash_lanes.lane_sum(4)
    assert four.count("subgroupShuffleXor") == 2 and "subgroupShuffleXor(s, 2u)" in four


def test_without_subgroups_a_thread_holds_whole_rows(monkeypatch) -> None:
    """No subgroups: one thread a row, and a forced shape keeps its rows a thread only."""
    assert flash_lanes.shape("forward", 64, 64, False) == (1, 1)
    monkeypatch.setattr(flash_lanes, "FORCED", {"forward": (2, 4)})
    assert flash_lanes.shape("forward", 64, 64, False) == (2, 1)
    assert flash_lanes.shape("forward", 64, 64, True) == (2, 4)


@pytest.mark.parametrize("rpt, lanes", [(1, 1), (1, 4), (2, 2), (4, 4)])
def test_workgroups_stay_within_the_invocation_limit(rpt: int, lanes: int) -> None:
    """WebGPU's default 256 invocations: rows a workgroup halve until their threads fit."""
    for rows in (32, 64, 128, 256):
        fitted = flash_lanes.fit(rows, rpt, lanes, 256)
        assert fitted <= rows and fitted % rpt == 0
        assert flash_lanes.threads(fitted, rpt, lanes) <= 256
        assert fitted == rows or flash_lanes.threads(2 * fitted, rpt, lanes) > 256


def test_a_captured_step_takes_the_kernels_an_eager_step_takes(monkeypatch) -> None:
    """The subgroup check runs outside a capture in progress: a device whose first attention
    call is captured by `pyrite.compile` still gets the lanes (where the adapter has usable
    subgroups), and the replays give the eager step's values."""
    import pyrite
    from pyrite.backend.autodiff import Autodiff
    from pyrite.nn import functional as F
    from pyrite.webgpu import WebGpu
    from pyrite.webgpu.fusion import Fusion

    raw = WebGpu()
    device = Autodiff(Fusion(raw))
    seen: list[bool] = []
    shape = flash_lanes.shape
    monkeypatch.setattr(flash_lanes, "shape",
                        lambda *args: seen.append(args[3]) or shape(*args))

    def step(q, k, v):  # type: ignore[no-untyped-def]
        grads = (F.attention(q, k, v) * F.attention(q, k, v)).sum().backward()
        return q.grad(grads), k.grad(grads), v.grad(grads)

    compiled = pyrite.compile(step)
    arrays = [RNG.normal(size=(1, 2, 40, 32)).astype(np.float32) for _ in range(3)]
    ts = [pyrite.tensor(a, device=device).require_grad() for a in arrays]
    for _ in range(3):
        got = [g.numpy() for g in compiled(*ts)]
    want = [g.numpy() for g in step(*ts)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert compiled.replays >= 1
    usable = flash_attention.lanes_usable(raw.kernels)
    assert usable or "subgroup" not in raw.kernels.runtime.features
    assert seen and set(seen) == {usable}
