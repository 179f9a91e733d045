"""Per-op cost of pyrite's numpy backend against raw numpy and PyTorch CPU, in one run.

Two regimes: tiny tensors (2x2: what pyrite's Python front end adds per op) and 4M-element
tensors (2048x2048: throughput, where the front end should vanish). Each timing is the best of
several repeats of a timed loop. Results go to JSON with ratios against numpy (and torch when
`torch==2.13.0` is installed).

    python benchmarks/ops_cpu.py --out benchmarks/results/ops_cpu.json
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import load_average, write_results

import pyrite
from pyrite import activation


def best_ns(impls: dict[str, Callable[[], Any]], budget_s: float,
            rounds: int = 15) -> dict[str, float]:
    """Best per-call time of each peer, in nanoseconds. The peers take turns, round after round
    (each round a timed loop per peer), so a noisy neighbour on a shared machine slows all of
    them alike; the minimum over rounds is the figure least disturbed by it."""
    loops = {}
    for name, fn in impls.items():
        fn()
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < budget_s / (rounds * 4 * len(impls)) or calls < 3:
            fn()
            calls += 1
        per = (time.perf_counter() - start) / calls
        loops[name] = max(1, int(budget_s / (rounds * len(impls)) / per))
    best = {name: float("inf") for name in impls}
    for _ in range(rounds):
        for name, fn in impls.items():
            t0 = time.perf_counter()
            for _ in range(loops[name]):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / loops[name])
    return {name: t * 1e9 for name, t in best.items()}


def cases(shape: tuple[int, ...], torch: Any) -> dict[str, dict[str, Callable[[], Any]]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    pa, pb = pyrite.tensor(a, device="numpy"), pyrite.tensor(b, device="numpy")
    ta, tb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
    table: dict[str, dict[str, Callable[[], Any]]] = {
        "add": {"numpy": lambda: a + b, "pyrite": lambda: pa + pb,
                "torch": lambda: ta + tb},
        "mul_scalar": {"numpy": lambda: a * 2.0, "pyrite": lambda: pa * 2.0,
                       "torch": lambda: ta * 2.0},
        "exp": {"numpy": lambda: np.exp(a), "pyrite": lambda: pa.exp(),
                "torch": lambda: ta.exp()},
        "relu": {"numpy": lambda: np.maximum(a, np.float32(0)),
                 "pyrite": lambda: activation.relu(pa), "torch": lambda: torch.relu(ta)},
        "sum": {"numpy": lambda: a.sum(), "pyrite": lambda: pa.sum(), "torch": lambda: ta.sum()},
        "sum_dim": {"numpy": lambda: a.sum(axis=-1, keepdims=True),
                    "pyrite": lambda: pa.sum_dim(-1),
                    "torch": lambda: ta.sum(-1, keepdim=True)},
        "greater": {"numpy": lambda: a > b, "pyrite": lambda: pa > pb,
                    "torch": lambda: ta > tb},
    }
    if shape[-1] <= 2048:
        table["matmul"] = {"numpy": lambda: a @ b, "pyrite": lambda: pa @ pb,
                           "torch": lambda: ta @ tb}
    if torch is None:
        for impls in table.values():
            del impls["torch"]
    return table


def run(shape: tuple[int, ...], torch: Any, budget_s: float,
        skip: set[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, impls in cases(shape, torch).items():
        if skip and name in skip:
            continue
        times = best_ns(impls, budget_s * len(impls))
        row: dict[str, Any] = {f"{peer}_ns": round(t, 1) for peer, t in times.items()}
        row["pyrite_over_numpy"] = round(times["pyrite"] / times["numpy"], 3)
        if "torch" in times:
            row["pyrite_over_torch"] = round(times["pyrite"] / times["torch"], 3)
        out[name] = row
        print(f"  {name:<11} " + "  ".join(f"{p} {t / 1e3:9.2f} us" for p, t in times.items())
              + f"   pyrite/numpy {row['pyrite_over_numpy']:.2f}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="benchmarks/results/ops_cpu.json")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per measurement")
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(1)  # numpy's elementwise ops are single-threaded too
    except ImportError:
        torch = None
        print("torch not installed: `pip install torch==2.13.0` to add the PyTorch peer")
    result: dict[str, Any] = {
        "benchmark": "ops_cpu", "machine": platform.machine(), "python": platform.python_version(),
        "numpy": np.__version__, "torch": getattr(torch, "__version__", None),
        "targets": {"small_overhead_max_ratio": 3.0, "large_elementwise_max_ratio": 1.2},
        "load_average": {"start": load_average()},
    }
    print("small (2x2): framework overhead per op")
    result["small_2x2"] = run((2, 2), torch, args.budget)
    print("large (2048x2048 = 4M elements): throughput")
    result["large_4M"] = run((2048, 2048), torch, args.budget * 3, skip={"matmul"})
    result["load_average"]["end"] = load_average()
    path = Path(args.out)
    write_results(path, result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
