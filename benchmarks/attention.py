"""Fused attention on pyrite's webgpu backend (flash attention's WGSL kernels,
`webgpu/flash_attention.py`) against the composite (q k^T, softmax, @ v with the score matrix in
memory) and a peer, in the same run.

Peer: PyTorch CUDA `scaled_dot_product_attention` (fp32, TF32 off) when a CUDA GPU is present;
none otherwise (lavapipe runs report pyrite's two variants only).

1. Memory: peak device memory (`pyrite.webgpu.stats(...)["memory"]["peak_bytes"]`, the buffer
   pool's high-water mark) of forward + backward at batch 1, 2 heads, 2048 positions, head dim
   32, for the fused op (`F.attention`) and the composite (`F.attention_weights(q, k) @ v`),
   each on a device of its own so neither peak includes the other. Target: fused <= 12 MB.
2. Time: forward + backward (d sum(out * w) / d q, k, v on autodiff<fusion<webgpu>>) and
   forward only, at batch 8, 8 heads, 1024 positions, head dim 64 (--quick: 1, 2, 256, 32), for
   the fused op, the composite and torch (the same loss, `out.backward(w)` being its gradient).
   Target: fused forward + backward >= 0.5x torch (ratio = torch time / pyrite time).
   `fused_kernels` times the fused kernels alone on the raw backend (forward; the backward's dq
   part; its dk, dv part), with TFLOP/s, as the rule picks them (`default`, `causal`), and at
   head dims 16/32/48/64/80/96/128 (the timed shape's batch, heads and positions) with the
   register-blocked kernels (`tiled`), the row kernels one thread a row (`rows`) and, where
   the device has usable subgroups, with `flash_lanes.SHAPES` (`rows_lanes`) forced: the
   measurement behind `flash_tiles.TILED_HEADS` and `flash_lanes.LANE_HEADS`.
   `fused_batched`: the same with the submit policy's work rule off (`batch.POLICY.work` =
   inf: the attention kernels wait in the batch until the sync, as kernels that give no cost
   do). `fused_compiled`: the same forward + backward step through `pyrite.compile` (captured
   twice, then replayed: one submit a step), `fused_compiled_split` replayed in the work rule's
   parts (`POLICY.split_replays`), `fused_compiled_cold` timed from its first call as session 5
   did (see `steps`). `cpu_ms_per_step`: this process's CPU time a step (near the wall time
   when the host, not the GPU, sets the pace). `latency_ms`: one step, then a sync (median of
   --iters x 4): the time a single step waits for.
3. Causal: forward + backward with the op's causal flag (`F.attention(..., causal=True)`: no
   mask tensor, the tiles past the frontier skipped) against torch's `is_causal=True`.

Before timing, the fused op's output and gradients are checked against numpy (float64) on a
small ragged cases (a causal mask; the causal flag); exit status 1 if they differ.
--kernels-only: the check and `fused_kernels` only (for comparing two versions of the kernels
in one GPU session). --row-shapes: the check and `row_shapes` only (the row kernels' rows a
thread, threads a row, keys a tile and rows a workgroup at the timed shape). --steps-only: the
check and the forward + backward steps (fused eager and compiled, with and without the work
rule, and torch), no composite, causal or kernels alone (about 30 s on the H100).
Timing: wall clock; a block is `reps` evaluations then a sync (`device.sync()`, which waits for
the GPU; `torch.cuda.synchronize()`), `reps` chosen so a block takes >= --min-ms; after a warm-up
block, --iters blocks each, the median (and best) per evaluation.

    python benchmarks/attention.py --quick --out benchmarks/results/attention_lavapipe.json
    python benchmarks/attention.py --out benchmarks/results/attention_h100.json   # on a GPU
    python benchmarks/attention.py --kernels-only --iters 3 --min-ms 30 --out kernels.json
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, timed, write_results

import pyrite
import pyrite.webgpu
from pyrite.backend.autodiff import Autodiff
from pyrite.data import TensorData
from pyrite.nn import functional as F
from pyrite.webgpu import WebGpu, batch, flash_attention, flash_lanes, flash_tiles
from pyrite.webgpu.fusion import Fusion

MB = 1 << 20


def fresh_device() -> Any:
    """autodiff<fusion<webgpu>> on a new WebGPU device (its own buffer pool and peak)."""
    raw = WebGpu()
    raw.kernels  # noqa: B018 - request the adapter now
    return Autodiff(Fusion(raw))


def composite(q: Any, k: Any, v: Any, mask: Any = None) -> Any:
    """The attention op's composite: the weights (the score matrix in memory), then @ v."""
    return F.attention_weights(q, k, mask) @ v


def fused(q: Any, k: Any, v: Any, mask: Any = None) -> Any:
    return F.attention(q, k, v, mask)


def fused_causal(q: Any, k: Any, v: Any, mask: Any = None) -> Any:
    return F.attention(q, k, v, mask, causal=True)


def step(fn: Callable[..., Any], device: Any, arrays: list[np.ndarray], weight: np.ndarray,
         mask: np.ndarray | None = None) -> list[np.ndarray]:
    """Forward and backward of sum(fn(q, k, v) * w); the gradients of q, k and v."""
    q, k, v = (pyrite.tensor(a, device=device).require_grad() for a in arrays)
    m = None if mask is None else pyrite.tensor(mask, device=device)
    grads = (fn(q, k, v, m) * pyrite.tensor(weight, device=device)).sum().backward()
    return [t.grad(grads).numpy() for t in (q, k, v)]


def reference(arrays: list[np.ndarray], weight: np.ndarray,
              mask: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """numpy float64: the output and the gradients of sum(out * w)."""
    q, k, v = (a.astype(np.float64) for a in arrays)
    scale = 1 / np.sqrt(q.shape[-1])
    s = q @ k.swapaxes(-1, -2) * scale + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = p @ v
    dp = weight @ v.swapaxes(-1, -2)
    ds = p * (dp - (weight * out).sum(-1, keepdims=True))
    return out, [ds @ k * scale, ds.swapaxes(-1, -2) @ q * scale, p.swapaxes(-1, -2) @ weight]


def check() -> str | None:
    """The fused op against numpy on ragged causal cases (an explicit mask at head dims 20 (the
    row kernels) and 128; the causal flag at head dim 64); a message when they differ."""
    rng = np.random.default_rng(0)
    b, h, n = 2, 3, 77
    for fn, d, explicit in ((fused, 20, True), (fused_causal, 64, False), (fused, 128, True)):
        arrays = [rng.normal(size=(b, h, n, d)).astype(np.float32) for _ in range(3)]
        weight = rng.normal(size=(b, h, n, d)).astype(np.float32)
        mask = np.triu(np.full((n, n), -1e4, np.float32), 1).reshape(1, 1, n, n)
        want_out, want = reference(arrays, weight, mask)
        device = pyrite.device("autodiff<webgpu>")
        t = [pyrite.tensor(a, device=device) for a in arrays]
        given = mask if explicit else None
        out = fn(*t, None if given is None else pyrite.tensor(given, device=device)).numpy()
        got = step(fn, device, arrays, weight, given)
        for name, g, w in zip(("out", "dq", "dk", "dv"), [out, *got], [want_out, *want],
                              strict=True):
            err = float(np.abs(g - w).max())
            if err > 1e-3 * max(1.0, float(np.abs(w).max())):
                return f"{fn.__name__} d={d} {name}: max error {err:.3g}"
    return None


def peak_memory(fn: Callable[..., Any], shape: tuple[int, int, int, int]) -> dict[str, Any]:
    """Peak pool bytes of one forward + backward of `fn` on a fresh device."""
    rng = np.random.default_rng(1)
    device = fresh_device()
    arrays = [rng.normal(size=shape).astype(np.float32) for _ in range(3)]
    step(fn, device, arrays, rng.normal(size=shape).astype(np.float32))
    device.sync()
    peak = pyrite.webgpu.stats(device)["memory"]["peak_bytes"]
    return {"peak_bytes": peak, "peak_mb": round(peak / MB, 3)}


def pyrite_runs(fn: Callable[..., Any], shape: tuple[int, int, int, int]
                ) -> tuple[Callable[[int], None], Callable[[int], None], Callable[[], None]]:
    """(forward + backward, forward only, sync) of `fn` on autodiff<fusion<webgpu>>."""
    rng = np.random.default_rng(2)
    device = pyrite.device("autodiff<webgpu>")
    q, k, v = (pyrite.tensor(rng.normal(size=shape).astype(np.float32),
                             device=device).require_grad() for _ in range(3))
    w = pyrite.tensor(rng.normal(size=shape).astype(np.float32), device=device)
    kept: list[Any] = []

    def both(reps: int) -> None:
        for _ in range(reps):
            grads = (fn(q, k, v) * w).sum().backward()
            kept[:] = [q.grad(grads), k.grad(grads), v.grad(grads)]

    inner = device.inner
    flush = getattr(inner, "flush", lambda: None)  # fusion's stream, so the output is computed
    qi, ki, vi = (pyrite.tensor(rng.normal(size=shape).astype(np.float32), device=inner)
                  for _ in range(3))

    def forward(reps: int) -> None:
        for _ in range(reps):
            kept[:] = [fn(qi, ki, vi)]
            flush()

    return both, forward, device.sync


def compiled_runs(fn: Callable[..., Any], shape: tuple[int, int, int, int], warm: bool = True
                  ) -> tuple[Callable[[int], None], Callable[[], None]]:
    """(forward + backward, sync) of `fn` as `pyrite_runs`, the step through `pyrite.compile`:
    captured on its first two calls, replayed from the third (no Python per op); `warm`: those
    calls and one replay made before returning."""
    rng = np.random.default_rng(2)
    device = pyrite.device("autodiff<webgpu>")
    q, k, v = (pyrite.tensor(rng.normal(size=shape).astype(np.float32),
                             device=device).require_grad() for _ in range(3))
    w = pyrite.tensor(rng.normal(size=shape).astype(np.float32), device=device)

    def step(q: Any, k: Any, v: Any, w: Any) -> tuple[Any, Any, Any]:
        grads = (fn(q, k, v) * w).sum().backward()
        return q.grad(grads), k.grad(grads), v.grad(grads)

    replayed = pyrite.compile(step)
    kept: list[Any] = []

    def both(reps: int) -> None:
        for _ in range(reps):
            kept[:] = replayed(q, k, v, w)

    if warm:  # two captures (the second checks the first), then a replay: timing sees replays
        both(3)
        device.sync()
        assert replayed.replays == 1, f"not replayed ({replayed.fallbacks} fallbacks)"
    return both, device.sync


def latency_ms(run: Callable[[int], None], sync: Callable[[], None], iters: int) -> float:
    """Milliseconds from the start of one step to the end of its sync (after a sync): the
    median of `iters` steps."""
    per = []
    for _ in range(iters):
        sync()
        start = time.perf_counter()
        run(1)
        sync()
        per.append(time.perf_counter() - start)
    return round(sorted(per)[len(per) // 2] * 1e3, 3)


def steps(shape: tuple[int, int, int, int], min_ms: float, iters: int,
          timing: dict[str, Any]) -> None:
    """The forward + backward step in `timing`: eager with the submit policy's work rule
    (`fused`) and without it (`fused_batched`); compiled, one submit a replay
    (`fused_compiled`) and in the work rule's parts (`fused_compiled_split`,
    `POLICY.split_replays`); each with its CPU ms a step, one-step latency, dispatches and
    submits a step. `fused_compiled_cold`: the compiled step timed as session 5 did, from its
    first call (the warm-up and the first block are its two captures, so a block is one step
    and the first replays build their bind groups), to show what that measured."""
    policy = batch.POLICY
    saved = policy.work, policy.split_replays
    try:
        for name, rule, split, compiled in (
                ("fused", saved[0], False, False), ("fused_batched", math.inf, False, False),
                ("fused_compiled", saved[0], False, True),
                ("fused_compiled_split", saved[0], True, True)):
            policy.work, policy.split_replays = rule, split
            if compiled:
                both, sync = compiled_runs(fused, shape)
            else:
                both, _, sync = pyrite_runs(fused, shape)
            entry = timing.setdefault(name, {})
            entry["forward_backward"] = timed(both, sync, min_ms, iters)
            entry["cpu_ms_per_step"] = cpu_ms(both, sync, 16)
            entry["latency_ms"] = latency_ms(both, sync, 4 * iters)
            entry |= per_step(both, sync)
            print(name, entry, flush=True)
        policy.work, policy.split_replays = saved
        both, sync = compiled_runs(fused, shape, warm=False)
        timing["fused_compiled_cold"] = {"forward_backward": timed(both, sync, min_ms, 3)}
        print("fused_compiled_cold", timing["fused_compiled_cold"], flush=True)
    finally:
        policy.work, policy.split_replays = saved


def per_step(run: Callable[[int], None], sync: Callable[[], None], reps: int = 8
             ) -> dict[str, float]:
    """Dispatches and submits a step (the runtime's counters over `reps` steps and a sync,
    whose readback adds one submit)."""
    sync()
    before = pyrite.webgpu.stats("webgpu")["runtime"]
    run(reps)
    sync()
    after = pyrite.webgpu.stats("webgpu")["runtime"]
    return {f"{name}_per_step": round((after[name] - before[name]) / reps, 3)
            for name in ("dispatches", "submits")}


def cpu_ms(run: Callable[[int], None], sync: Callable[[], None], reps: int) -> float:
    """This process's CPU milliseconds a step over `reps` steps: near the step's wall time
    when the host, not the GPU, sets the pace."""
    run(1)
    sync()
    start = time.process_time()
    run(reps)
    sync()
    return round((time.process_time() - start) / reps * 1e3, 3)


#: multiply-adds x 2 per (query, key) pair and head-dim element: the forward's two products,
#: the dq part's three (s, dp, ds k), the dk/dv part's four (s, dp, p^T dout, ds^T q)
FLOPS = {"forward": 4, "backward_dq": 6, "backward_dk_dv": 8}
#: the tiled kernels' (quads of rows a thread, column groups, head-dim chunk) timed apart
CONFIGS = ((2, 8, 16), (2, 8, 32), (2, 4, 32), (1, 8, 64), (1, 8, 32), (1, 4, 16))


def set_rule(rule: dict[str, tuple[int, int]]) -> None:
    """The register-blocked kernels' head widths per kernel (`flash_tiles.TILED_HEADS` and
    `TILED_HEADS_LANES` alike)."""
    flash_tiles.TILED_HEADS = dict(rule)
    flash_tiles.TILED_HEADS_LANES = dict(rule)


def kernel_times(shape: tuple[int, int, int, int], min_ms: float, iters: int,
                 heads: tuple[int, ...]) -> dict[str, Any]:
    """The fused kernels one at a time on the raw backend: the forward, the backward's dq part
    (row statistics + dq) and its dk, dv part (row statistics + dk and dv), each with its
    TFLOP/s (causal: half the pairs), for the kernels the rule picks (`default`, `causal`) and
    forcing the register-blocked (`tiled`) or the row kernels (`rows`) at each head dim of
    `heads` (`d_N`): what `flash_tiles.TILED_HEADS` is measured by; and the tiled kernels at
    the timed head dim with each of CONFIGS forced (`tiled_qmQ_gxG_bkK`, where it fits)."""
    rng = np.random.default_rng(3)
    gpu = WebGpu()
    result: dict[str, Any] = {}
    chosen = dict(flash_tiles.TILED_HEADS), dict(flash_tiles.TILED_HEADS_LANES)
    lanes = flash_attention.lanes_usable(gpu.kernels)
    budget = gpu.kernels.runtime.limits.max_compute_workgroup_storage_size

    def parts(d: int, causal: bool) -> dict[str, Callable[[], Any]]:
        b, h, n, _ = shape
        q, k, v, g = (gpu.from_data(TensorData(rng.normal(size=(b, h, n, d)).astype(np.float32)))
                      for _ in range(4))
        scale = 1 / np.sqrt(d)
        found = gpu.attention_saving(q, k, v, None, scale, False, causal)
        assert found is not None
        out, lse = found
        return {"forward": lambda: gpu.attention_saving(q, k, v, None, scale, False, causal),
                "backward_dq": lambda: gpu.attention_grad(q, k, v, None, out, lse, g, scale,
                                                          False, causal, (True, False, False)),
                "backward_dk_dv": lambda: gpu.attention_grad(q, k, v, None, out, lse, g, scale,
                                                             False, causal,
                                                             (False, True, True))}

    def measure(d: int, causal: bool, heads_rule: tuple[int, int] | None = None,
                forced: tuple[int, int, int] | None = None,
                lanes: dict[str, tuple[int, int]] | None = None) -> dict[str, Any]:
        if heads_rule is not None:
            set_rule(dict.fromkeys(flash_tiles.ENTRIES, heads_rule))
        if forced is not None:
            flash_tiles.FORCED.update(dict.fromkeys(flash_tiles.ENTRIES, forced))
        if lanes is not None:
            flash_lanes.FORCED.update(lanes)
        try:
            timings: dict[str, Any] = {}
            for part, fn in parts(d, causal).items():
                def run(reps: int, fn: Callable[[], Any] = fn) -> None:
                    for _ in range(reps):
                        fn()
                t = timed(run, gpu.sync, min_ms, iters)
                pairs = shape[0] * shape[1] * shape[2] * shape[2] / (2 if causal else 1)
                t["tflops"] = round(FLOPS[part] * pairs * d / t["median_ms"] / 1e9, 2)
                kernel = {"forward": "forward", "backward_dq": "query"}.get(part, "key")
                if flash_tiles.takes(budget, kernel, d, d, lanes):
                    t["tiles"] = flash_tiles.config(budget, kernel, d, d)
                timings[part] = t
            return timings
        finally:
            flash_tiles.TILED_HEADS, flash_tiles.TILED_HEADS_LANES = chosen
            flash_tiles.FORCED.clear()
            flash_lanes.FORCED.clear()

    one_lane = dict.fromkeys(flash_lanes.SHAPES, (1, 1))
    result["default"] = measure(shape[3], False)
    result["causal"] = measure(shape[3], True)
    for qm, gx, bk in CONFIGS:  # tile shapes and chunks at the timed head dim
        result[f"tiled_qm{qm}_gx{gx}_bk{bk}"] = measure(shape[3], False, (1, 1 << 20),
                                                         (qm, gx, bk))
    for d in heads:
        result[f"d_{d}"] = {"tiled": measure(d, False, (1, 1 << 20)),
                            "rows": measure(d, False, (0, 0), lanes=one_lane)}
        if lanes:
            result[f"d_{d}"]["rows_lanes"] = measure(d, False, (0, 0), lanes=flash_lanes.SHAPES)
    return result


#: the row kernels' (rows a thread, threads a row) timed apart (`row_shapes`)
ROW_SHAPES = ((1, 1), (1, 2), (2, 2), (1, 4), (2, 4), (4, 4))


def row_shapes(shape: tuple[int, int, int, int], min_ms: float, iters: int) -> dict[str, Any]:
    """The row kernels alone at the timed shape with each of ROW_SHAPES (`flash_lanes.FORCED`)
    forced, keys a staged tile (`flash_attention.MAX_COLS`) 32 and 64, rows a workgroup
    (`flash_attention.ROWS`) 128 and 256: `rRPT_lLANES_cCOLS_wROWS`, each kernel's time and
    TFLOP/s and its largest difference from the one-thread-a-row kernels' values (`max_diff`);
    shapes with lanes are skipped where the device has no usable subgroups."""
    rng = np.random.default_rng(4)
    gpu = WebGpu()
    b, h, n, d = shape
    q, k, v, g = (gpu.from_data(TensorData(rng.normal(size=shape).astype(np.float32)))
                  for _ in range(4))
    scale = 1 / np.sqrt(d)
    usable = flash_attention.lanes_usable(gpu.kernels)
    result: dict[str, Any] = {"lanes_usable": usable}
    rule = dict(flash_tiles.TILED_HEADS), dict(flash_tiles.TILED_HEADS_LANES)
    cols0, rows0 = flash_attention.MAX_COLS, flash_attention.ROWS
    set_rule(dict.fromkeys(flash_tiles.ENTRIES, (0, 0)))
    parts: dict[str, Callable[[], Any]] = {
        "forward": lambda: gpu.attention_saving(q, k, v, None, scale, False, False),
        "backward_dq": lambda: gpu.attention_grad(q, k, v, None, out, lse, g, scale, False,
                                                  False, (True, False, False)),
        "backward_dk_dv": lambda: gpu.attention_grad(q, k, v, None, out, lse, g, scale, False,
                                                     False, (False, True, True))}
    found = gpu.attention_saving(q, k, v, None, scale, False, False)
    assert found is not None
    out, lse = found
    values = {"forward": lambda: [found[0]],
              "backward_dq": lambda: [x for x in parts["backward_dq"]() if x is not None],
              "backward_dk_dv": lambda: [x for x in parts["backward_dk_dv"]() if x is not None]}
    want: dict[str, list[np.ndarray]] = {}
    try:
        for rpt, lanes in ROW_SHAPES:
            if lanes > 1 and not usable:
                continue
            for cols, rows in itertools.product((32, 64), (128, 256)):
                flash_lanes.FORCED.update(dict.fromkeys(("forward", "query_grads",
                                                         "key_grads"), (rpt, lanes)))
                flash_attention.MAX_COLS, flash_attention.ROWS = cols, rows
                timings: dict[str, Any] = {}
                for part, fn in parts.items():
                    def run(reps: int, fn: Callable[[], Any] = fn) -> None:
                        for _ in range(reps):
                            fn()
                    t = timed(run, gpu.sync, min_ms, iters)
                    t["tflops"] = round(FLOPS[part] * b * h * n * n * d / t["median_ms"]
                                        / 1e9, 2)
                    if part == "forward":
                        got = [gpu.to_data(x).to_numpy() for x in parts["forward"]()[:1]]
                    else:
                        got = [gpu.to_data(x).to_numpy() for x in values[part]()]
                    want.setdefault(part, got)
                    t["max_diff"] = max(float(np.abs(x - y).max())
                                        for x, y in zip(got, want[part], strict=True))
                    timings[part] = t
                name = f"r{rpt}_l{lanes}_c{cols}_w{rows}"
                result[name] = timings
                print(name, {p: round(t["median_ms"], 3) for p, t in timings.items()},
                      flush=True)
    finally:
        flash_tiles.TILED_HEADS, flash_tiles.TILED_HEADS_LANES = rule
        flash_attention.MAX_COLS, flash_attention.ROWS = cols0, rows0
        flash_lanes.FORCED.clear()
    return result


def pick(kernels: dict[str, Any], d: int) -> dict[str, str]:
    """Per kernel, the fastest of the row kernels (one thread a row, or `flash_lanes.SHAPES`)
    and the tiled configs measured at head dim d, set in flash_tiles (TILED_HEADS, FORCED) and
    flash_lanes.FORCED for the runs that follow; the names picked."""
    parts = {"forward": "forward", "query": "backward_dq", "key": "backward_dk_dv"}
    picked: dict[str, str] = {}
    for kernel, part in parts.items():
        rows = kernels[f"d_{d}"]
        options = {name: rows[name][part]["median_ms"] for name in ("rows", "rows_lanes")
                   if name in rows}
        options |= {name: value[part]["median_ms"] for name, value in kernels.items()
                    if name.startswith("tiled_qm")}
        best = min(options, key=lambda name: options[name])
        picked[kernel] = best
        entry = flash_tiles.ENTRIES[kernel]
        if best.startswith("rows"):
            flash_tiles.TILED_HEADS[kernel] = flash_tiles.TILED_HEADS_LANES[kernel] = (0, 0)
            flash_lanes.FORCED[entry] = flash_lanes.SHAPES[entry] if best == "rows_lanes" \
                else (1, 1)
        else:
            qm, gx, bk = (int(x[2:]) for x in best.split("_")[1:])
            flash_tiles.TILED_HEADS[kernel] = flash_tiles.TILED_HEADS_LANES[kernel] = \
                (1, 1 << 20)
            flash_tiles.FORCED[kernel] = (qm, gx, bk)
    return picked


def torch_runs(torch: Any, shape: tuple[int, int, int, int], causal: bool = False
               ) -> tuple[Callable[[int], None], Callable[[int], None], Callable[[], None]]:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    gen = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn(shape, device="cuda", generator=gen).requires_grad_()
               for _ in range(3))
    w = torch.randn(shape, device="cuda", generator=gen)

    def both(reps: int) -> None:
        for _ in range(reps):
            q.grad = k.grad = v.grad = None
            sdpa(q, k, v, is_causal=causal).backward(w)

    def forward(reps: int) -> None:
        with torch.no_grad():
            for _ in range(reps):
                sdpa(q, k, v, is_causal=causal)

    return both, forward, torch.cuda.synchronize


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true",
                        help="small timing sizes (batch 1, 2 heads, 256 positions, dim 32)")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--min-ms", type=float, default=50.0)
    parser.add_argument("--kernels-only", action="store_true",
                        help="only the check and the kernels alone (`time.fused_kernels`)")
    parser.add_argument("--row-shapes", action="store_true",
                        help="only the check and the row kernels' shapes (`time.row_shapes`)")
    parser.add_argument("--heads", type=str, default=None,
                        help="head dims of `fused_kernels`' sweep, comma separated (default "
                             "16,32,48,64,80,96,128; --quick 16,32,64)")
    parser.add_argument("--steps-only", action="store_true",
                        help="only the check, the memory and the forward + backward steps "
                             "(eager, compiled, with and without the submit policy's work rule)")
    args = parser.parse_args()

    problem = check()
    result: dict[str, Any] = {
        "benchmark": "attention", "host": platform.node(), "cpu": cpu_name(),
        "adapter": str(pyrite.device("webgpu").adapter), "check": problem or "ok",
    }
    if problem:
        print(f"check failed: {problem}", file=sys.stderr)
        if args.out:
            write_results(args.out, result)
        return 1

    shape = (1, 2, 256, 32) if args.quick else (8, 8, 1024, 64)
    heads = (16, 32, 64) if args.quick else (16, 32, 48, 64, 80, 96, 128)
    if args.heads:
        heads = tuple(int(x) for x in args.heads.split(","))
    if args.row_shapes:
        result["time"] = {"shape": list(shape),
                          "row_shapes": row_shapes(shape, args.min_ms, args.iters)}
        if args.out:
            write_results(args.out, result)
        return 0
    if args.kernels_only:
        result["time"] = {"shape": list(shape),
                          "fused_kernels": kernel_times(shape, args.min_ms, args.iters, heads)}
        print("fused kernels", result["time"]["fused_kernels"], flush=True)
        if args.out:
            write_results(args.out, result)
        return 0

    mem_shape = (1, 2, 2048, 32)
    result["memory"] = {
        "shape": list(mem_shape), "target_mb": 12.0,
        "fused": peak_memory(fused, mem_shape),
        "composite": peak_memory(composite, mem_shape),
    }
    print("memory", result["memory"], flush=True)

    timing: dict[str, Any] = {"shape": list(shape), "target_ratio": 0.5}
    runs: dict[str, Any] = {} if args.steps_only else {
        "fused": pyrite_runs(fused, shape), "composite": pyrite_runs(composite, shape),
        "fused_causal": pyrite_runs(fused_causal, shape)}
    torch = None if os.environ.get("PYRITE_BENCH_NO_TORCH") else cuda_torch()
    if torch is not None:
        runs["torch_sdpa"] = torch_runs(torch, shape)
        if not args.steps_only:
            runs["torch_sdpa_causal"] = torch_runs(torch, shape, causal=True)
        timing["torch"] = torch.__version__
    for name, (both, forward, sync) in runs.items():
        timing[name] = {"forward": timed(forward, sync, args.min_ms, args.iters)}
        if name != "fused":  # `steps` times it beside the compiled step
            timing[name]["forward_backward"] = timed(both, sync, args.min_ms, args.iters)
        print(name, timing[name], flush=True)
    steps(shape, args.min_ms, args.iters, timing)
    for ours, peer in (("fused", "composite"), ("fused", "torch_sdpa"),
                       ("fused_batched", "torch_sdpa"), ("fused_compiled", "torch_sdpa"),
                       ("fused_compiled_split", "torch_sdpa"), ("fused_compiled", "fused"),
                       ("fused_compiled_cold", "torch_sdpa"),
                       ("fused_causal", "torch_sdpa_causal"), ("fused_causal", "fused")):
        if peer in timing and ours in timing:
            for part in ("forward_backward", "forward"):
                if part in timing[ours] and part in timing[peer]:
                    timing[f"{ours}_vs_{peer}_{part}"] = round(
                        timing[peer][part]["median_ms"] / timing[ours][part]["median_ms"], 3)
    if args.steps_only:
        result["time"] = timing
        if args.out:
            write_results(args.out, result)
        return 0
    timing["fused_kernels"] = kernel_times(shape, args.min_ms, args.iters, heads)
    print("fused kernels", timing["fused_kernels"], flush=True)
    picked = pick(timing["fused_kernels"], shape[3])
    both, forward, sync = pyrite_runs(fused, shape)
    timing["fused_picked"] = {"choice": picked,
                              "forward_backward": timed(both, sync, args.min_ms, args.iters),
                              "forward": timed(forward, sync, args.min_ms, args.iters)}
    flash_tiles.FORCED.clear()
    flash_lanes.FORCED.clear()
    if "torch_sdpa" in timing:
        timing["fused_picked_vs_torch_sdpa_forward_backward"] = round(
            timing["torch_sdpa"]["forward_backward"]["median_ms"]
            / timing["fused_picked"]["forward_backward"]["median_ms"], 3)
    print("fused, fastest kernel each", timing["fused_picked"], flush=True)
    result["time"] = timing
    if args.out:
        write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
