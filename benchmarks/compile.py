"""Compiled steps (`pyrite.compile`) against eager pyrite and PyTorch CUDA eager, in one run.

Workloads (each as `benchmarks/webgpu_mnist.py` and `benchmarks/charlm.py` define them):

- MNIST guide training, batch `--batch` (64): forward, cross-entropy, backward, Adam at 1e-4,
  the loss read back each step (as the Learner's metric does). pyrite on
  `autodiff<fusion<webgpu>>`, eager and compiled; PyTorch CUDA eager fp32 (TF32 off).
- MNIST guide inference, batch `--infer-batch` (256): the model in inference mode, predicted
  classes read back.
- charlm training (the demo's 3-layer transformer, batch 16, Adam 2e-3), loss read back.

For the compiled MNIST step it also reports where a replayed step's time goes: the host time
of the call alone (signature, replay: writes, encoding, submit; no wait), and the wall time of
the step with its loss readback (the GPU's time plus the host's); inference reports the call's
host time too. `--wgpu-py-paths` replays and reads back through wgpu-py's objects instead of
wgpu-native's C functions (an A/B of those paths on one machine). Each workload runs `--warmup`
steps (captures happen there), then `--steps` timed steps `--repeats` times; the best repeat
counts.

    python benchmarks/compile.py --steps 10 --repeats 2 --out FILE.json

On the GPU machine run it as `benchmarks/webgpu_mnist.py` is run (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, write_results
from webgpu_mnist import throughput, torch_infer, torch_train

import pyrite
import pyrite.webgpu
from pyrite.backend.autodiff import Autodiff
from pyrite.demos.mnist import MnistBatch, ModelConfig
from pyrite.optim import AdamConfig
from pyrite.webgpu import WebGpu
from pyrite.webgpu.fusion import Fusion

LR = 1e-4
Step = Callable[[int], Any]


def add_ratios(rows: dict[str, Any], key: str) -> None:
    """Each pyrite row's `key` as a ratio to PyTorch's, when PyTorch ran."""
    peer = rows.get("torch_cuda_eager")
    if peer is not None:
        for name in ("pyrite_eager", "pyrite_compiled"):
            rows[name]["ratio_vs_torch_eager"] = round(rows[name][key] / peer[key], 4)


# ---- MNIST --------------------------------------------------------------------------------------
def mnist_data(n: int, batch: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(batch, 28, 28)).astype(np.float32),
             rng.integers(0, 10, batch).astype(np.int32)) for _ in range(n)]


class Breakdown:
    """Where a replayed call's host time goes: `Program.replay` (of which the runtime's
    `replay`: encoding the dispatches and submitting) and the rest of the call (flattening the
    arguments, the signature, rebuilding the results), by wrapping the two methods."""

    def __init__(self) -> None:
        from pyrite.webgpu.capture import Program
        from pyrite.webgpu.guard import GuardedRuntime
        self.times: dict[str, list[float]] = {"program_replay": [], "runtime_replay": []}
        for cls, name, key in ((Program, "replay", "program_replay"),
                               (GuardedRuntime, "replay", "runtime_replay")):
            self._wrap(cls, name, self.times[key])

    @staticmethod
    def _wrap(cls: Any, name: str, into: list[float]) -> None:
        inner = getattr(cls, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                into.append(time.perf_counter() - t0)
        setattr(cls, name, timed)

    def median_ms(self, key: str, last: int) -> float:
        return round(float(np.median(self.times[key][-last:])) * 1e3, 4)


def pyrite_mnist_train(compiled: bool, data: list[Any]) -> tuple[Step, Callable[[], None],
                                                                   dict[str, Any]]:
    raw = WebGpu(seed=0)
    device = Autodiff(Fusion(raw))
    state: dict[str, Any] = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    batches = [MnistBatch(pyrite.tensor(x, device=device), pyrite.tensor(y, device=device))
               for x, y in data]

    def train(model: Any, batch: MnistBatch, lr: float) -> tuple[Any, Any]:
        out = model.train_step(batch)
        return optim.step(lr, model, out.grads), out.item.loss

    run = pyrite.compile(train, enabled=compiled)
    host: list[float] = []
    info: dict[str, Any] = {"raw": raw, "run": run, "host": host}

    def step(i: int) -> None:
        t0 = time.perf_counter()
        state["model"], loss = run(state["model"], batches[i % len(batches)], LR)
        host.append(time.perf_counter() - t0)
        loss.into_scalar()
    return step, lambda: None, info


def pyrite_mnist_infer(compiled: bool, data: list[Any]) -> tuple[Step, Callable[[], None],
                                                                   list[float]]:
    device = Fusion(WebGpu(seed=0))
    model = ModelConfig(10, 512).init(device)
    images = [pyrite.tensor(x, device=device) for x, _ in data]
    run = pyrite.compile(lambda m, x: m(x).argmax(1), enabled=compiled)
    host: list[float] = []

    def step(i: int) -> None:
        t0 = time.perf_counter()
        out = run(model, images[i % len(images)])
        host.append(time.perf_counter() - t0)
        out.to_data()
    return step, lambda: None, host


def use_wgpu_py_paths() -> None:
    """The host paths before the C-function ones, for an A/B in one machine: replays encoded
    and submitted through wgpu-py's objects, readbacks through its `queue.read_buffer`."""
    from pyrite.webgpu import native_readback
    from pyrite.webgpu.batch import CommandBatch
    from pyrite.webgpu.native import NativeRuntime
    NativeRuntime.replay = CommandBatch.replay  # type: ignore[method-assign]
    native_readback.available = lambda: False


def torch_data(data: list[Any]) -> list[Any]:
    """The batches as webgpu_mnist.py's PyTorch runners take them (int64 labels)."""
    return [(x, y.astype(np.int64)) for x, y in data]


# ---- charlm -------------------------------------------------------------------------------------
def pyrite_charlm(compiled: bool) -> tuple[Step, Callable[[], None], int]:
    import charlm
    cfg = charlm.model_config()
    device = Autodiff(Fusion(WebGpu(seed=0)))
    state: dict[str, Any] = {"model": cfg.init(device)}
    optim = AdamConfig().init()
    rows = charlm.windows(cfg.vocab, cfg.context, 4)
    batches = [state["model"].tokens(rows[i:i + charlm.BATCH])
               for i in range(0, len(rows), charlm.BATCH)]

    def train(model: Any, batch: Any, lr: float) -> tuple[Any, Any]:
        out = model.train_step(batch)
        return optim.step(lr, model, out.grads), out.item.loss

    run = pyrite.compile(train, enabled=compiled)

    def step(i: int) -> None:
        state["model"], loss = run(state["model"], batches[i % len(batches)], charlm.LR)
        loss.into_scalar()
    return step, lambda: None, charlm.BATCH * cfg.context


def torch_charlm(torch: Any, timing: tuple[int, int, int]) -> dict[str, Any]:
    """benchmarks/charlm.py's PyTorch step (the same architecture), timed there."""
    import charlm
    cfg = charlm.model_config()
    warmup, steps, repeats = timing
    rows = charlm.windows(cfg.vocab, cfg.context, max(steps, warmup))
    times = charlm.torch_train(torch, rows, "cuda", steps, warmup, repeats)
    best = min(times)
    return {"ms_per_step": round(best * 1e3, 4),
            "ms_per_step_all_repeats": [round(t * 1e3, 4) for t in times],
            "tokens_per_s": round(charlm.BATCH * cfg.context / best, 1)}


def charlm_generate(tokens: int) -> dict[str, Any]:
    """Characters/s of the shipped charlm, greedy, on fusion<webgpu>: the key/value cache run
    eagerly, and the compiled window (one program for every position)."""
    from pyrite.demos.charlm.generate import generate, load
    model = load(Fusion(WebGpu(seed=0)))
    found: dict[str, Any] = {}
    texts = []
    for name, compiled in (("eager_cached", False), ("compiled_window", True)):
        generate(model, "def ", 8, temperature=0, compiled=compiled)  # warm up, capture
        t0 = time.perf_counter()
        texts.append(generate(model, "def ", tokens, temperature=0, compiled=compiled))
        found[name] = {"tokens_per_s": round(tokens / (time.perf_counter() - t0), 1)}
    found["same_text"] = texts[0] == texts[1]
    return found


def mnist_train(args: Any, timing: tuple[int, int, int], torch: Any) -> dict[str, Any]:
    """The MNIST training rows: pyrite eager and compiled, PyTorch where present."""
    data = mnist_data(4, args.batch)
    train: dict[str, Any] = {}
    breakdown = Breakdown()
    for name, compiled in (("pyrite_eager", False), ("pyrite_compiled", True)):
        step, sync, info = pyrite_mnist_train(compiled, data)
        row = throughput((step, sync), args.batch, *timing)
        timed = info["host"][args.warmup:]
        row["host_ms_per_call_median"] = round(float(np.median(timed)) * 1e3, 4)
        if compiled:
            n = args.steps * args.repeats
            row["host_breakdown_ms_median"] = {
                "program_replay": breakdown.median_ms("program_replay", n),
                "of_which_runtime_replay": breakdown.median_ms("runtime_replay", n),
                "rest_of_call": round(row["host_ms_per_call_median"]
                                      - breakdown.median_ms("program_replay", n), 4)}
        run = info["run"]
        row["compile"] = {"captures": run.captures, "replays": run.replays,
                          "fallbacks": run.fallbacks}
        batch_stats = getattr(info["raw"].kernels.runtime, "inner", None)
        row["runtime"] = dict(getattr(batch_stats, "stats", {}))
        train[name] = row
        print(f"mnist train {name}: {row}", flush=True)
    if torch is not None:
        row = throughput(torch_train(torch, torch_data(data)), args.batch, *timing)
        train["torch_cuda_eager"] = row
        print(f"mnist train torch: {row}", flush=True)
    add_ratios(train, "images_per_s")
    train["compiled_vs_eager"] = round(train["pyrite_compiled"]["images_per_s"]
                                       / train["pyrite_eager"]["images_per_s"], 3)
    return train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--infer-batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=100, help="charlm characters generated")
    ap.add_argument("--skip", default="", help="comma-separated: train, infer, charlm, generate")
    ap.add_argument("--only", default="", help="comma-separated: run only these of train, "
                    "infer, charlm, generate (the MNIST rows alone: --only train,infer)")
    ap.add_argument("--wgpu-py-paths", action="store_true",
                    help="replay and read back through wgpu-py's objects (the paths before "
                    "native.py's C-function ones), for an A/B")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    if only:
        skip |= {"train", "infer", "charlm", "generate"} - only
    if args.wgpu_py_paths:
        use_wgpu_py_paths()
    torch = cuda_torch()
    timing = (args.warmup, args.steps, args.repeats)
    result: dict[str, Any] = {
        "adapter": str(pyrite.webgpu.WebGpu().adapter), "cpu": cpu_name(),
        "python": platform.python_version(),
        "torch": getattr(torch, "__version__", None) if torch else None,
        "host_paths": "wgpu-py objects" if args.wgpu_py_paths else "wgpu-native C functions"}

    if "train" not in skip:
        result["mnist_train"] = mnist_train(args, timing, torch)

    if "infer" not in skip:
        data = mnist_data(4, args.infer_batch)
        infer: dict[str, Any] = {}
        for name, compiled in (("pyrite_eager", False), ("pyrite_compiled", True)):
            step, sync, host = pyrite_mnist_infer(compiled, data)
            row = throughput((step, sync), args.infer_batch, *timing)
            row["host_ms_per_call_median"] = round(float(np.median(host[args.warmup:])) * 1e3, 4)
            infer[name] = row
            print(f"mnist infer {name}: {row}", flush=True)
        if torch is not None:
            infer["torch_cuda_eager"] = throughput(torch_infer(torch, torch_data(data)),
                                                   args.infer_batch, *timing)
        add_ratios(infer, "images_per_s")
        result["mnist_infer"] = infer

    if "charlm" not in skip:
        lm: dict[str, Any] = {}
        for name, compiled in (("pyrite_eager", False), ("pyrite_compiled", True)):
            step, sync, tokens = pyrite_charlm(compiled)
            row = throughput((step, sync), tokens, *timing)
            row["tokens_per_s"] = row.pop("images_per_s")  # a step's "batch" is its tokens
            lm[name] = row
            print(f"charlm {name}: {row}", flush=True)
        if torch is not None:
            lm["torch_cuda_eager"] = torch_charlm(torch, timing)
        add_ratios(lm, "tokens_per_s")
        result["charlm_train"] = lm
    if "generate" not in skip:
        result["charlm_generate"] = charlm_generate(args.tokens)
        print(f"charlm generate: {result['charlm_generate']}", flush=True)
    result["compile_stats"] = pyrite.capture.stats()
    if args.out:
        write_results(args.out, result)


if __name__ == "__main__":
    main()
