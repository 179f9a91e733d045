"""Training throughput (images/s) of Burn's guide MNIST model: pyrite's numpy backend against
PyTorch CPU, the same model, batch size (64) and optimizer (Adam) in the same run.

A timed step is what the Learner does per batch: forward, cross-entropy loss, backward, Adam
update. Batches are built before timing (the same MNIST images for both; random pixels when
MNIST is not found), so the data pipeline is not measured. Each framework runs `--warmup`
steps, then `--steps` timed steps, `--repeats` times, alternating between
the frameworks; the best repeat of each counts.
`--profile` also runs pyrite's steps under cProfile and records where the time goes: the top
functions by own time, and the time per layer of the stack (numpy kernels, autodiff,
tensor front end, nn, optimizer).

    python benchmarks/train_mnist_cpu.py --out benchmarks/results/train_mnist_cpu.json --profile

PyTorch must be exactly `torch==2.13.0` (`pip install torch==2.13.0`); without it the torch
side is skipped and the ratio is null.
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

import numpy as np
from common import cpu_name, guide_model, load_average, pin_threads, write_results

import pyrite
from pyrite.demos.mnist import MnistBatcher, ModelConfig
from pyrite.optim import AdamConfig

BATCH = 64
LR = 1e-4


def load_images(n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """`n` MNIST training images (uint8, (n, 28, 28)) and labels, or random ones."""
    try:
        from pyrite.dataset import MnistDataset
        images, labels = MnistDataset("train", download=False).arrays()
        return images[:n].copy(), labels[:n].astype(np.int64), "mnist"
    except Exception:  # noqa: BLE001 - any failure: fall back to random pixels
        rng = np.random.default_rng(0)
        return (rng.integers(0, 256, (n, 28, 28), dtype=np.uint8),
                rng.integers(0, 10, n).astype(np.int64), "random")


# ---- pyrite -------------------------------------------------------------------------------------
def pyrite_batches(images: np.ndarray, labels: np.ndarray, device: str) -> list[Any]:
    batcher = MnistBatcher(device)
    out = []
    for start in range(0, len(images), BATCH):
        items = [{"image": images[i].tobytes(), "label": int(labels[i])}
                 for i in range(start, start + BATCH)]
        out.append(batcher(items))
    return out


def pyrite_runner(images: np.ndarray, labels: np.ndarray) -> Any:
    device = "autodiff<numpy>"
    pyrite.seed(0)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    batches = pyrite_batches(images, labels, device)

    def step(i: int) -> None:
        model = state["model"]
        out = model.train_step(batches[i % len(batches)])
        state["model"] = optim.step(LR, model, out.grads)
    return step


# ---- torch --------------------------------------------------------------------------------------
def torch_runner(images: np.ndarray, labels: np.ndarray, torch: Any) -> Any:
    model = guide_model(torch).train()
    optim = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - 0.1307) / 0.3081
    y = torch.from_numpy(labels)
    batches = [(x[s:s + BATCH], y[s:s + BATCH]) for s in range(0, len(images), BATCH)]

    def step(i: int) -> None:
        xb, yb = batches[i % len(batches)]
        optim.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optim.step()
    return step


# ---- timing -------------------------------------------------------------------------------------
def throughput(runners: dict[str, Any], warmup: int, steps: int,
               repeats: int) -> dict[str, dict[str, Any]]:
    """Images/s of each runner. Repeats alternate between the runners, so on a shared machine
    both see the same conditions; each one's best repeat counts, and each repeat's ratio is
    kept too."""
    for step in runners.values():
        for i in range(warmup):
            step(i)
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(repeats):
        for name, step in runners.items():
            t0 = time.perf_counter()
            for i in range(steps):
                step(i)
            times[name].append(time.perf_counter() - t0)
    return {name: {"images_per_s": steps * BATCH / min(ts),
                   "ms_per_step": min(ts) / steps * 1e3,
                   "ms_per_step_each_repeat": [round(t / steps * 1e3, 2) for t in ts]}
            for name, ts in times.items()}


_LAYERS = [  # (label, path fragment), first match wins. numpy's ufuncs (matmul, add, ...) do
    # not show in cProfile as calls of their own: their time is in the backend method calling them
    ("numpy backend, numpy's kernels included", "backend/numpy"),
    ("numpy C functions called directly", "{built-in method numpy"),
    ("numpy C functions called directly", "{method '"),
    ("autodiff", "backend/autodiff"),
    ("backend composites", "backend/"),
    ("optimizer", "/optim/"),
    ("nn layers", "/nn/"),
    ("module", "/module/"),
    ("tensor front end", "core/"),
]


def profile(step: Any, steps: int, top: int = 20) -> dict[str, Any]:
    prof = cProfile.Profile()
    prof.enable()
    for i in range(steps):
        step(i)
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows, layers = [], {}
    for (file, line, name), (_, ncalls, tottime, cumtime, _) in \
            stats.stats.items():  # type: ignore[attr-defined]
        where = f"{file}:{line}({name})" if file != "~" else name
        rows.append((tottime, cumtime, ncalls, where))
        label = next((lab for lab, frag in _LAYERS if frag in where), "other Python")
        layers[label] = layers.get(label, 0.0) + tottime
    rows.sort(reverse=True)
    short = [{"function": w.replace(str(Path(pyrite.__file__).parent.parent) + "/", ""),
              "own_s": round(t, 4), "cumulative_s": round(c, 4), "calls": n,
              "own_share": round(t / total, 3)} for t, c, n, w in rows[:top]]
    return {"steps": steps, "total_s": round(total, 3),
            "by_layer_share": {k: round(v / total, 3)
                               for k, v in sorted(layers.items(), key=lambda kv: -kv[1])},
            "top_functions_by_own_time": short}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile pyrite's steps")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS / intra-op threads of both pyrite and PyTorch CPU")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()

    images, labels, source = load_images(BATCH * 16)
    try:
        import torch
        if not torch.__version__.startswith("2.13.0"):
            print(f"torch {torch.__version__} found; this benchmark wants torch==2.13.0")
    except ImportError:
        torch = None
    pin_threads(args.threads, torch)

    results: dict[str, Any] = {
        "benchmark": "train_mnist_cpu",
        "model": "Burn guide MNIST (conv 1->8, conv 8->16, adaptive pool 8x8, dropout 0.5, "
                 "linear 1024->512->10), 531178 params",
        "batch_size": BATCH, "optimizer": "Adam", "data": source,
        "steps": args.steps, "warmup": args.warmup, "repeats": args.repeats,
        "threads": args.threads, "load_average": {"start": load_average()},
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "pyrite": pyrite.__version__,
                    "torch": torch.__version__ if torch else None,
                    "torch_threads": torch.get_num_threads() if torch else None},
    }
    runners = {"pyrite_numpy": pyrite_runner(images, labels)}
    if torch is not None:
        runners["torch_cpu"] = torch_runner(images, labels, torch)
    results.update(throughput(runners, args.warmup, args.steps, args.repeats))
    results["load_average"]["end"] = load_average()
    print(f"pyrite (numpy)  {results['pyrite_numpy']['images_per_s']:8.0f} images/s")
    if torch is not None:
        ratio = results["pyrite_numpy"]["images_per_s"] / results["torch_cpu"]["images_per_s"]
        each = [t / p for p, t in zip(results["pyrite_numpy"]["ms_per_step_each_repeat"],
                                      results["torch_cpu"]["ms_per_step_each_repeat"],
                                      strict=True)]
        results["ratio_pyrite_over_torch"] = round(ratio, 3)
        results["ratio_each_repeat"] = [round(r, 3) for r in each]
        results["ratio_median"] = round(statistics.median(each), 3)
        print(f"torch (CPU)     {results['torch_cpu']['images_per_s']:8.0f} images/s")
        print(f"ratio           {ratio:8.3f}  (pyrite / torch; per repeat "
              f"{', '.join(f'{r:.2f}' for r in each)})")
    else:
        results["torch_cpu"] = None
        results["ratio_pyrite_over_torch"] = None
    if args.profile:
        results["pyrite_profile"] = profile(pyrite_runner(images, labels), args.steps)
        print("pyrite time by layer:", results["pyrite_profile"]["by_layer_share"])
        for row in results["pyrite_profile"]["top_functions_by_own_time"][:10]:
            print(f"  {row['own_share']:6.1%}  {row['function']}")
    if args.out:
        write_results(args.out, results)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
