"""Where a compiled step's GPU time goes: each kernel of the MNIST guide model's compiled
inference and training steps (`benchmarks/compile.py`'s workloads) timed on its own.

A compiled step (`pyrite.compile`) replays a fixed list of dispatches. This captures that list
from a replayed step, then times every dispatch alone: the same dispatch (same pipeline, same
bind group, same grid) replayed `reps` times in one submission, then a device sync, `reps`
grown until a block takes >= --min-ms; the median of --iters blocks, per dispatch. Rows are
the kernels in step order with their template, entry point and grid; `by_template` sums them
by template (conv, matmul, fused elementwise, ...), and `sum_ms` (every kernel alone) sits
next to `whole_ms` (the step's dispatch list replayed as a whole, the same way), so the gaps
between kernels show too. PyTorch CUDA eager's step time (same model, same batch, from
`benchmarks/webgpu_mnist.py`) is the peer where a CUDA GPU is present.

Replaying a kernel many times rewrites its outputs with the same inputs (Adam's in-place
updates drift, which does not change their cost); nothing is read back.

    python benchmarks/step_kernels.py --quick --out benchmarks/results/step_kernels_lavapipe.json
    python benchmarks/step_kernels.py --out step_kernels_h100.json     # on the GPU machine
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import cpu_name, cuda_torch, timed, write_results
from compile import LR, mnist_data, torch_data
from webgpu_mnist import throughput, torch_infer, torch_train

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.demos.mnist import MnistBatch, ModelConfig
from pyrite.optim import AdamConfig
from pyrite.webgpu import WebGpu
from pyrite.webgpu.fusion import Fusion


class Tap:
    """The runtime of `raw` with two taps: each pipeline's key (by the pipeline's id) and the
    dispatches replayed since `clear()`."""

    def __init__(self, raw: WebGpu) -> None:
        self.runtime = rt = raw.kernels.runtime
        self.names: dict[int, str] = {}
        self.dispatches: list[Any] = []
        make, replay = rt.pipeline, rt.replay
        self.replay = replay  # the untapped replay, for the timing

        def pipeline(key: Any, source: str, entry_point: str = "main",
                     *checks: Any) -> Any:
            found = make(key, source, entry_point, *checks)
            self.names[id(found)] = label(key, entry_point)
            return found

        def replaying(items: Any, writes: Any = ()) -> None:
            self.dispatches.extend(items)
            replay(items, writes)

        rt.pipeline, rt.replay = pipeline, replaying

    def clear(self) -> None:
        self.dispatches = []

    def profile(self, min_ms: float, iters: int) -> dict[str, Any]:
        """Each captured dispatch timed alone, then the list as a whole."""
        rt, replay = self.runtime, self.replay
        rows = []
        for pipeline, group, grid in self.dispatches:
            def run(reps: int, one: Any = (pipeline, group, grid)) -> None:
                replay([one] * reps)
            took = timed(run, rt.sync, min_ms, iters)
            rows.append({"kernel": self.names.get(id(pipeline), "?"), "grid": list(grid),
                         "ms": round(took["median_ms"], 4)})
        whole = list(self.dispatches)

        def run_all(reps: int) -> None:
            for _ in range(reps):
                replay(whole)
        total = timed(run_all, rt.sync, min_ms, iters)
        by: dict[str, float] = {}
        for row in rows:
            template = row["kernel"].split(":")[0]
            by[template] = round(by.get(template, 0.0) + row["ms"], 4)
        return {"dispatches": len(rows), "sum_ms": round(sum(r["ms"] for r in rows), 4),
                "whole_ms": round(total["median_ms"], 4),
                "by_template": dict(sorted(by.items(), key=lambda kv: -kv[1])),
                "kernels": rows}


def label(key: Any, entry: str) -> str:
    """kernel:op and the key's parameters, short (a `KernelKey`; other keys as text)."""
    kernel = getattr(key, "kernel", None)
    if kernel is None:
        return f"{str(key)[:60]}:{entry}"
    params = getattr(key, "params", ())
    return f"{kernel}:{getattr(key, 'op', entry)} {str(params)[:80]}"


def infer_step(batch: int) -> tuple[Tap, Callable[[], None]]:
    raw = WebGpu(seed=0)
    tap = Tap(raw)
    device = Fusion(raw)
    model = ModelConfig(10, 512).init(device)
    images = [pyrite.tensor(x, device=device) for x, _ in mnist_data(2, batch)]
    run = pyrite.compile(lambda m, x: m(x).argmax(1))
    state = {"i": 0}

    def step() -> None:
        state["i"] += 1
        run(model, images[state["i"] % 2]).to_data()
    return tap, step


def train_step(batch: int) -> tuple[Tap, Callable[[], None]]:
    raw = WebGpu(seed=0)
    tap = Tap(raw)
    device = Autodiff(Fusion(raw))
    state: dict[str, Any] = {"model": ModelConfig(10, 512).init(device), "i": 0}
    optim = AdamConfig().init()
    batches = [MnistBatch(pyrite.tensor(x, device=device), pyrite.tensor(y, device=device))
               for x, y in mnist_data(2, batch)]

    def train(model: Any, batch: MnistBatch, lr: float) -> tuple[Any, Any]:
        out = model.train_step(batch)
        return optim.step(lr, model, out.grads), out.item.loss

    run = pyrite.compile(train)

    def step() -> None:
        state["i"] += 1
        state["model"], loss = run(state["model"], batches[state["i"] % 2], LR)
        loss.into_scalar()
    return tap, step


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--infer-batch", type=int, default=256)
    ap.add_argument("--min-ms", type=float, default=20.0)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="fewer, shorter timing blocks")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.quick:
        args.min_ms, args.iters = 5.0, 3
    result: dict[str, Any] = {"benchmark": "step_kernels", "host": platform.node(),
                              "cpu": cpu_name(), "adapter": str(WebGpu().adapter),
                              "batch": args.batch, "infer_batch": args.infer_batch}
    torch = cuda_torch()
    for name, make, size in (("infer", infer_step, args.infer_batch),
                             ("train", train_step, args.batch)):
        tap, step = make(size)
        for _ in range(4):  # eager, capture, then replays
            step()
        tap.runtime.sync()
        tap.clear()
        step()
        tap.runtime.sync()
        if not tap.dispatches:
            print(f"{name}: the compiled step replayed nothing", file=sys.stderr)
            return 1
        found = tap.profile(args.min_ms, args.iters)
        if torch is not None:
            data = torch_data(mnist_data(4, size))
            runner = torch_infer if name == "infer" else torch_train
            peer = throughput(runner(torch, data), size, 3, 20, 3)
            found["torch_cuda_eager_ms_per_step"] = peer["ms_per_step"]
        result[name] = found
        top = sorted(found["kernels"], key=lambda r: -r["ms"])[:5]
        print(name, {k: found[k] for k in ("dispatches", "sum_ms", "whole_ms")},
              found["by_template"], top, flush=True)
    if args.out:
        write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
