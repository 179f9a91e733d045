"""webgpu's register-blocked attention kernels (`webgpu/flash_tiles.py`): values and gradients
against the recomputing default at the tiling's edges (sequences that are not multiples of a
block, head dims 16 to 128, d_k != d_v, the causal flag, padding and additive masks), with the
tiles the page gets (16 KB of workgroup memory) and the adapter's own; tile shapes within
WebGPU's default limits; the rule between these kernels and the row kernels. (The tiles
past the causal frontier, never read, are in test_flash_attention.py, for both families.)
(The conformance suite, tests/conformance/test_attention.py, runs the op natively and in the
page, where the rule picks these kernels for heads wider than 64.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyrite.backend.numpy import NumpyBackend
from pyrite.data import TensorData
from pyrite.webgpu import flash_attention, flash_tiles

RNG = np.random.default_rng(11)
PAGE = 16384  # WebGPU's default max_compute_workgroup_storage_size


def _mask(kind: str | None, b: int, sq: int, sk: int) -> np.ndarray | None:
    if kind is None:
        return None
    if kind == "padding":  # the last keys of each batch row hidden, broadcast over heads
        mask = np.zeros((b, 1, 1, sk))
        mask[..., sk - 1 - sk // 3:] = -np.inf
        return mask
    return RNG.normal(size=(1, 1, sq, sk))  # an additive bias


@pytest.mark.parametrize("dims, mask_kind, causal, tiles", [
    ((2, 2, 70, 37, 16, 16), None, False, "page"),
    ((1, 2, 65, 130, 32, 32), "padding", False, "eight"),
    ((1, 1, 100, 100, 64, 64), None, True, "page"),
    ((1, 1, 100, 100, 64, 64), "bias", True, "eight"),
    ((2, 1, 33, 70, 128, 128), "bias", False, "page"),
    ((1, 1, 70, 90, 48, 20), "padding", True, None),
    ((1, 1, 150, 140, 64, 64), "bias", False, None),
    ((1, 1, 5, 3, 32, 36), None, False, "eight"),
])
def test_tiled_kernels_match_the_recomputing_default(gpu, monkeypatch, dims, mask_kind, causal,
                                                     tiles) -> None:
    """Output and (dq, dk, dv) of the tiled kernels, every one of the three launched, against
    `AttentionOps.attention_grad` on numpy in f64 from the same output gradient. `tiles`: the
    page's (16 KB of workgroup memory: 4 rows and 4 column groups a thread, short chunks), 8
    rows a thread (forced), or what the adapter's memory gives."""
    for table in ("TILED_HEADS", "TILED_HEADS_LANES"):
        monkeypatch.setattr(flash_tiles, table, dict.fromkeys(flash_tiles.ENTRIES,
                                                               (1, 1 << 20)))
    if tiles == "page":
        monkeypatch.setattr(flash_attention, "_budget", lambda k: PAGE)
    if tiles == "eight":
        monkeypatch.setattr(flash_tiles, "FORCED", dict.fromkeys(flash_tiles.ENTRIES,
                                                                 (2, 4, 16)))
    launched: list[str] = []
    launch = flash_tiles.launch

    def counted(k: Any, kernel: str, *args: Any) -> None:
        launched.append(kernel)
        launch(k, kernel, *args)

    monkeypatch.setattr(flash_tiles, "launch", counted)
    b, h, sq, sk, dk, dv = dims
    q, k, v = (RNG.normal(size=s) for s in ((b, h, sq, dk), (b, h, sk, dk), (b, h, sk, dv)))
    mask = _mask(mask_kind, b, sq, sk)
    grad = RNG.normal(size=(b, h, sq, dv))
    scale = 1 / np.sqrt(dk)
    ref = NumpyBackend()
    prims = [ref.from_data(TensorData(a)) for a in (q, k, v)]
    ref_mask = None if mask is None else ref.from_data(TensorData(mask))
    out = ref.attention(*prims, ref_mask, scale, False, causal)
    want = [ref.to_data(t).to_numpy() for t in (out, *ref.attention_grad(
        *prims, ref_mask, out, None, ref.from_data(TensorData(grad)), scale, False, causal,
        (True, True, True)))]

    def up(a: np.ndarray) -> Any:
        return gpu.from_data(TensorData(a.astype(np.float32)))

    gpu_mask = None if mask is None else up(mask)
    found = gpu.attention_saving(up(q), up(k), up(v), gpu_mask, scale, False, causal)
    assert found is not None
    got = [found[0], *gpu.attention_grad(up(q), up(k), up(v), gpu_mask, found[0], found[1],
                                          up(grad), scale, False, causal, (True, True, True))]
    assert sorted(launched) == ["forward", "key", "query"]
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(gpu.to_data(g).to_numpy(), w, rtol=1e-4, atol=1e-5,
                                   err_msg=f"output {i}")


def test_quiet_softmax_and_a_fully_masked_row(gpu, monkeypatch) -> None:
    """Quiet softmax (an extra logit 0, counted once per row across the threads sharing it) and
    a row whose every key is -inf (output 0, lse +inf, no gradient) in the tiled forward."""
    for table in ("TILED_HEADS", "TILED_HEADS_LANES"):
        monkeypatch.setattr(flash_tiles, table, dict.fromkeys(flash_tiles.ENTRIES,
                                                               (1, 1 << 20)))
    q, k, v = (RNG.normal(size=(1, 1, 40, 32)) for _ in range(3))
    mask = np.zeros((1, 1, 40, 40))
    mask[0, 0, 7] = -np.inf
    keep = np.arange(40) != 7
    s = (q[0, 0] @ k[0, 0].T * 0.2)[keep]
    ts = [gpu.from_data(TensorData(a.astype(np.float32))) for a in (q, k, v, mask)]
    for is_quiet in (True, False):
        top = s.max(-1, keepdims=True)
        top = np.maximum(top, 0.0) if is_quiet else top
        e = np.exp(s - top)
        want = np.zeros((40, 32))
        want[keep] = e / (e.sum(-1, keepdims=True) + (np.exp(-top) if is_quiet else 0)) @ v[0, 0]
        found = gpu.attention_saving(*ts, 0.2, is_quiet, False)
        assert found is not None
        got = gpu.to_data(found[0]).to_numpy()[0, 0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        assert np.all(got[7] == 0.0)
        if not is_quiet:  # (quiet: the extra logit alone, lse 0)
            assert gpu.to_data(found[1]).to_numpy()[0, 0, 7] == np.inf


@pytest.mark.parametrize("kernel", sorted(flash_tiles.ENTRIES))
def test_tiles_fit_webgpu_default_limits(kernel: str) -> None:
    """With 16 KB of workgroup memory every head dim up to 128 gets tiles, within 256
    invocations a workgroup; a larger budget never gets smaller tiles."""
    for dk in range(1, 129, 3):
        for dv in (dk, max(1, 129 - dk)):
            found = flash_tiles.config(PAGE, kernel, dk, dv)
            assert found is not None, (dk, dv)
            qm, gx, bk, rv = found
            assert flash_tiles.shared_bytes(kernel, qm, gx, bk, rv) <= PAGE
            assert gx * flash_tiles.GROUPS <= 256
            assert 4 * gx * rv >= {"forward": dv, "query": dk, "key": max(dk, dv)}[kernel]
            more = flash_tiles.config(49152, kernel, dk, dv)
            assert more is not None and more[0] * more[1] >= qm * gx


def test_the_rule_between_tiled_and_row_kernels(gpu) -> None:
    """The head widths in TILED_HEADS (one thread a row) and TILED_HEADS_LANES (rows shared by
    subgroup lanes) take the tiled kernels; narrower and wider ones (up to MAX_HEAD) the row
    kernels; a kernel whose widths are (0, 0) never runs tiled."""
    budget = flash_attention._budget(gpu.kernels)
    for lanes, table in ((False, flash_tiles.TILED_HEADS), (True, flash_tiles.TILED_HEADS_LANES)):
        for kernel, (low, high) in table.items():
            if (low, high) == (0, 0):
                assert not any(flash_tiles.takes(budget, kernel, d, d, lanes)
                               for d in range(1, flash_attention.MAX_HEAD + 1))
                continue
            assert flash_tiles.takes(budget, kernel, low, low, lanes)
            assert flash_tiles.takes(budget, kernel, high, 1, lanes)
            assert not flash_tiles.takes(budget, kernel, low - 1, low - 1, lanes)
            assert not flash_tiles.takes(budget, kernel, high + 1, 4, lanes)


def test_loops_over_register_arrays_are_written_out() -> None:
    """Loops whose count is named are written out with their index a literal, nested ones
    too; loops over other counts stay, their bodies written out inside."""
    source = ("for (var i = 0u; i < TM; i++) { for (var jj = 0u; jj < TN; jj++) {"
              " s[i][jj] = 0.0; } }\n"
              "for (var j = 0u; j < n; j++) { for (var u = 0u; u < RV; u++) { o[u] += w[i]; } }")
    got = flash_tiles.unrolled(source, {"TM": 2, "TN": 2, "RV": 1})
    assert got == ("{ { s[0u][0u] = 0.0; }{ s[0u][1u] = 0.0; } }"
                   "{ { s[1u][0u] = 0.0; }{ s[1u][1u] = 0.0; } }\n"
                   "for (var j = 0u; j < n; j++) { { o[0u] += w[i]; } }")


def test_a_thread_prefetches_its_share_of_every_stage() -> None:
    """The registers a thread fetches a stage into (attention_tiles.wgsl's NA, NB, NR) cover the
    stage's vec4s between the workgroup's threads, with no round of fetches wholly idle."""
    for qm, gx in (*flash_tiles.SHAPES, (2, 4)):
        threads = flash_tiles.GROUPS * gx
        for bk in (4, 8, 16, 32, 64):
            for rv in range(1, 9):
                counts = flash_tiles.prefetched(qm, gx, bk, rv)
                for name, size in (("NA", bk * flash_tiles.GROUPS * qm), ("NB", bk * gx),
                                   ("NR", 4 * gx * gx * rv)):
                    assert (counts[name] - 1) * threads < size <= counts[name] * threads
