"""Where a compiled MNIST inference step's time goes (`benchmarks/compile.py`'s
`pyrite_mnist_infer`: `pyrite.compile(lambda m, x: m(x).argmax(1))`, then `out.to_data()`).

Each timed step is cut at timestamps taken by wrapping the methods it passes through:

- `call_before_replay`: the compiled call's Python before `Program.replay` (flatten the
  arguments, the layout, the signature lookup);
- `program_replay_python`: `Program.replay` less the runtime's replay (formulas, the table, pool
  blocks for the outputs, the result tensors);
- `encode`: the runtime's replay up to its submit (encoder, pass, the dispatches' C calls);
- `submit`: wgpu-native's `wgpuQueueSubmit` alone;
- `after_replay`: the rest of the call (rebuilding the results);
- `readback_copy_submit`: `to_data` up to the staging copy's submit, that submit included;
- `readback_wait`: the map, its wait (`wgpuDevicePoll`) and the bytes copied out.

Besides the cut steps it reports (all in one process, medians in ms):

- `step_ms`: the full step (call + readback), the figure compile.py reports;
- `pipelined_ms_per_step`: calls without a readback, one sync at the end (max of host, GPU);
- `gpu_replay_ms_per_step`: the step's dispatch list recorded `--gpu-reps` times into one
  submit (the kernels back to back, no host between them);
- `idle_readback_ms`: `to_data` of a finished result on an idle queue (the readback's own
  latency: copy, submit, map, wait);
- `idle_sync_ms`: `sync()` on an idle queue (a 4-byte readback);
- `step_ms_blocking_poll`: the full step with the readback waiting in one blocking poll;
- the top functions of a cProfile of `--profile-steps` steps (host time, profiler included);
- PyTorch CUDA eager's step in the same process where it is present.

    python benchmarks/infer_anatomy.py --quick --out benchmarks/results/infer_anatomy_lavapipe.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, write_results
from compile import mnist_data, torch_data
from webgpu_mnist import throughput, torch_infer

import pyrite
from pyrite.demos.mnist import ModelConfig
from pyrite.webgpu import WebGpu
from pyrite.webgpu.fusion import Fusion

PHASES = ("call_before_replay", "program_replay_python", "encode", "submit", "after_replay",
          "readback_copy_submit", "readback_wait")


class Marks:
    """Timestamps of one step's events, taken by wrappers around the methods they name."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}
        self.on = False

    def mark(self, name: str) -> None:
        if self.on:
            self.t[name] = time.perf_counter()

    def wrap(self, owner: Any, name: str, before: str, after: str) -> None:
        inner = getattr(owner, name)
        marks = self

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            marks.mark(before)
            try:
                return inner(*args, **kwargs)
            finally:
                marks.mark(after)
        setattr(owner, name, wrapped)


def phases(m: dict[str, float]) -> dict[str, float]:
    """The step's phases (seconds) from its marks."""
    return {"call_before_replay": m["program_in"] - m["start"],
            "program_replay_python": (m["runtime_in"] - m["program_in"])
            + (m["program_out"] - m["runtime_out"]),
            "encode": m["submit_in"] - m["runtime_in"],
            "submit": (m["submit_out"] - m["submit_in"]) + (m["runtime_out"] - m["submit_out"]),
            "after_replay": m["call_out"] - m["program_out"],
            "readback_copy_submit": m["copy_out"] - m["call_out"],
            "readback_wait": m["end"] - m["copy_out"]}


def build(batch: int) -> tuple[Any, Any, list[Any], Callable[..., Any]]:
    raw = WebGpu(seed=0)
    device = Fusion(raw)
    model = ModelConfig(10, 512).init(device)
    images = [pyrite.tensor(x, device=device) for x, _ in mnist_data(4, batch)]
    run = pyrite.compile(lambda m, x: m(x).argmax(1))
    return raw, model, images, run


def instrument(raw: Any, marks: Marks) -> list[Any]:
    """Wrap the step's methods with marks; returns the list the replayed dispatches go to."""
    from pyrite.webgpu.capture import Program
    rt = getattr(raw.kernels.runtime, "inner", raw.kernels.runtime)  # under the guard
    marks.wrap(Program, "replay", "program_in", "program_out")
    seen: list[Any] = []
    replay = rt.replay

    def runtime_replay(items: Any, writes: Any = ()) -> None:
        marks.mark("runtime_in")
        seen.append(items)
        try:
            replay(items, writes)
        finally:
            marks.mark("runtime_out")
    rt.replay = runtime_replay
    direct = getattr(rt, "_direct", None)
    if direct is not None:  # wgpuQueueSubmit, timed alone
        submit = direct[12]

        def timed_submit(*args: Any) -> Any:
            first = "submit_in" not in marks.t  # the replay's (the readback's comes later)
            if first:
                marks.mark("submit_in")
            try:
                return submit(*args)
            finally:
                if first:
                    marks.mark("submit_out")
        rt._direct = (*direct[:12], timed_submit, *direct[13:])
    reader = getattr(rt, "_reader", None)
    if reader is not None:
        copy = reader._copy

        def timed_copy(*args: Any) -> Any:
            try:
                return copy(*args)
            finally:
                marks.mark("copy_out")
        reader._copy = timed_copy
    return seen


def blocking_variant(rt: Any, run: Any, model: Any, images: list[Any],
                     steps: int) -> float | None:
    """The full step's median with the readback waiting in one blocking `wgpuDevicePoll`
    (`native_readback.SPIN_S = 0`, the wait before session 7) instead of polling first
    (None without the native reader)."""
    from pyrite.webgpu import native_readback
    if getattr(rt, "_reader", None) is None or not hasattr(native_readback, "SPIN_S"):
        return None
    spin = native_readback.SPIN_S
    native_readback.SPIN_S = 0.0
    try:
        times = []
        for i in range(steps):
            t0 = time.perf_counter()
            run(model, images[i % len(images)]).to_data()
            times.append(time.perf_counter() - t0)
    finally:
        native_readback.SPIN_S = spin
    return median_ms(times)


def median_ms(values: list[float]) -> float:
    return round(float(np.median(values)) * 1e3, 4)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--gpu-reps", type=int, default=50)
    ap.add_argument("--profile-steps", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="few steps (lavapipe)")
    ap.add_argument("--no-narrow", action="store_true",
                    help="the 512 -> 10 layer split in K as before matmul_narrow.py")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.quick:
        args.steps, args.gpu_reps, args.profile_steps = 20, 3, 20
    if args.no_narrow:
        from pyrite.webgpu import matmul_narrow
        matmul_narrow.MAX_COLS = 0
    raw, model, images, run = build(args.batch)
    rt = raw.kernels.runtime
    result: dict[str, Any] = {"benchmark": "infer_anatomy", "host": platform.node(),
                              "cpu": cpu_name(), "adapter": str(raw.adapter),
                              "features": sorted(rt.features), "batch": args.batch,
                              "python": platform.python_version(),
                              "narrow": not args.no_narrow}
    n = len(images)
    for i in range(6):  # eager, two captures, replays
        run(model, images[i % n]).to_data()
    marks = Marks()
    seen = instrument(raw, marks)

    # the full step, cut into phases
    cut: dict[str, list[float]] = {p: [] for p in PHASES}
    steps: list[float] = []
    for i in range(args.steps):
        marks.t = {}
        marks.on = True
        marks.t["start"] = t0 = time.perf_counter()
        out = run(model, images[i % n])
        marks.t["call_out"] = time.perf_counter()
        out.to_data()
        marks.t["end"] = t1 = time.perf_counter()
        marks.on = False
        steps.append(t1 - t0)
        if len(marks.t) == 10:
            for k, v in phases(marks.t).items():
                cut[k].append(v)
    result["replays"] = run.replays
    result["step_ms"] = median_ms(steps)
    result["step_ms_best"] = round(min(steps) * 1e3, 4)
    result["phases_ms_median"] = {k: median_ms(v) for k, v in cut.items() if v}
    result["phases_cut_steps"] = len(cut["encode"])
    print("step", result["step_ms"], result["phases_ms_median"], flush=True)

    # calls without readback, one sync: the host and the GPU overlap
    rt.sync()
    t0 = time.perf_counter()
    for i in range(args.steps):
        run(model, images[i % n])
    rt.sync()
    result["pipelined_ms_per_step"] = round((time.perf_counter() - t0) / args.steps * 1e3, 4)

    # the dispatch list alone, back to back in one submit
    items = list(seen[-1])
    result["dispatches_per_step"] = len(items)
    for _ in range(2):
        rt.sync()
        t0 = time.perf_counter()
        rt.replay(items * args.gpu_reps)
        rt.sync()
        took = time.perf_counter() - t0
    result["gpu_replay_ms_per_step"] = round(took / args.gpu_reps * 1e3, 4)

    # the readback's own latency on an idle queue, and an idle sync
    out = run(model, images[0])
    rt.sync()
    reads, syncs = [], []
    for _ in range(max(20, args.steps // 5)):
        t0 = time.perf_counter()
        out.to_data()
        t1 = time.perf_counter()
        rt.sync()
        syncs.append(time.perf_counter() - t1)
        reads.append(t1 - t0)
    result["idle_readback_ms"] = median_ms(reads)
    result["idle_sync_ms"] = median_ms(syncs)

    # the full step again, the readback's wait in one blocking poll
    result["step_ms_blocking_poll"] = blocking_variant(getattr(rt, "inner", rt), run, model,
                                                       images, args.steps)

    # the host's time by function, profiler included
    profile = cProfile.Profile()
    profile.enable()
    for i in range(args.profile_steps):
        run(model, images[i % n]).to_data()
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    result["profile_top_tottime"] = [line for line in text.getvalue().splitlines()
                                     if line.strip()][-27:]
    print("\n".join(result["profile_top_tottime"]), flush=True)

    torch = cuda_torch()
    if torch is not None:
        data = torch_data(mnist_data(4, args.batch))
        result["torch_cuda_eager"] = throughput(torch_infer(torch, data), args.batch, 5, 30, 3)
        result["ratio_vs_torch_eager"] = round(
            result["torch_cuda_eager"]["ms_per_step"] / result["step_ms"], 4)
    print({k: v for k, v in result.items() if k != "profile_top_tottime"}, flush=True)
    if args.out:
        write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
