"""MNIST guide-model training and inference throughput (images/s) on pyrite's webgpu backend,
against pyrite's numpy backend and, where a CUDA GPU is present, PyTorch CUDA fp32 (TF32 off
for matmul and cuDNN) on the same model, in the same run.

The model is Burn's guide model (`pyrite.demos.mnist.Model`: conv 1->8, conv 8->16, adaptive
average pool to 8x8, dropout 0.5, linear 1024->512->10), Adam at lr 1e-4, batch `--batch`.
A training step is what the Learner does per batch: forward, cross-entropy, backward, the
optimizer step, and reading the loss back as a number (the Learner's loss metric does), so each
step ends with a readback on every framework. An inference step is the model in inference mode
(`model.valid()`, `torch.no_grad()` + `eval()`) on `--infer-batch` images, ending with the
predicted classes read back to the host. Batches are built before timing (MNIST's first training
images when the dataset is on disk, random pixels otherwise), so the data pipeline is not
measured. Each runs `--warmup` steps, then `--steps` timed steps `--repeats` times; the best
repeat counts.

`--fusion` picks pyrite's webgpu variants: "off" is the raw `WebGpu` backend (one kernel per op;
`Autodiff` over it for training; JSON key "webgpu"), "on" is `Fusion` over it (elementwise ops
recorded and fused into generated kernels; key "webgpu_fused"), "both" (the default) runs the
two in the same run. Whichever of them the "webgpu" device name gives (PYRITE_FUSION), the raw
and the fused backend are built here, so the keys always mean the same thing. For each, the
runtime's dispatches and submits per step are counted over the timed steps.

    python benchmarks/webgpu_mnist.py --steps 5 --warmup 1 --repeats 2 \
        --out benchmarks/results/webgpu_mnist_lavapipe.json

`--phases infer` times inference only (the fused-versus-unfused question of an eager step).

On the GPU machine run it as `benchmarks/webgpu_matmul.py` is run (see benchmarks/README.md),
with pyrite on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, guide_model, write_results
from fusion import runtime_counts, webgpu_devices

import pyrite
import pyrite.webgpu
from pyrite.demos.mnist import MnistBatch, ModelConfig
from pyrite.optim import AdamConfig

LR = 1e-4
MEAN, STD = 0.1307, 0.3081
Step = Callable[[int], None]


def load_images(n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """`n` MNIST training images (uint8, (n, 28, 28)) and labels, or random ones."""
    try:
        from pyrite.dataset import MnistDataset
        images, labels = MnistDataset("train", download=False).arrays()
        if len(images) >= n:
            return images[:n].copy(), labels[:n].astype(np.int64), "mnist"
    except Exception:  # noqa: BLE001 - any failure: fall back to random pixels
        pass
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, (n, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, n).astype(np.int64), "random")


def _split(images: np.ndarray, labels: np.ndarray, batch: int) -> list[tuple[Any, Any]]:
    x = (images.astype(np.float32) / 255.0 - MEAN) / STD
    return [(x[s:s + batch], labels[s:s + batch]) for s in range(0, len(x) - batch + 1, batch)]


# ---- pyrite -------------------------------------------------------------------------------------
def pyrite_train(device_name: str | pyrite.Backend,
                 data: list[tuple[Any, Any]]) -> tuple[Step, Callable[[], None]]:
    device = pyrite.device(device_name)
    pyrite.seed(0)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    batches = [MnistBatch(pyrite.tensor(x, device=device),
                          pyrite.tensor(y.astype(np.int32), device=device)) for x, y in data]

    def step(i: int) -> None:
        model = state["model"]
        out = model.train_step(batches[i % len(batches)])
        float(out.item.loss.numpy()[0])  # the Learner reads the loss every step
        state["model"] = optim.step(LR, model, out.grads)
    return step, device.sync


def pyrite_infer(device_name: str | pyrite.Backend,
                 data: list[tuple[Any, Any]]) -> tuple[Step, Callable[[], None]]:
    device = pyrite.device(device_name)
    pyrite.seed(0)
    model = ModelConfig(10, 512).init(device)
    images = [pyrite.tensor(x, device=device) for x, _ in data]

    def step(i: int) -> None:
        model.forward(images[i % len(images)]).argmax(1).numpy()
    return step, device.sync


# ---- torch --------------------------------------------------------------------------------------
def torch_model(torch: Any) -> Any:
    return guide_model(torch).cuda()


def torch_train(torch: Any, data: list[tuple[Any, Any]]) -> tuple[Step, Callable[[], None]]:
    model = torch_model(torch).train()
    optim = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = [(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()) for x, y in data]

    def step(i: int) -> None:
        x, y = batches[i % len(batches)]
        optim.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        loss.item()
        optim.step()
    return step, torch.cuda.synchronize


def torch_infer(torch: Any, data: list[tuple[Any, Any]]) -> tuple[Step, Callable[[], None]]:
    model = torch_model(torch).eval()
    images = [torch.from_numpy(x).cuda() for x, _ in data]

    def step(i: int) -> None:
        with torch.no_grad():
            model(images[i % len(images)]).argmax(1).cpu()
    return step, torch.cuda.synchronize


# ---- timing -------------------------------------------------------------------------------------
def throughput(runner: tuple[Step, Callable[[], None]], batch: int, warmup: int, steps: int,
               repeats: int, counts: Callable[[], dict[str, float]] | None = None
               ) -> dict[str, Any]:
    """Images/s of the best repeat; with `counts` (a snapshot of pyrite's runtime counters),
    dispatches and submits per step over all timed steps (the native runtime counts no
    readbacks; the browser's does)."""
    step, sync = runner
    for i in range(warmup):
        step(i)
    sync()
    before = counts() if counts is not None else {}
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(steps):
            step(i)
        sync()
        times.append(time.perf_counter() - t0)
    best = min(times)
    found = {"images_per_s": round(steps * batch / best, 1),
             "ms_per_step": round(best / steps * 1e3, 3),
             "ms_per_step_all_repeats": [round(t / steps * 1e3, 3) for t in times]}
    if counts is not None:
        after = counts()
        for key in ("dispatches", "submits"):
            found[f"{key}_per_step"] = round((after[key] - before[key]) / (steps * repeats), 2)
    return found


_LAYERS = [  # (label, path fragment), first match wins
    ("wgpu calls (driver, waits)", "wgpu/"),
    ("fusion (record, plan, launch)", "webgpu/fus"),
    ("webgpu backend", "webgpu/"),
    ("autodiff", "backend/autodiff"),
    ("backend composites", "backend/"),
    ("optimizer", "/optim/"),
    ("nn layers", "/nn/"),
    ("module", "/module/"),
    ("tensor front end", "pyrite/"),
    ("tensor front end", "core/"),
]


def profile(runner: tuple[Step, Callable[[], None]], steps: int, top: int = 15) -> dict[str, Any]:
    """Where a webgpu training step's host time goes: own time per layer, top functions."""
    step, sync = runner
    for i in range(3):
        step(i)
    sync()
    prof = cProfile.Profile()
    prof.enable()
    for i in range(steps):
        step(i)
    sync()
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows, layers, waits = [], {}, 0.0
    for (file, line, name), (_, ncalls, tottime, cumtime, _) in \
            stats.stats.items():  # type: ignore[attr-defined]
        if name in ("read_buffer", "sync") and file.endswith("native.py"):
            waits += cumtime  # readbacks: they wait for the GPU to finish the queued work
        where = f"{file}:{line}({name})" if file != "~" else name
        rows.append((tottime, ncalls, where))
        label = next((lab for lab, frag in _LAYERS if frag in where), "other")
        layers[label] = layers.get(label, 0.0) + tottime
    rows.sort(reverse=True)
    return {"steps": steps, "ms_per_step_profiled": round(total / steps * 1e3, 2),
            "readback_and_sync_share": round(waits / total, 3),
            "by_layer_share": {k: round(v / total, 3)
                               for k, v in sorted(layers.items(), key=lambda kv: -kv[1])},
            "top_functions_by_own_time": [
                {"function": w.split("site-packages/")[-1], "own_share": round(t / total, 3),
                 "calls_per_step": round(n / steps, 1)} for t, n, w in rows[:top]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64, help="training batch (the guide's 64)")
    parser.add_argument("--infer-batch", type=int, default=256)
    parser.add_argument("--skip", default="", help="comma-separated: numpy, webgpu, torch")
    parser.add_argument("--fusion", choices=("on", "off", "both"), default="both",
                        help="pyrite webgpu with fusion on (webgpu_fused), off (webgpu) or both")
    parser.add_argument("--phases", default="train,infer",
                        help="comma-separated: train, infer (what is timed)")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the webgpu training steps too")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}

    images, labels, source = load_images(max(args.batch, args.infer_batch) * 8)
    train_data = _split(images, labels, args.batch)
    infer_data = _split(images, labels, args.infer_batch)
    torch = None if "torch" in skip else cuda_torch()
    fused, raw = webgpu_devices()
    counts = runtime_counts(raw)  # dispatches, submits (batch.py)
    import wgpu
    results: dict[str, Any] = {
        "benchmark": "webgpu_mnist",
        "model": "Burn guide MNIST (conv 1->8, conv 8->16, adaptive pool 8x8, dropout 0.5, "
                 "linear 1024->512->10), 531178 params, Adam lr 1e-4",
        "batch_size": args.batch, "infer_batch_size": args.infer_batch, "data": source,
        "steps": args.steps, "warmup": args.warmup, "repeats": args.repeats,
        "fusion": args.fusion,
        "webgpu_devices": {"webgpu": f"{type(raw).__name__} (one kernel per op); training: "
                                     f"Autodiff over it",
                           "webgpu_fused": f"{type(fused).__name__}({type(raw).__name__}); "
                                           f"training: Autodiff over it"},
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "pyrite": pyrite.__version__, "wgpu": wgpu.__version__,
                    "webgpu_adapter": str(raw.adapter),
                    "torch": torch.__version__ if torch else None,
                    "cuda_device": torch.cuda.get_device_name(0) if torch else None,
                    "torch_tf32": False if torch else None},
        "train": {}, "infer": {},
    }
    runs: dict[str, tuple[Any, Any]] = {}
    if "webgpu" not in skip:
        if args.fusion in ("off", "both"):
            runs["webgpu"] = (pyrite.Autodiff(raw), raw)
        if args.fusion in ("on", "both"):
            runs["webgpu_fused"] = (pyrite.Autodiff(fused), fused)
    if "numpy" not in skip:
        runs["numpy"] = ("autodiff<numpy>", "numpy")
    phases = {s.strip() for s in args.phases.split(",") if s.strip()}
    for name, (train_device, infer_device) in runs.items():
        gpu_counts = counts if name.startswith("webgpu") else None
        if "train" in phases:
            results["train"][name] = throughput(pyrite_train(train_device, train_data),
                                                args.batch, args.warmup, args.steps,
                                                args.repeats, gpu_counts)
        if "infer" in phases:
            results["infer"][name] = throughput(pyrite_infer(infer_device, infer_data),
                                                args.infer_batch, args.warmup, args.steps,
                                                args.repeats, gpu_counts)
    if torch is not None:
        if "train" in phases:
            results["train"]["torch_cuda"] = throughput(torch_train(torch, train_data),
                                                        args.batch, args.warmup, args.steps,
                                                        args.repeats)
        if "infer" in phases:
            results["infer"]["torch_cuda"] = throughput(torch_infer(torch, infer_data),
                                                        args.infer_batch, args.warmup,
                                                        args.steps, args.repeats)
    for name in ("webgpu", "webgpu_fused"):
        if args.profile and name in runs:
            results[f"{name}_train_profile"] = found = profile(
                pyrite_train(runs[name][0], train_data), args.steps)
            print(f"{name} training, host time by layer:", found["by_layer_share"])
            for row in found["top_functions_by_own_time"][:8]:
                print(f"  {row['own_share']:6.1%}  {row['calls_per_step']:7.1f}/step  "
                      f"{row['function']}")
    for phase in ("train", "infer"):
        found = results[phase]
        ratios = {}
        for name, peer in (("webgpu", "numpy"), ("webgpu", "torch_cuda"),
                           ("webgpu_fused", "numpy"), ("webgpu_fused", "torch_cuda"),
                           ("webgpu_fused", "webgpu")):
            if name in found and peer in found:
                ratios[f"{name}_over_{peer}"] = round(
                    found[name]["images_per_s"] / found[peer]["images_per_s"], 3)
        results[f"{phase}_ratios"] = ratios
        for name, row in found.items():
            extra = (f", {row['dispatches_per_step']:g} dispatches/step"
                     if "dispatches_per_step" in row else "")
            print(f"{phase:5s} {name:12s} {row['images_per_s']:10.1f} images/s "
                  f"({row['ms_per_step']:.2f} ms/step{extra})")
        print(f"{phase:5s} ratios {ratios}")
    if args.out:
        write_results(args.out, results)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
