"""Host time of an eager MNIST inference step, fused against unfused, in the same run.

An eager step on a fast GPU is host-bound (issue 21: on the H100 the unfused step took 0.84 ms
of which about 0.14 is GPU work), so "fusion must never lose" is about the host. This times the
Python side of the step alone: `model.forward(x).argmax(1)` up to, not including, the readback
(the runtime submits at the readback, so nothing in the timed part waits for the GPU; on a CPU
adapter such as lavapipe the GPU's work would otherwise be CPU time too). The two backends take
turns step by step, so a change of load on a shared machine hits both alike; the median step
counts (the minimum is in the JSON too). With `--calls` it also counts the Python function calls
of a step (cProfile, deterministic) on each.

    python benchmarks/fusion_host.py --quick --out benchmarks/results/fusion_host_lavapipe.json

Run it on the GPU machine as `webgpu_mnist.py` is run (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import time
from pathlib import Path
from typing import Any

from common import cpu_name, write_results
from fusion import webgpu_devices
from webgpu_mnist import _split, load_images

import pyrite
import pyrite.webgpu
from pyrite.demos.mnist import ModelConfig


def _calls(model: Any, images: list[Any], steps: int) -> float:
    """Python function calls per step (cProfile's count; a deterministic measure of work)."""
    prof = cProfile.Profile()
    for i in range(steps):
        prof.enable()
        y = model.forward(images[i % len(images)]).argmax(1)
        prof.disable()
        y.numpy()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    return sum(nc for (_, nc, _, _, _) in stats.values()) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=300, help="timed steps per backend")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--calls", action="store_true", help="count Python calls per step too")
    parser.add_argument("--quick", action="store_true", help="batch 16, 60 steps (lavapipe)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    if args.quick:
        args.batch, args.steps, args.warmup = 16, 60, 5
    fused, raw = webgpu_devices()
    images, labels, source = load_images(args.batch * 4)
    data = _split(images, labels, args.batch)
    runs: dict[str, tuple[Any, list[Any]]] = {}
    for name, dev in (("webgpu", raw), ("webgpu_fused", fused)):
        pyrite.seed(0)
        model = ModelConfig(10, 512).init(dev)
        runs[name] = (model, [pyrite.tensor(x, device=dev) for x, _ in data])
    times: dict[str, list[float]] = {name: [] for name in runs}
    counts = {name: 0 for name in runs}
    for i in range(args.warmup + args.steps):
        for name, (model, batches) in runs.items():
            t0 = time.perf_counter()
            y = model.forward(batches[i % len(batches)]).argmax(1)
            host = time.perf_counter() - t0
            y.numpy()
            if i >= args.warmup:
                times[name].append(host)
    results: dict[str, Any] = {
        "benchmark": "fusion_host", "batch": args.batch, "steps": args.steps, "data": source,
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "pyrite": pyrite.__version__,
                    "webgpu_adapter": str(raw.adapter)},
        "host_us_per_step": {}}
    for name, found in times.items():
        row = {"median": round(statistics.median(found) * 1e6, 1),
               "min": round(min(found) * 1e6, 1)}
        if args.calls:
            model, batches = runs[name]
            row["python_calls_per_step"] = round(_calls(model, batches, 50), 1)
        results["host_us_per_step"][name] = row
        counts[name] = len(found)
        print(f"{name:12s} host {row['median']:8.1f} us/step median, {row['min']:8.1f} min"
              + (f", {row['python_calls_per_step']:.0f} calls/step" if args.calls else ""))
    rows = results["host_us_per_step"]
    results["fused_over_unfused_host"] = round(
        rows["webgpu_fused"]["median"] / rows["webgpu"]["median"], 3)
    print("fused / unfused host time:", results["fused_over_unfused_host"])
    if args.out:
        write_results(args.out, results)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
