"""Each conv layer of the MNIST guide model and of SqueezeNet 1.1, forward and both gradients, on
pyrite's raw webgpu backend against PyTorch cuDNN (fp32, TF32 off) in the same run.

Layers: the guide model's conv1 (1 -> 8) and conv2 (8 -> 16), 3x3 on 28x28 / 26x26 images at
`--mnist-batch` (64, the training batch), and every conv of SqueezeNet 1.1
(`pyrite.demos.image_classification.squeezenet.SqueezeNet`, whose input sizes are traced by
running it once on numpy at 227x227) at `--squeeze-batch` (16). For each layer and each of
`forward` (conv2d with bias), `input_grad` and `weight_grad` (the backend's
`conv2d_input_grad` / `conv2d_weight_grad`, what Autodiff calls), the kernel pyrite runs is
timed with autotune in its current mode (PYRITE_AUTOTUNE; the choice of each shape bucket is in
the JSON), and `forward_relu` times `relu(conv2d(x, w, b))` on `Fusion` (the conv with its
epilogue) against the raw backend's conv plus a separate relu (`forward_relu_unfused`).
`<op>_direct` and `<op>_gemm` force each op onto the direct kernel and onto the implicit GEMM
with the heuristic's tile (`webgpu/conv_gemm.py`), the two variants autotune chooses between.

Timing: a block is `reps` back-to-back ops then one sync (pyrite: a 4-byte readback; torch:
`torch.cuda.synchronize()`), `reps` grown until a block lasts >= `--min-ms`; the median of
`--iters` blocks after a warm-up. The three ops as dispatched are timed against cuDNN in
`--pair-iters` alternating pairs of blocks (a slow moment of the machine falls on both), after
both have run back to back until nvidia-smi reads the GPU's most SM clock (`--settle-ms`;
`gpu_clock.py`; the clock before, after the warm-up and after the pairs is in each layer's
`sm_clock_mhz` where nvidia-smi exists). A pair with a block over JUMP (2x) its side's fastest
is dropped (`dropped_pairs`; a clock step makes a side jump 3-4x), and with fewer than half
the pairs left the op is warmed and timed once more. Each op's `ratio_<op>` is the ratio of
the steady pairs' medians, `ratio_<op>_range` the lowest and highest ratio of one of them,
and each timing records its spread ((max - min) / median over the blocks) and `host_ms`, the
time to issue one op (before the sync waits for the device). The summary counts the
layer-ops at half of cuDNN's speed by the medians, in every steady pair and in some, and
(`--sweep`) the dispatcher's cost: as dispatched against its own pick launched by hand.
Every pyrite result is checked against torch (or numpy without
CUDA) once before timing (relative error < 1e-4); a failure is reported and exits 1. GFLOP/s
count 2 * multiply-adds of the direct convolution (the same for all three).

    python benchmarks/conv_layers.py --quick --out benchmarks/results/conv_layers_lavapipe.json
    python benchmarks/conv_layers.py --out $OUT/conv.json          # H100: about a minute

`--ops weight_grad` (any comma-separated subset of the three) times only those ops, and
`--only` only the layers whose names contain one of its substrings. `--sweep` also times the
weight gradient's own tiled kernel (`webgpu/conv_wgrad.py`) on each tile and slice length.

`--checked` compiles the implicit GEMM as session 6 did (every naga check, no INTERIOR form;
`webgpu/conv_gemm.py`'s NATIVE_CHECKS and NATIVE_INTERIOR), to time it against the default.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, write_results
from conv_shapes import Layer, flop, mnist_layers, out_shape, squeezenet_layers
from conv_sweep import heuristic_picks, launcher, sweep
from gpu_clock import most_sm_clock, settle, sm_clock_mhz

import pyrite
import pyrite.webgpu
from pyrite import Tensor
from pyrite.activation import relu
from pyrite.data import TensorData
from pyrite.webgpu.fusion import Fusion


def _calibrate(run: Any, sync: Any, min_ms: float) -> int:
    """Ops per block: grown until a block lasts >= `min_ms` (after a warm-up)."""
    run(2)
    sync()
    reps = 1
    while True:
        t0 = time.perf_counter()
        run(reps)
        sync()
        took = time.perf_counter() - t0
        if took * 1e3 >= min_ms or reps >= 4096:
            return reps
        reps = min(4096, max(reps * 2, int(reps * min_ms / 1e3 / max(took, 1e-6))))


def _block(run: Any, sync: Any, reps: int) -> tuple[float, float]:
    """(seconds per op, host seconds per op): the whole block, and until the last op was
    issued (before the sync waits for the device)."""
    t0 = time.perf_counter()
    run(reps)
    t1 = time.perf_counter()
    sync()
    return (time.perf_counter() - t0) / reps, (t1 - t0) / reps


def _stats(times: list[tuple[float, float]], reps: int) -> dict[str, Any]:
    wall = sorted(t for t, _ in times)
    med = statistics.median(wall)
    return {"median_ms": med * 1e3, "reps": reps, "blocks": len(wall),
            "min_ms": wall[0] * 1e3, "max_ms": wall[-1] * 1e3,
            "spread": (wall[-1] - wall[0]) / med if med > 0 else 0.0,
            "host_ms": statistics.median(h for _, h in times) * 1e3,
            "times_ms": [round(t * 1e3, 4) for t, _ in times]}


def _blocks(run: Any, sync: Any, min_ms: float, iters: int) -> dict[str, Any]:
    """Median seconds per op over `iters` blocks of `reps` ops then one sync."""
    reps = _calibrate(run, sync, min_ms)
    return _stats([_block(run, sync, reps) for _ in range(iters)], reps)


JUMP = 2.0  # a block over this many times its side's fastest: the clock or the machine moved


def _steady(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[int]:
    """The pairs where neither block took more than JUMP times its side's fastest block (a
    clock step or a busy moment of the machine lands on one side or jumps 3-4x)."""
    fa, fb = min(t for t, _ in a), min(t for t, _ in b)
    return [i for i, (ta, tb) in enumerate(zip(a, b, strict=True))
            if ta[0] <= JUMP * fa and tb[0] <= JUMP * fb]


def _warm(mine: tuple[Any, Any], theirs: tuple[Any, Any], reps: list[int], clock: Clock,
          settle_ms: float) -> dict[str, Any]:
    """Unless nvidia-smi reads the GPU's most SM clock already, both ops' blocks queued back to
    back until it does (at least `settle_ms`, 2 s at most): the clock before and after and the
    blocks it took; nothing without nvidia-smi."""
    if clock.most is None:
        return {}
    if clock.at_most():
        return {"before": clock.last, "warm_blocks": 0}
    before = clock.last

    def both() -> None:
        mine[0](reps[0])
        theirs[0](reps[1])

    def wait(_: Any) -> None:
        mine[1]()
        theirs[1]()

    passes = settle(both, wait, settle_ms, clock.at_most, 2000)
    return {"before": before, "warmed": clock.last, "warm_blocks": passes}


def _paired(mine: tuple[Any, Any], theirs: tuple[Any, Any], min_ms: float, iters: int,
            clock: Clock, settle_ms: float
            ) -> tuple[dict[str, Any], dict[str, Any], list[float], dict[str, Any]]:
    """pyrite's and torch's op timed in alternating blocks (so a slow moment of the machine
    falls on both), after a warm-up to the GPU's steady clock: their stats over the steady
    pairs (`_steady`), torch / pyrite of each steady pair, and the clock. With fewer than half
    the pairs steady, warmed and timed once more, keeping the series with more steady pairs."""
    reps = [_calibrate(*mine, min_ms), _calibrate(*theirs, min_ms)]
    best: tuple[list[tuple[float, float]], list[tuple[float, float]], list[int]] | None = None
    record: dict[str, Any] = {}
    for attempt in range(2):
        record[f"try{attempt}"] = _warm(mine, theirs, reps, clock, settle_ms)
        a, b = [], []
        for _ in range(iters):
            a.append(_block(*mine, reps[0]))
            b.append(_block(*theirs, reps[1]))
        if clock.most is not None:
            record[f"try{attempt}"]["after"] = sm_clock_mhz()
        keep = _steady(a, b)
        if best is None or len(keep) > len(best[2]):
            best = (a, b, keep)
        if 2 * len(keep) >= iters:
            break
    assert best is not None
    a, b, keep = best
    ratios = [b[i][0] / a[i][0] for i in keep]
    dropped = [i for i in range(iters) if i not in keep]
    ra, rb = _stats([a[i] for i in keep], reps[0]), _stats([b[i] for i in keep], reps[1])
    for stats, times in ((ra, a), (rb, b)):
        stats["times_ms"] = [round(t * 1e3, 4) for t, _ in times]  # every pair, dropped too
        stats["dropped_pairs"] = dropped
    return ra, rb, ratios, record if clock.most is not None else {}


class Clock:
    """The SM clock's most (None without nvidia-smi), whether it reads it now, and the last
    reading (each costs an nvidia-smi call)."""

    def __init__(self) -> None:
        self.most = most_sm_clock()
        self.last: int | None = None

    def at_most(self) -> bool:
        if self.most is None:
            return True
        self.last = sm_clock_mhz()
        return (self.last or 0) >= self.most


class Pyrite:
    """The raw webgpu backend and Fusion over it."""

    def __init__(self) -> None:
        dev = pyrite.device("webgpu")
        self.fused = dev if isinstance(dev, Fusion) else pyrite.device("fusion<webgpu>")
        self.raw = self.fused.inner

    def put(self, a: np.ndarray, fused: bool = False) -> Any:
        b = self.fused if fused else self.raw
        return b.from_data(TensorData(np.ascontiguousarray(a, np.float32)))

    def get(self, t: Any, fused: bool = False) -> np.ndarray:
        b = self.fused if fused else self.raw
        return np.asarray(b.to_data(t).to_numpy())

    def sync(self) -> None:
        self.raw.sync()


def _relu(backend: Any, prim: Any) -> Any:
    return relu(Tensor.from_primitive(prim, backend)).into_primitive()


def _rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / max(float(np.linalg.norm(ref)), 1e-30))


def run_layer(p: Pyrite, torch: Any, layer: Layer, args: argparse.Namespace,
              rng: np.random.Generator, clock: Clock) -> dict[str, Any]:
    x = rng.standard_normal(layer["x"], dtype=np.float32)
    fan_in = np.float32(np.sqrt(np.prod(layer["w"][1:])))
    w = rng.standard_normal(layer["w"], dtype=np.float32) / fan_in
    bias = rng.standard_normal(layer["w"][0], dtype=np.float32)
    dy = rng.standard_normal(out_shape(layer), dtype=np.float32)
    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    raw, fused = p.raw, p.fused
    gx, gw, gb, gdy = p.put(x), p.put(w), p.put(bias), p.put(dy)
    fx, fw, fb = p.put(x, True), p.put(w, True), p.put(bias, True)

    def fwd() -> Any:
        return raw.conv2d(gx, gw, gb, *conv)

    def dgrad() -> Any:
        return raw.conv2d_input_grad(gdy, gw, layer["x"], *conv)

    def wgrad() -> Any:
        return raw.conv2d_weight_grad(gx, gdy, layer["w"], *conv)

    def fwd_relu() -> Any:
        return _relu(fused, fused.conv2d(fx, fw, fb, *conv))

    def fwd_relu_unfused() -> Any:
        return _relu(raw, raw.conv2d(gx, gw, gb, *conv))

    row: dict[str, Any] = {"layer": layer["name"], "x": list(layer["x"]), "w": list(layer["w"]),
                           "stride": list(layer["stride"]), "padding": layer["padding"],
                           "dilation": list(layer["dilation"]), "groups": layer["groups"],
                           "gflop": flop(layer) / 1e9}
    # references: torch on the GPU, else numpy through pyrite's own numpy backend
    pt = _torch_ops(torch, x, w, bias, dy, layer) if torch is not None else None
    refs = pt["refs"] if pt is not None else _numpy_refs(x, w, bias, dy, layer)
    got = {"forward": p.get(fwd()), "input_grad": p.get(dgrad()),
           "weight_grad": p.get(wgrad()), "forward_relu": p.get(fwd_relu(), True)}
    row["rel_err"] = {k: _rel(v, refs[k]) for k, v in got.items()}
    row["ok"] = all(e < 1e-4 for e in row["rel_err"].values())

    def timed(make: Any, hold: list[Any]) -> dict[str, Any]:
        return _blocks(_looped(make, hold, fused), p.sync, args.min_ms, args.iters)

    hold: list[Any] = []
    main = {name: f for name, f in (("forward", fwd), ("input_grad", dgrad),
                                    ("weight_grad", wgrad)) if name in args.ops}
    ops = {name: f for name, f in (("forward_relu", fwd_relu),
                                   ("forward_relu_unfused", fwd_relu_unfused),
                                   *_variants(p, layer, gx, gw, gb, gdy).items())
           if name.startswith(tuple(args.ops))}
    for name, make in main.items():
        if pt is None:
            ops = {name: make, **ops}
            continue
        # the three ops against cuDNN in alternating blocks, `--pair-iters` pairs
        mine = (_looped(make, hold, fused), p.sync)
        theirs = (pt["ops"][name], torch.cuda.synchronize)
        r, t, ratios, clocked = _paired(mine, theirs, args.min_ms, args.pair_iters, clock,
                                        args.settle_ms)
        if clocked:  # where nvidia-smi reads the SM clock
            row.setdefault("sm_clock_mhz", {})[name] = clocked
        for stats in (r, t):
            stats["gflops"] = flop(layer) / (stats["median_ms"] * 1e-3) / 1e9
        row[name], row["torch_" + name] = r, t
        row[f"ratio_{name}"] = t["median_ms"] / r["median_ms"]
        row[f"ratio_{name}_range"] = [min(ratios), max(ratios)]
    for name, make in ops.items():
        r = timed(make, hold)
        r["gflops"] = flop(layer) / (r["median_ms"] * 1e-3) / 1e9
        row[name] = r
    if args.sweep:
        picks = heuristic_picks(p, layer)
        keep = args.variants.split(",") if args.variants else [""]
        swept = sweep(p, layer, gx, gw, gb, gdy)
        for op, pick in picks.items():  # a pick the sweep's lists lack (channels/16s3)
            if pick not in swept[op] and op != "weight_grad":
                swept[op][pick] = launcher(p, layer, op, pick, gx, gw, gb, gdy)
        row["sweep"], failed = {}, {}
        for op, variants in swept.items():
            if op not in args.ops:
                continue
            row["sweep"][op] = {}
            for name, make in variants.items():
                if name != picks[op] and not any(name.startswith(v) for v in keep):
                    continue
                try:
                    row["sweep"][op][name] = round(timed(make, hold)["median_ms"], 5)
                except Exception as e:  # a form this device or shape refuses: noted, not fatal
                    failed[f"{op} {name}"] = f"{type(e).__name__}: {str(e)[:160]}"
        if failed:
            row["sweep_failed"] = failed
        row["heuristic"] = picks
    hold.clear()
    if pt is not None and "forward" in args.ops:
        r = _blocks(pt["ops"]["forward_relu"], torch.cuda.synchronize, args.min_ms, args.iters)
        r["gflops"] = flop(layer) / (r["median_ms"] * 1e-3) / 1e9
        row["torch_forward_relu"] = r
        for name in ("forward", "input_grad", "weight_grad", "forward_relu"):
            for mine in (f"{name}_direct", f"{name}_gemm", *(() if name in main else (name,))):
                if mine in row:
                    row[f"ratio_{mine}"] = (row["torch_" + name]["median_ms"]
                                            / row[mine]["median_ms"])
    return row


def _looped(make: Any, hold: list[Any], fused: Any) -> Any:
    """`run(reps)`: `reps` calls of `make`. Fusion's results are held (a dropped one need not
    be computed); a raw result is dropped at once, so the next op gets the same pooled buffer
    and waits for this one, as a layer waits for the one before it. Held raw outputs would let
    independent ops overlap on the GPU, which cuDNN's one stream never does."""
    def run(reps: int) -> None:
        hold.clear()
        for _ in range(reps):
            r = make()
            if isinstance(r, pyrite.webgpu.fusion.FusedTensor):
                hold.append(r)
        if hold:
            fused.sync()
    return run


def _variants(p: Pyrite, layer: Layer, gx: Any, gw: Any, gb: Any,
              gdy: Any) -> dict[str, Any]:
    """Each of the three ops forced onto the direct kernel and onto the implicit GEMM with the
    heuristic's tile (what autotune chooses between), into preallocated outputs."""
    from pyrite.dtype import DType
    from pyrite.webgpu import conv as wconv
    from pyrite.webgpu import conv_gemm as cg

    k = p.raw.kernels
    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    xs, groups = layer["x"], layer["groups"]
    y = k.empty(out_shape(layer), DType.F32, "bench")
    dx = k.empty(xs, DType.F32, "bench")
    dw = k.empty(layer["w"], DType.F32, "bench")
    out_hw = y.shape[2:]

    def tile(mode: int) -> Any:
        return cg.default_tile(k, cg.sizes(xs, layer["w"], out_hw, groups, mode), groups, mode)

    t_f, t_d, t_w = tile(cg.FORWARD), tile(cg.INPUT_GRAD), tile(cg.WEIGHT_GRAD)
    return {
        "forward_direct": lambda: wconv.launch_variant(k, "forward", "direct", y, gx, gw, gb,
                                                        xs, *conv),
        "forward_gemm": lambda: cg.run(k, t_f, y, gx, gw, gb, xs, *conv, cg.FORWARD),
        "input_grad_direct": lambda: wconv.launch_variant(k, "input_grad", "direct", dx, gdy,
                                                           gw, None, xs, *conv),
        "input_grad_gemm": lambda: cg.run(k, t_d, dx, gdy, gw, None, xs, *conv,
                                          cg.INPUT_GRAD),
        "weight_grad_direct": lambda: wconv.launch_variant(k, "weight_grad", "direct", dw, gx,
                                                            gdy, None, xs, *conv),
        "weight_grad_gemm": lambda: cg.run(k, t_w, dw, gx, gdy, None, xs, *conv,
                                           cg.WEIGHT_GRAD),
    }



def _summary(rows: list[dict[str, Any]], ops: tuple[str, ...] = ("forward", "input_grad",
                                                                "weight_grad")) -> dict[str, Any]:
    """How many layer-ops reach half of cuDNN's speed: as dispatched (`<op>` rows), and with
    --sweep, for the heuristic's pick and for the fastest variant, each launched directly."""
    out: dict[str, Any] = {"layer_ops": len(rows) * len(ops)}
    timed = [(r, op) for r in rows for op in ops if f"ratio_{op}" in r]
    if not timed:
        return out
    out["dispatched_at_half"] = sum(r[f"ratio_{op}"] >= 0.5 for r, op in timed)
    out["dispatched_at_half_by_op"] = {op: sum(r[f"ratio_{o}"] >= 0.5 for r, o in timed
                                               if o == op) for op in ops}
    ranged = [(r, op) for r, op in timed if f"ratio_{op}_range" in r]
    if ranged:  # over the alternating pairs of blocks: at half in every pair, in some pair
        out["dispatched_at_half_every_pair"] = sum(r[f"ratio_{op}_range"][0] >= 0.5
                                                   for r, op in ranged)
        out["dispatched_at_half_some_pair"] = sum(r[f"ratio_{op}_range"][1] >= 0.5
                                                  for r, op in ranged)
        out["dropped_pairs"] = sum(len(r[op]["dropped_pairs"]) for r, op in ranged
                                   if "dropped_pairs" in r[op])
        out["median_spread"] = round(statistics.median(
            r[op]["spread"] for r, op in ranged), 4)
    swept = [(r, op) for r, op in timed if "sweep" in r]
    if swept:
        out["heuristic_at_half"] = sum(
            r[f"torch_{op}"]["median_ms"] / r["sweep"][op][r["heuristic"][op]] >= 0.5
            for r, op in swept if r["heuristic"][op] in r["sweep"][op])
        out["best_at_half"] = sum(
            r[f"torch_{op}"]["median_ms"] / min(r["sweep"][op].values()) >= 0.5
            for r, op in swept)
        # the dispatcher's cost: as dispatched against its own pick launched by hand, us
        gaps = sorted(1e3 * (r[op]["median_ms"] - r["sweep"][op][r["heuristic"][op]])
                      for r, op in swept if r["heuristic"][op] in r["sweep"][op]) or [0.0]
        out["dispatch_gap_us"] = {"median": round(statistics.median(gaps), 2),
                                  "min": round(gaps[0], 2), "max": round(gaps[-1], 2)}
    return out


def _numpy_refs(x: np.ndarray, w: np.ndarray, bias: np.ndarray, dy: np.ndarray,
                layer: Layer) -> dict[str, np.ndarray]:
    b = pyrite.device("numpy")
    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])

    def put(a: np.ndarray) -> Any:
        return b.from_data(TensorData(a.astype(np.float32)))

    def get(t: Any) -> np.ndarray:
        return np.asarray(b.to_data(t).to_numpy())

    out = get(b.conv2d(put(x), put(w), put(bias), *conv))
    return {"forward": out, "forward_relu": np.maximum(out, 0),
            "input_grad": get(b.conv2d_input_grad(put(dy), put(w), layer["x"], *conv)),
            "weight_grad": get(b.conv2d_weight_grad(put(x), put(dy), layer["w"], *conv))}


def _torch_ops(torch: Any, x: np.ndarray, w: np.ndarray, bias: np.ndarray, dy: np.ndarray,
               layer: Layer) -> dict[str, Any]:
    F = torch.nn.functional
    (pt, pb), (pl, pr) = layer["padding"]
    if pt != pb or pl != pr:
        raise SystemExit(f"{layer['name']}: asymmetric padding is not timed against torch")
    kw = {"stride": layer["stride"], "padding": (pt, pl), "dilation": layer["dilation"],
          "groups": layer["groups"]}
    tx, tw, tb, tdy = (torch.from_numpy(a).cuda() for a in (x, w, bias, dy))
    grad = torch.nn.grad
    ops = {
        "forward": lambda: F.conv2d(tx, tw, tb, **kw),
        "input_grad": lambda: grad.conv2d_input(tx.shape, tw, tdy, **kw),
        "weight_grad": lambda: grad.conv2d_weight(tx, tw.shape, tdy, **kw),
        "forward_relu": lambda: F.relu(F.conv2d(tx, tw, tb, **kw)),
    }
    refs = {k: f().cpu().numpy() for k, f in ops.items()}

    def looped(f: Any) -> Any:
        def run(reps: int) -> None:
            for _ in range(reps):
                f()
        return run

    return {"refs": refs, "ops": {k: looped(f) for k, f in ops.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mnist-batch", type=int, default=64)
    ap.add_argument("--squeeze-batch", type=int, default=16)
    ap.add_argument("--only", default="", help="comma-separated substrings of layer names")
    ap.add_argument("--quick", action="store_true",
                    help="batch 2 for both models, 2 blocks of >= 5 ms (lavapipe)")
    ap.add_argument("--min-ms", type=float, default=10.0)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--pair-iters", type=int, default=9,
                    help="alternating pyrite/cuDNN block pairs for the three ops (median)")
    ap.add_argument("--settle-ms", type=float, default=30.0,
                    help="before each op's pairs, both ops back to back for at least this "
                         "long, then until nvidia-smi reads the most SM clock (2 s at most; "
                         "no warm-up without nvidia-smi)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--sweep", action="store_true",
                    help="also time every op on the direct kernel and each GEMM form and tile")
    ap.add_argument("--variants", default="",
                    help="with --sweep: time only the variants whose names start with one of "
                         "these comma-separated prefixes (and each op's heuristic pick)")
    ap.add_argument("--checked", action="store_true",
                    help="compile the implicit GEMM with every naga check and no INTERIOR form"
                         " (session 6's modules), to time against the default")
    ap.add_argument("--ops", default="forward,input_grad,weight_grad",
                    help="comma-separated ops to time (forward, input_grad, weight_grad)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    every = ("forward", "input_grad", "weight_grad")
    unknown = set(args.ops.split(",")) - set(every)
    if unknown:
        ap.error(f"--ops: unknown {', '.join(sorted(unknown))}; use a comma-separated subset "
                 f"of {','.join(every)}")
    args.ops = tuple(op for op in every if op in args.ops.split(","))
    if args.checked:
        from pyrite.webgpu import conv_gemm
        from pyrite.webgpu.unchecked_module import ALL_CHECKS
        conv_gemm.NATIVE_CHECKS, conv_gemm.NATIVE_INTERIOR = ALL_CHECKS, False
    if args.quick:
        args.mnist_batch, args.squeeze_batch, args.min_ms, args.iters = 2, 1, 5.0, 2
        args.pair_iters = 2
    torch = None if args.no_torch else cuda_torch()
    layers = mnist_layers(args.mnist_batch) + squeezenet_layers(args.squeeze_batch)
    if args.only:
        keys = args.only.split(",")
        layers = [lay for lay in layers if any(k in lay["name"] for k in keys)]
    p = Pyrite()
    clock = Clock()
    info = p.raw.kernels.runtime.adapter
    print(f"adapter: {info.name} ({info.backend}, {info.adapter_type})", flush=True)
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for layer in layers:
        row = run_layer(p, torch, layer, args, rng, clock)
        rows.append(row)
        if args.out:  # the layers so far, in case the run is cut short
            write_results(args.out, {"benchmark": "conv_layers", "partial": True,
                                     "summary": _summary(rows), "layers": rows})
        line = f"{row['layer']:32s}"
        for name in args.ops:
            line += f" {name} {row[name]['gflops']:8.1f}"
            if f"ratio_{name}" in row:
                line += f" ({row[f'ratio_{name}']:.2f}x)"
            line += (f" [d {row[name + '_direct']['gflops']:.0f}"
                     f" g {row[name + '_gemm']['gflops']:.0f}]")
        if "forward" in args.ops:
            gain = row["forward_relu_unfused"]["median_ms"] / row["forward_relu"]["median_ms"]
            line += f" relu unfused/fused {gain:.2f}"
        print(line + ("" if row["ok"] else f"  FAIL {row['rel_err']}"), flush=True)
    tune = p.raw.kernels.autotune
    result = {
        "benchmark": "conv_layers",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": {"machine": platform.machine(), "cpu": cpu_name(), "cpus": os.cpu_count(),
                 "python": platform.python_version()},
        "device": {"adapter": info.name, "backend": info.backend, "type": info.adapter_type,
                   "driver": info.description},
        "peer": ({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
                  "allow_tf32": torch.backends.cudnn.allow_tf32} if torch is not None else None),
        "method": {"min_ms": args.min_ms, "iters": args.iters, "mnist_batch": args.mnist_batch,
                   "squeeze_batch": args.squeeze_batch, "settle_ms": args.settle_ms,
                   "most_sm_clock_mhz": clock.most, "jump": JUMP,
                   "autotune": tune.mode, "gemm_checked": args.checked, "ops": list(args.ops),
                   "ratio": "torch ms / pyrite ms (> 1: pyrite faster)"},
        "autotune_choices": tune.choices(),
        "autotune_ms": tune.timings(),
        "summary": _summary(rows, args.ops),
        "layers": rows,
    }
    if args.out:
        write_results(args.out, result)
        print(f"wrote {args.out}")
    print("summary:", result["summary"])
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
