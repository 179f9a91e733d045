"""Elementwise fusion on pyrite's webgpu backend: fusion on (`Fusion` over `WebGpu`) against
fusion off (the raw `WebGpu` backend, one kernel per op) and a peer, in the same run.

Peers: PyTorch CUDA eager (fp32) when a CUDA GPU is present; numpy otherwise (or with --numpy).

1. GELU, Burn's formula `x * (erf(x / sqrt(2)) + 1) / 2`, on a large f32 tensor (--gelu-size
   elements; 64M by default, 1M on a CPU adapter such as lavapipe): time per evaluation, kernels
   launched per evaluation (the runtime's dispatch counter) and the time of a copy of the same
   tensor on the same backend: pyrite's copy kernel (`kernels.copy`, the raw backend's
   elementwise kernel, one element per thread), a buffer-to-buffer copy
   (`copy_buffer_to_buffer`) and the fused kernel of `x + 0.0` (the generated vec4 code path
   with one op). The target is fused GELU <= 1.5x the copy kernel. Torch runs the same formula,
   `torch.nn.functional.gelu` and `x.clone()`; numpy the formula (erf from scipy when
   installed, else Abramowitz & Stegun 7.1.26 in numpy, the approximation pyrite's WGSL uses)
   and `x.copy()`.
2. Per-op cost with the host included, on 2x2 tensors: one add, and a chain of --chain
   elementwise ops (add, mul, sub, abs, add, sqrt, mul, tanh, div, exp, repeated); per op =
   block time / (evaluations * ops). Each evaluation's result is made real: with fusion on the
   stream is flushed after each evaluation (as the next non-fusable op or a readback would;
   fusion would otherwise skip results nobody holds). The target is fused <= 2x torch per op.

Timing: wall clock; a timed block is `reps` evaluations then a sync (`device.sync()`, which
waits for the GPU; `torch.cuda.synchronize()`), `reps` chosen so a block takes >= --min-ms.
After --warmup blocks each, the variants of a section take turns for --iters rounds (a change
of load on a shared machine hits all of them alike); the median block counts (best also in the
JSON). `in_sync_us` is the part spent in the closing sync: pyrite's runtime submits its batch
only at a sync, a readback or every 256 commands, so for pyrite it is about the GPU time that
the host's recording did not overlap; for torch, what the GPU still had queued at the end.

    python benchmarks/fusion.py --gelu-size 1048576 --out benchmarks/results/fusion_lavapipe.json
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, write_results

import pyrite
import pyrite.webgpu

Run = Callable[[int], None]  # run(k): k evaluations, no sync
INV_SQRT2 = 1.0 / math.sqrt(2.0)


def webgpu_devices() -> tuple[Any, Any]:
    """(fused, raw): `Fusion` over the raw `WebGpu` backend, and that raw backend (one kernel per
    op), whichever of the two the "webgpu" device name gives (PYRITE_FUSION)."""
    from pyrite.webgpu.fusion import Fusion
    dev = pyrite.device("webgpu")
    if isinstance(dev, Fusion):
        return dev, dev.inner
    return pyrite.device("fusion<webgpu>"), dev


def gelu(x: Any, erf: Callable[[Any], Any] | None = None) -> Any:
    """Burn's GELU, written the same way for every framework: x * (erf(x / sqrt(2)) + 1) / 2."""
    e = erf(x / math.sqrt(2.0)) if erf is not None else (x / math.sqrt(2.0)).erf()
    return x * (e + 1.0) / 2.0


def chain(y: Any, b: Any, ops: int, m: Any = None) -> Any:
    """`ops` elementwise ops on y (and b) with bounded values; `m`: numpy, for arrays."""
    for i in range(ops):
        match i % 10:
            case 0:
                y = y + b
            case 1:
                y = y * 0.5
            case 2:
                y = y - 0.25
            case 3:
                y = m.abs(y) if m is not None else y.abs()
            case 4:
                y = y + 1.0
            case 5:
                y = m.sqrt(y) if m is not None else y.sqrt()
            case 6:
                y = y * b
            case 7:
                y = m.tanh(y) if m is not None else y.tanh()
            case 8:
                y = y / 3.0
            case 9:
                y = m.exp(y) if m is not None else y.exp()
    return y


def np_erf(x: np.ndarray) -> np.ndarray:
    """erf in numpy: scipy's when installed, else Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)."""
    try:
        from scipy.special import erf  # type: ignore[import-not-found]
        return erf(x)  # type: ignore[no-any-return]
    except ImportError:
        pass
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(x.dtype)


# ---- timing -------------------------------------------------------------------------------------
@dataclass
class Case:
    """One timed variant: `run(k)` does k evaluations of `per` ops each, `sync` waits for them."""

    run: Run
    sync: Callable[[], None]
    per: int = 1
    reps: int = 1
    times: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)


def no_sync() -> None:
    pass


def measure(cases: dict[str, Case], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Warm each case up and size its block, then time the cases in turns (see the docstring)."""
    target = args.min_ms / 1e3
    for c in cases.values():
        for _ in range(args.warmup):
            c.run(1)
            c.sync()
        while True:  # grow the block until it takes >= target (a single call is too noisy)
            t0 = time.perf_counter()
            c.run(c.reps)
            c.sync()
            took = time.perf_counter() - t0
            if took >= target or c.reps >= args.max_reps:
                break
            grow = 10 if took < target / 10 else max(2, math.ceil(target / took * 1.1))
            c.reps = min(args.max_reps, c.reps * grow)
    for _ in range(args.iters):
        for c in cases.values():
            t0 = time.perf_counter()
            c.run(c.reps)
            t1 = time.perf_counter()
            c.sync()
            t2 = time.perf_counter()
            c.times.append((t2 - t0) / c.reps / c.per)
            c.waits.append((t2 - t1) / c.reps / c.per)
    return {name: {"median_us": round(statistics.median(c.times) * 1e6, 3),
                   "best_us": round(min(c.times) * 1e6, 3),
                   "in_sync_us": round(statistics.median(c.waits) * 1e6, 3),
                   "reps": c.reps, "times_us": [round(t * 1e6, 3) for t in c.times]}
            for name, c in cases.items()}


def runtime_counts(raw: Any) -> Callable[[], dict[str, float]]:
    """A snapshot of the webgpu runtime's counters (dispatches, submits, readbacks; batch.py),
    which the raw and the fused backend share: `pyrite.webgpu.stats()` where it exists."""
    stats = getattr(pyrite.webgpu, "stats", None)
    if stats is not None:
        return lambda: dict(stats(raw)["runtime"])
    batch = raw.kernels.runtime
    batch = getattr(batch, "inner", batch)  # under the GuardedRuntime
    return lambda: dict(batch.stats)


class Counter:
    """Kernels one evaluation launches: the runtime's dispatch count, and Fusion's own count of
    the kernels it generated."""

    def __init__(self, fused: Any, raw: Any) -> None:
        self.counts = runtime_counts(raw)
        self.fusion = fused.stats

    def per_eval(self, c: Case, evals: int = 4) -> dict[str, float]:
        c.sync()
        before, f0 = self.counts(), self.fusion.fused_kernels
        c.run(evals)
        c.sync()
        after = self.counts()
        return {"dispatches": (after["dispatches"] - before["dispatches"]) / evals,
                "submits_incl_sync": (after["submits"] - before["submits"]) / evals,
                "fused_kernels": (self.fusion.fused_kernels - f0) / evals}


def torch_kernels(torch: Any, fn: Callable[[], Any]) -> int | None:
    """CUDA kernels one call of `fn` launches (torch.profiler), None if the profiler fails."""
    try:
        from torch.profiler import ProfilerActivity, profile
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    except Exception:  # noqa: BLE001 - a count is a nice-to-have
        return None


def repeat(fn: Callable[[], Any], flush: Callable[[], None] | None = None) -> Run:
    """run(k): `fn` k times, the newest result held (so a flush computes it), `flush` after each
    (fusion: the evaluation is made real, as its consumer would)."""
    held: list[Any] = [None]

    def run(k: int) -> None:
        for _ in range(k):
            held[0] = fn()
            if flush is not None:
                flush()
    return run


def pyrite_case(dev: Any, fn: Callable[[], Any], per: int = 1) -> Case:
    flush = dev.flush if type(dev).__name__ == "Fusion" else None
    return Case(repeat(fn, flush), dev.sync, per)


def gb_per_s(n: int, us: float) -> float:
    """GB/s counting n f32 read and n written."""
    return round(2 * n * 4 / (us * 1e-6) / 1e9, 2)


def check_gelu(arr: np.ndarray, got: np.ndarray) -> float:
    """Max abs error of a GELU result against float64 math.erf on a sample."""
    idx = np.linspace(0, arr.size - 1, min(arr.size, 4096)).astype(np.int64)
    ref = np.array([v * (math.erf(v * INV_SQRT2) + 1.0) / 2.0 for v in arr[idx].astype(float)])
    return float(np.max(np.abs(got[idx].astype(np.float64) - ref)))


# ---- the sections -------------------------------------------------------------------------------
def bench_gelu(n: int, args: argparse.Namespace, torch: Any, use_numpy: bool,
               devs: dict[str, Any], counter: Counter) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    arr = (rng.standard_normal(n, dtype=np.float32) * 3).astype(np.float32)
    fused, raw = devs["fused"], devs["unfused"]
    xf = pyrite.tensor(arr, device=fused)
    xr = pyrite.tensor(arr, device=raw)
    prim = xr._prim  # the raw backend's GpuTensor
    assert prim.offset == 0 and prim.is_contiguous
    k = raw.kernels
    dst = k.empty(prim.shape, prim.dtype, "bench")
    runtime = k.runtime

    def copy_buffer(reps: int) -> None:
        for _ in range(reps):
            runtime.copy_buffer(prim.block.buffer, 0, dst.block.buffer, 0, n * 4)

    cases = {
        "pyrite/gelu_fused": pyrite_case(fused, lambda: gelu(xf)),
        "pyrite/gelu_unfused": pyrite_case(raw, lambda: gelu(xr)),
        "pyrite/copy_kernel": Case(repeat(lambda: k.copy(prim)), raw.sync),
        "pyrite/copy_buffer": Case(copy_buffer, raw.sync),
        "pyrite/copy_fused_add0": pyrite_case(fused, lambda: xf + 0.0),
    }
    if torch is not None:
        xt = torch.from_numpy(arr).cuda()
        tfns = {"gelu_formula": lambda: gelu(xt, torch.erf),
                "gelu_F": lambda: torch.nn.functional.gelu(xt), "copy_clone": lambda: xt.clone()}
        for label, fn in tfns.items():
            cases[f"torch_cuda/{label}"] = Case(repeat(fn), torch.cuda.synchronize)
    if use_numpy:
        cases["numpy/gelu_formula"] = Case(repeat(lambda: gelu(arr, np_erf)), no_sync)
        cases["numpy/copy"] = Case(repeat(lambda: arr.copy()), no_sync)
    timed = measure(cases, args)
    out: dict[str, Any] = {"elements": n, "bytes": n * 4}
    for key, row in timed.items():
        peer, label = key.split("/")
        row["gbytes_per_s_rw"] = gb_per_s(n, row["median_us"])
        if peer == "pyrite" and label != "copy_buffer":
            row.update(counter.per_eval(cases[key]))
        out.setdefault(peer, {})[label] = row
    py = out["pyrite"]
    py["gelu_fused"]["max_abs_err"] = check_gelu(arr, gelu(xf).numpy())
    py["gelu_unfused"]["max_abs_err"] = check_gelu(arr, gelu(xr).numpy())
    fused_us = py["gelu_fused"]["median_us"]
    best_copy = min(py[c]["median_us"] for c in ("copy_kernel", "copy_buffer", "copy_fused_add0"))
    ratios = {
        "fused_over_copy_kernel": round(fused_us / py["copy_kernel"]["median_us"], 3),
        "fused_over_fused_copy": round(fused_us / py["copy_fused_add0"]["median_us"], 3),
        "fused_over_best_copy": round(fused_us / best_copy, 3),
        "unfused_over_copy_kernel": round(py["gelu_unfused"]["median_us"]
                                          / py["copy_kernel"]["median_us"], 3),
        "fused_over_unfused": round(fused_us / py["gelu_unfused"]["median_us"], 3),
    }
    if torch is not None:
        tr = out["torch_cuda"]
        for label, fn in tfns.items():
            tr[label]["kernels"] = torch_kernels(torch, fn)
        tr["gelu_formula"]["max_abs_err"] = check_gelu(arr, gelu(xt, torch.erf).cpu().numpy())
        ratios.update({
            "fused_over_torch_formula": round(fused_us / tr["gelu_formula"]["median_us"], 3),
            "fused_over_torch_F_gelu": round(fused_us / tr["gelu_F"]["median_us"], 3),
            "unfused_over_torch_formula": round(py["gelu_unfused"]["median_us"]
                                                / tr["gelu_formula"]["median_us"], 3),
            "copy_kernel_over_torch_clone": round(py["copy_kernel"]["median_us"]
                                                  / tr["copy_clone"]["median_us"], 3),
        })
    if use_numpy:
        out["numpy"]["gelu_formula"]["max_abs_err"] = check_gelu(arr, gelu(arr, np_erf))
        ratios["fused_over_numpy_formula"] = round(
            fused_us / out["numpy"]["gelu_formula"]["median_us"], 3)
    out["ratios"] = ratios
    out["target"] = "gelu_fused / copy_kernel <= 1.5"
    return out


def bench_tiny(args: argparse.Namespace, torch: Any, use_numpy: bool,
               devs: dict[str, Any], counter: Counter) -> dict[str, Any]:
    a_np = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    b_np = np.array([[1.5, 0.75], [-0.5, 1.0]], np.float32)

    def make(a: Any, b: Any, ops: int, m: Any = None) -> Callable[[], Any]:
        return (lambda: a + b) if ops == 1 else (lambda: chain(a, b, ops, m))

    out: dict[str, Any] = {"shape": [2, 2], "cases": {}}
    for case, ops in (("add", 1), (f"chain{args.chain}", args.chain)):
        cases: dict[str, Case] = {}
        for label, dev in devs.items():
            a, b = (pyrite.tensor(v, device=dev) for v in (a_np, b_np))
            cases[f"pyrite_{label}"] = pyrite_case(dev, make(a, b, ops), ops)
        if torch is not None:
            at, bt = (torch.from_numpy(v).cuda() for v in (a_np, b_np))
            tfn = make(at, bt, ops)
            cases["torch_cuda"] = Case(repeat(tfn), torch.cuda.synchronize, ops)
        if use_numpy:
            cases["numpy"] = Case(repeat(make(a_np, b_np, ops, np)), no_sync, ops)
        row: dict[str, Any] = {"ops": ops, **measure(cases, args)}
        for label in devs:
            row[f"pyrite_{label}"].update(counter.per_eval(cases[f"pyrite_{label}"], 16))
        if torch is not None:
            row["torch_cuda"]["kernels"] = torch_kernels(torch, tfn)
        ratios = {}
        for peer in ("torch_cuda", "numpy"):
            if peer in row:
                for label in devs:
                    ratios[f"{label}_over_{peer}"] = round(
                        row[f"pyrite_{label}"]["median_us"] / row[peer]["median_us"], 3)
        ratios["fused_over_unfused"] = round(row["pyrite_fused"]["median_us"]
                                             / row["pyrite_unfused"]["median_us"], 3)
        row["ratios"] = ratios
        out["cases"][case] = row
    out["target"] = "pyrite_fused per op <= 2x torch_cuda per op"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gelu-size", type=int, default=None,
                    help="GELU elements (default 64M; 1M on a CPU adapter)")
    ap.add_argument("--chain", type=int, default=10, help="ops in the 2x2 chain")
    ap.add_argument("--only", default="gelu,tiny", help="comma-separated: gelu, tiny")
    ap.add_argument("--warmup", type=int, default=3, help="untimed blocks per variant")
    ap.add_argument("--iters", type=int, default=10, help="timed rounds; the median counts")
    ap.add_argument("--min-ms", type=float, default=50.0, help="wall time of one timed block")
    ap.add_argument("--max-reps", type=int, default=20000, help="evaluations per block at most")
    ap.add_argument("--numpy", action="store_true", help="also time numpy on a GPU machine")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args()
    only = {s.strip() for s in args.only.split(",") if s.strip()}

    fused, raw = webgpu_devices()
    devs = {"fused": fused, "unfused": raw}
    adapter = raw.adapter
    n = args.gelu_size or ((1 << 20) if adapter.adapter_type.upper() == "CPU" else (64 << 20))
    torch = None if args.no_torch else cuda_torch()
    use_numpy = args.numpy or torch is None
    counter = Counter(fused, raw)
    import wgpu
    print(f"adapter: {adapter}; peer: {'torch_cuda' if torch else 'numpy'}", flush=True)
    result: dict[str, Any] = {
        "benchmark": "fusion",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "pyrite": pyrite.__version__, "wgpu": wgpu.__version__,
                    "webgpu_adapter": str(adapter),
                    "torch": torch.__version__ if torch else None,
                    "cuda_device": torch.cuda.get_device_name(0) if torch else None},
        "devices": {"fused": f"{type(fused).__name__}({type(raw).__name__}), "
                             f"device {fused.name!r}",
                    "unfused": f"{type(raw).__name__}, one kernel per op"},
        "method": {"timing": "wall clock; blocks of reps evaluations ending with a sync "
                             "(device.sync / torch.cuda.synchronize); variants in turns for "
                             "iters rounds; median block (best too); fused: flushed after each "
                             "evaluation",
                   "warmup": args.warmup, "iters": args.iters, "min_ms": args.min_ms,
                   "max_reps": args.max_reps},
    }
    if "gelu" in only:
        result["gelu"] = g = bench_gelu(n, args, torch, use_numpy, devs, counter)
        print(f"\nGELU x*(erf(x/sqrt2)+1)/2, {n} f32 elements, per evaluation (median):")
        print(f"  {'':6s} {'':16s} {'us':>11s} {'in sync us':>11s} {'GB/s r+w':>9s} kernels")
        for peer in ("pyrite", "torch_cuda", "numpy"):
            for label, row in g.get(peer, {}).items():
                kern = row.get("dispatches", row.get("kernels"))
                print(f"  {peer[:6]:6s} {label:16s} {row['median_us']:11.1f} "
                      f"{row['in_sync_us']:11.1f} {row['gbytes_per_s_rw']:9.1f} "
                      f"{'' if kern is None else f'{kern:g}'}")
        print("  ratios: " + ", ".join(f"{k} {v}" for k, v in g["ratios"].items()))
    if "tiny" in only:
        result["tiny"] = t = bench_tiny(args, torch, use_numpy, devs, counter)
        print("\n2x2 elementwise, host included, per op (median):")
        print(f"  {'':8s} {'':14s} {'us/op':>9s} kernels/evaluation")
        for case, row in t["cases"].items():
            for peer, v in row.items():
                if isinstance(v, dict) and "median_us" in v:
                    kern = v.get("dispatches", v.get("kernels"))
                    print(f"  {case:8s} {peer:14s} {v['median_us']:9.2f} "
                          f"{'' if kern is None else f'{kern:g}'}")
            print(f"  {case:8s} ratios: " + ", ".join(f"{k} {v}"
                                                      for k, v in row["ratios"].items()))
    result["fusion_stats"] = fused.stats.as_dict()
    if args.out:
        write_results(args.out, result)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
