"""webgpu's flash attention kernels (`webgpu/flash_attention.py`): memory that grows with the
sequence, gradients against the recomputing default of `AttentionOps.attention_grad` and
against finite differences, strided and broadcast operands, rows with every key masked, tiles
within WebGPU's default workgroup memory, and the composite for what the kernels do not take.
(Values and gradients on every backend, in the page too, are in
tests/conformance/test_attention.py.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.backend.numpy import NumpyBackend
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.nn import functional as F
from pyrite.webgpu import WebGpu, autotune, flash_attention, flash_tiles
from pyrite.webgpu.fusion import Fusion

RNG = np.random.default_rng(7)


def _fresh() -> Autodiff:
    """autodiff<fusion<webgpu>> on a device of its own, so its pool's peak is this test's."""
    raw = WebGpu()
    raw.kernels  # noqa: B018 - request the adapter now
    return Autodiff(Fusion(raw))


def _loss_grads(device: pyrite.Backend, arrays: list[np.ndarray], weight: np.ndarray,
                mask: np.ndarray | None = None) -> list[np.ndarray]:
    q, k, v = (pyrite.tensor(a.astype(np.float32), device=device).require_grad() for a in arrays)
    m = None if mask is None else pyrite.tensor(mask.astype(np.float32), device=device)
    out = F.attention(q, k, v, m)
    grads = (out * pyrite.tensor(weight.astype(np.float32), device=device)).sum().backward()
    return [t.grad(grads).numpy() for t in (q, k, v)]


def test_memory_grows_with_the_sequence_not_its_square(gpu) -> None:
    """Forward and backward of 1024 positions never hold the 4 MB score matrix."""
    device = _fresh()
    b, h, n, d = 1, 1, 1024, 8
    arrays = [RNG.normal(size=(b, h, n, d)) for _ in range(3)]
    _loss_grads(device, arrays, RNG.normal(size=(b, h, n, d)))
    peak = pyrite.webgpu.stats(device)["memory"]["peak_bytes"]
    assert peak < n * n * 4 // 4, f"peak {peak} bytes"


@pytest.mark.parametrize("dims, mask_shape", [
    ((2, 2, 70, 37, 9, 5), None),
    ((1, 3, 20, 90, 16, 16), (1, 1, 20, 90)),
    ((2, 1, 65, 65, 4, 7), (2, 1, 1, 65)),
])
def test_kernel_gradients_match_the_recomputing_default(gpu, dims, mask_shape) -> None:
    """The kernels' (dq, dk, dv) against `AttentionOps.attention_grad` on numpy in f64 (the
    default a backend without a fused backward inherits), from the same output gradient."""
    b, h, sq, sk, dk, dv = dims
    q, k, v = (RNG.normal(size=s) for s in ((b, h, sq, dk), (b, h, sk, dk), (b, h, sk, dv)))
    mask = None if mask_shape is None else RNG.normal(size=mask_shape)
    grad = RNG.normal(size=(b, h, sq, dv))
    scale = 0.4
    ref = NumpyBackend()
    prims = [ref.from_data(TensorData(a)) for a in (q, k, v)]
    ref_mask = None if mask is None else ref.from_data(TensorData(mask))
    out = ref.attention(*prims, ref_mask, scale, False, False)
    want = ref.attention_grad(*prims, ref_mask, out, None, ref.from_data(TensorData(grad)),
                              scale, False, False, (True, True, True))

    def up(a: np.ndarray):  # type: ignore[no-untyped-def]
        return gpu.from_data(TensorData(a.astype(np.float32)))

    gpu_mask = None if mask is None else up(mask)
    found = gpu.attention_saving(up(q), up(k), up(v), gpu_mask, scale, False, False)
    assert found is not None
    got = gpu.attention_grad(up(q), up(k), up(v), gpu_mask, found[0], found[1], up(grad),
                             scale, False, False, (True, True, True))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(gpu.to_data(g).to_numpy(), ref.to_data(w).to_numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=f"input {i}")


def test_gradients_against_finite_differences(gpu) -> None:
    """d sum(attention(q, k, v) * w) by the kernels against central differences of the fused
    forward itself (f32, so a wide step and a loose tolerance)."""
    device = pyrite.device("webgpu")
    arrays = [RNG.normal(size=(1, 2, 3, 5)), RNG.normal(size=(1, 2, 4, 5)),
              RNG.normal(size=(1, 2, 4, 3))]
    mask = np.where(RNG.random((1, 1, 3, 4)) < 0.3, -1e4, 0.0)
    mask[..., 0] = 0.0
    weight = RNG.uniform(0.5, 1.5, size=(1, 2, 3, 3))
    got = _loss_grads(Autodiff(device), arrays, weight, mask)

    def loss(xs: list[np.ndarray]) -> float:
        q, k, v, m = (pyrite.tensor(a.astype(np.float32), device=device) for a in (*xs, mask))
        return float((F.attention(q, k, v, m).numpy().astype(np.float64) * weight).sum())

    eps = 1e-2
    for i, a in enumerate(arrays):
        want = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            up, down = [x.copy() for x in arrays], [x.copy() for x in arrays]
            up[i][idx] += eps
            down[i][idx] -= eps
            want[idx] = (loss(up) - loss(down)) / (2 * eps)
        np.testing.assert_allclose(got[i], want, rtol=2e-2, atol=2e-3, err_msg=f"input {i}")


def test_strided_and_broadcast_operands_are_read_in_place(gpu) -> None:
    """Heads split by a permute (as MultiHeadAttention makes them), a mask expanded over batch
    and heads, and a broadcast output gradient give what contiguous copies give."""
    device = Autodiff(pyrite.device("webgpu"))
    b, s, h, d = 2, 40, 3, 8
    raw = [RNG.normal(size=(b, s, h, d)).astype(np.float32) for _ in range(3)]
    mask = np.where(RNG.random((1, 1, s, s)) < 0.2, -1e4, 0.0).astype(np.float32)

    def run(strided: bool) -> list[np.ndarray]:
        ts = [pyrite.tensor(a if strided else np.ascontiguousarray(a.transpose(0, 2, 1, 3)),
                            device=device).require_grad() for a in raw]
        heads = [t.swap_dims(1, 2) if strided else t for t in ts]
        m = pyrite.tensor(mask, device=device)
        m = m.expand((b, h, s, s)) if strided else pyrite.tensor(
            np.ascontiguousarray(np.broadcast_to(mask, (b, h, s, s))), device=device)
        grads = F.attention(*heads, m).sum().backward()
        found = [t.grad(grads).numpy() for t in ts]
        return found if strided else [g.transpose(0, 2, 1, 3) for g in found]

    for g, w in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_row_with_every_key_masked_gives_zero(gpu) -> None:
    """-inf on every key of a row (a fully padded query): the kernels write 0 and give it no
    gradient; the other rows are untouched."""
    device = Autodiff(pyrite.device("webgpu"))
    arrays = [RNG.normal(size=(1, 1, 4, 4)) for _ in range(3)]
    mask = np.zeros((1, 1, 4, 4))
    mask[0, 0, 2] = -np.inf
    q, k, v = (pyrite.tensor(a.astype(np.float32), device=device).require_grad() for a in arrays)
    out = F.attention(q, k, v, pyrite.tensor(mask.astype(np.float32), device=device))
    grads = out.sum().backward()
    values = out.numpy()
    assert np.all(values[0, 0, 2] == 0.0)
    keep = [0, 1, 3]
    s = arrays[0][0, 0, keep] @ arrays[1][0, 0].T / 2.0
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(values[0, 0, keep], (p / p.sum(-1, keepdims=True)) @ arrays[2][0, 0],
                               rtol=1e-5, atol=1e-6)
    dq = q.grad(grads).numpy()
    assert np.all(dq[0, 0, 2] == 0.0) and np.all(np.isfinite(dq))
    assert np.all(np.isfinite(k.grad(grads).numpy()))


@pytest.mark.parametrize("dk, dv", [(1, 1), (5, 33), (32, 32), (64, 64), (128, 128),
                                    (256, 256)])
def test_tiles_fit_webgpu_default_workgroup_memory(dk: int, dv: int) -> None:
    """16 KB (WebGPU's default, what the page gets) holds every head dim the kernels take."""
    cols = flash_attention.tile_rows(16384, dk, dv)
    assert cols >= 1
    assert flash_attention.tile_bytes(cols, dk, dv) <= 16384


def test_what_the_kernels_do_not_take_runs_the_composite(gpu) -> None:
    """Heads wider than MAX_HEAD are not covered and still give softmax(q k^T s) v."""
    d = flash_attention.MAX_HEAD + 4
    q, k, v = (RNG.normal(size=(1, 1, 3, d)) for _ in range(3))
    ts = [gpu.from_data(TensorData(a.astype(np.float32))) for a in (q, k, v)]
    assert not flash_attention.covers(gpu.kernels, *ts, None)
    assert gpu.attention_saving(*ts, None, 0.05, False, False) is None
    s = q[0, 0] @ k[0, 0].T * 0.05
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v[0, 0]
    got = gpu.to_data(gpu.attention(*ts, None, 0.05, False, False)).to_numpy()
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-4, atol=1e-5)


def test_a_compiled_step_replays_the_kernels(gpu) -> None:
    """`pyrite.compile` captures the attention kernels like any other: forward and backward
    replayed give the eager step's values."""
    from pyrite.nn.transformer import MhaInput, MultiHeadAttentionConfig

    device = pyrite.device("autodiff<webgpu>")
    mha = MultiHeadAttentionConfig(16, 2, dropout=0.0).init(device)

    def run(m, x):  # type: ignore[no-untyped-def]
        out = m(MhaInput.self_attn(x)).context
        return out, m.query.weight.grad((out * out).sum().backward())

    step = pyrite.compile(run)
    before = pyrite.webgpu.stats(device)["compile"]["replays"]
    for _ in range(3):
        x = pyrite.tensor(RNG.normal(size=(2, 67, 16)).astype(np.float32), device=device)
        out, grad = step(mha, x)
        want_out, want_grad = run(mha, x)
        np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-6, atol=1e-6)
    assert pyrite.webgpu.stats(device)["compile"]["replays"] == before + 1


@pytest.mark.parametrize("rows", autotune.WORKGROUPS)
def test_every_workgroup_size_autotune_may_pick_agrees(gpu, monkeypatch, rows: int) -> None:
    """The rows a workgroup owns are autotuned per kernel (forward, key_grads, query_grads):
    each candidate, stored as the choice, gives the recomputing default's values."""
    b, h, sq, sk, dk, dv = 1, 2, 70, 37, 9, 5
    sizes = (b * h, sq, sk, dk + dv)
    assert math.prod(autotune.bucket(sizes)) >= autotune.MIN_WORK  # else nothing is tuned
    store = autotune.TuneStore()
    for family in ("attention_forward", "attention_key_grads", "attention_query_grads"):
        key = autotune.key_name((family, DType.F32, autotune.bucket(sizes)))
        store.put(gpu.kernels.runtime.adapter, key, {"choice": str(rows)})
    tuner = autotune.Autotuner(gpu.kernels.runtime, mode="cached", store=store)
    monkeypatch.setitem(gpu.kernels.__dict__, "autotune", tuner)
    q, k, v = (RNG.normal(size=s) for s in ((b, h, sq, dk), (b, h, sk, dk), (b, h, sk, dv)))
    grad = RNG.normal(size=(b, h, sq, dv))
    ref = NumpyBackend()
    prims = [ref.from_data(TensorData(a)) for a in (q, k, v)]
    out = ref.attention(*prims, None, 0.3, False, False)
    want = [ref.to_data(t).to_numpy() for t in (out, *ref.attention_grad(
        *prims, None, out, None, ref.from_data(TensorData(grad)), 0.3, False, False,
        (True, True, True)))]

    def up(a: np.ndarray):  # type: ignore[no-untyped-def]
        return gpu.from_data(TensorData(a.astype(np.float32)))

    found = gpu.attention_saving(up(q), up(k), up(v), None, 0.3, False, False)
    assert found is not None
    got = [found[0], *gpu.attention_grad(up(q), up(k), up(v), None, found[0], found[1],
                                          up(grad), 0.3, False, False, (True, True, True))]
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(gpu.to_data(g).to_numpy(), w, rtol=1e-4, atol=1e-5,
                                   err_msg=f"output {i}")
    assert tuner.stats.stored == 3 and set(tuner.choices().values()) == {str(rows)}


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("dims, causal", [
    ((2, 2, 70, 37, 9, 5), False),
    ((1, 2, 70, 70, 16, 8), True),
    ((2, 1, 33, 150, 12, 20), True),
])
def test_key_gradients_in_one_launch_or_two(gpu, monkeypatch, split, dims, causal) -> None:
    """The key kernel's two forms (dk and dv together, or dk then dv in two launches, the one
    wide heads take) give the recomputing default's gradients, with and without the causal
    flag."""
    monkeypatch.setattr(flash_attention, "SPLIT_KEY_GRADS", 0 if split else 10 ** 6)
    b, h, sq, sk, dk, dv = dims
    q, k, v = (RNG.normal(size=s) for s in ((b, h, sq, dk), (b, h, sk, dk), (b, h, sk, dv)))
    grad = RNG.normal(size=(b, h, sq, dv))
    ref = NumpyBackend()
    prims = [ref.from_data(TensorData(a)) for a in (q, k, v)]
    out = ref.attention(*prims, None, 0.4, False, causal)
    want = [ref.to_data(t).to_numpy() for t in (out, *ref.attention_grad(
        *prims, None, out, None, ref.from_data(TensorData(grad)), 0.4, False, causal,
        (True, True, True)))]

    def up(a: np.ndarray):  # type: ignore[no-untyped-def]
        return gpu.from_data(TensorData(a.astype(np.float32)))

    found = gpu.attention_saving(up(q), up(k), up(v), None, 0.4, False, causal)
    assert found is not None
    got = [found[0], *gpu.attention_grad(up(q), up(k), up(v), None, found[0], found[1],
                                          up(grad), 0.4, False, causal, (True, True, True))]
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(gpu.to_data(g).to_numpy(), w, rtol=1e-4, atol=1e-5,
                                   err_msg=f"output {i}")
    only_v = gpu.attention_grad(up(q), up(k), up(v), None, found[0], found[1], up(grad), 0.4,
                                False, causal, (False, False, True))
    assert only_v[0] is None and only_v[1] is None and only_v[2] is not None
    np.testing.assert_allclose(gpu.to_data(only_v[2]).to_numpy(), want[3], rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("kernels", ["rows", "tiled"])
def test_causal_tiles_past_the_frontier_are_never_read(gpu, monkeypatch, kernels) -> None:
    """With the causal flag a workgroup stops at its last query's frontier (the row kernels:
    ROWS queries when autotune is off; the tiled ones: 64): a NaN value at key 150 reaches the
    queries whose workgroup holds a query that sees it (128 on for ROWS 64 or 128), never the
    first 128; an explicit causal mask reads every key, so the NaN (times a zero weight)
    reaches every row."""
    assert gpu.kernels.autotune.mode == "off" and 150 // flash_attention.ROWS * \
        flash_attention.ROWS == 128
    widths = (1, 1 << 20) if kernels == "tiled" else (0, 0)
    for table in ("TILED_HEADS", "TILED_HEADS_LANES"):
        monkeypatch.setattr(flash_tiles, table, dict.fromkeys(flash_tiles.ENTRIES, widths))
    n, d = 200, 32
    q, k, v = (RNG.normal(size=(1, 1, n, d)).astype(np.float32) for _ in range(3))
    v[0, 0, 150] = np.nan
    ts = [gpu.from_data(TensorData(a)) for a in (q, k, v)]
    found = gpu.attention_saving(*ts, None, 0.3, False, True)
    assert found is not None
    out = gpu.to_data(found[0]).to_numpy()[0, 0]
    assert np.all(np.isfinite(out[:128])) and np.all(np.isnan(out[150:]))
    mask = np.triu(np.full((n, n), -np.inf, np.float32), 1).reshape(1, 1, n, n)
    masked = gpu.attention_saving(*ts, gpu.from_data(TensorData(mask)), 0.3, False, False)
    assert masked is not None
    assert np.all(np.isnan(gpu.to_data(masked[0]).to_numpy()[0, 0, :128]))
