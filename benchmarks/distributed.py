"""Data-parallel scaling of the MNIST guide's training (images/s): several devices in one
process (`LearnerBuilder.devices`), and Ray workers (`pyrite.distributed.fit`).

Each run trains the guide model (the committed config: hidden 512, dropout 0.5, Adam) with the
Learner for `--steps` steps of `--batch` images per replica (the global batch grows with the
replicas: weak scaling, as data-parallel training is used), and reads the train split's
images/s from the Learner's own log line (`epoch 1 train: ... items/s`), so set-up and
validation are not counted but the data pipeline is. Efficiency is images/s over
(replicas x the one-replica images/s of the same kind). The load average is recorded before
and after each run.

    python benchmarks/distributed.py --out benchmarks/results/distributed.json
    python benchmarks/distributed.py --out x.json --devices numpy numpy:0,numpy:1 --workers 1 2

By default: numpy alone and on two numpy devices (where numpy is installed); on a machine
with GPU adapters, webgpu:0 alone and all GPU adapters together (compiled steps are on for one
device; several devices run their steps eagerly); with Ray installed, 1 and 2 CPU workers
(more with `--workers`), and GPU workers up to the GPU count. Without Ray the worker runs are
skipped and say so. MNIST is read from $PYRITE_DATA/mnist; where it is missing, random pixels
stand in for the in-process runs (the Ray runs need MNIST: workers read it themselves).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import cpu_name, write_results

import pyrite
from pyrite.dataset import InMemDataset, MnistDataset
from pyrite.demos.mnist.predict import CONFIG
from pyrite.demos.mnist.training import TrainingConfig, build_learner, create_artifact_dir, train

_SPEED = re.compile(r"epoch 1 train: .*\((\d+) iterations, ([\d.]+) s, ([\d,]+) items/s\)")


def _datasets(n: int) -> tuple[Any, Any, str]:
    """MNIST's first `n` digits of each split, or random pixels where MNIST is missing."""
    try:  # never downloads: the GPU machines reach no network
        return (MnistDataset("train", download=False), MnistDataset("test", download=False),
                "mnist")
    except Exception:  # noqa: BLE001 - no MNIST here: random digits do for timing
        import random
        rng = random.Random(0)
        items = [{"image": bytes(rng.randrange(256) for _ in range(784)),
                  "label": rng.randrange(10)} for _ in range(min(n, 4096))]
        return InMemDataset(items), InMemDataset(items[:256]), "random pixels"


def _speed(folder: Path) -> float:
    found = _SPEED.search((folder / "experiment.log").read_text())
    if found is None:
        raise RuntimeError(f"no train speed in {folder / 'experiment.log'}")
    return float(found.group(3).replace(",", ""))


def _config(batch: int, replicas: int) -> TrainingConfig:
    config = TrainingConfig.load(CONFIG).with_num_epochs(1)
    return config.replace(batch_size=batch * replicas, num_workers=0)  # type: ignore[no-any-return]


def run_devices(devices: str, args: argparse.Namespace, data: tuple[Any, Any]) -> dict[str, Any]:
    replicas = len(devices.split(","))
    config = _config(args.batch, replicas)
    with tempfile.TemporaryDirectory(prefix="pyrite-dp-") as tmp:
        folder = Path(tmp)
        create_artifact_dir(folder)
        limit = args.steps * config.batch_size
        load = os.getloadavg()
        first, *more = devices.split(",")  # the model's device records gradients
        names = ",".join([f"autodiff<{first}>", *more])
        learner, train_loader, _ = build_learner(folder, config, names, resume=None,
                                                 limit=limit, data=data)
        learner.fit(train_loader, None)
        speed = _speed(folder)
    return {"kind": "devices", "devices": devices, "replicas": replicas,
            "global_batch": config.batch_size, "steps": args.steps, "images_per_s": speed,
            "load_avg_before": load, "load_avg_after": os.getloadavg()}


def run_workers(workers: int, device: str, args: argparse.Namespace) -> dict[str, Any]:
    config = _config(args.batch, workers)
    with tempfile.TemporaryDirectory(prefix="pyrite-ray-") as tmp:
        folder = Path(tmp)
        load = os.getloadavg()
        train(folder, config, f"autodiff<{device}>", limit=args.steps * config.batch_size,
              workers=workers, checkpoint_every=10_000)
        speed = _speed(folder)
    return {"kind": f"ray-{'gpu' if device == 'webgpu' else 'cpu'}", "devices": device,
            "replicas": workers, "global_batch": config.batch_size, "steps": args.steps,
            "images_per_s": speed, "load_avg_before": load, "load_avg_after": os.getloadavg()}


def _gpu_adapters() -> list[int]:
    """Indices of the adapters that are GPUs on a native API (not OpenGL, not CPU)."""
    try:
        from pyrite.webgpu import adapters
        return [int(str(a["index"])) for a in adapters()
                if a["adapter_type"] in ("DiscreteGPU", "IntegratedGPU")
                and a["backend"] != "OpenGL"]
    except Exception:  # noqa: BLE001 - no wgpu, no adapter: no GPU runs
        return []


def _efficiency(runs: list[dict[str, Any]]) -> None:
    base: dict[str, float] = {}
    for run in runs:
        key = run["kind"] + ":" + run["devices"].split(",")[0].split(":")[0]
        if run["replicas"] == 1:
            base[key] = run["images_per_s"]
        one = base.get(key)
        run["efficiency"] = (round(run["images_per_s"] / (run["replicas"] * one), 3)
                             if one else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=40, help="training steps per run")
    parser.add_argument("--batch", type=int, default=64, help="images per replica and step")
    parser.add_argument("--devices", nargs="*", help="device sets, each comma-separated "
                        "(default: numpy, numpy:0,numpy:1, and the GPU adapters)")
    parser.add_argument("--workers", nargs="*", type=int, default=[1, 2],
                        help="CPU worker counts for Ray (default 1 2)")
    parser.add_argument("--gpu-workers", nargs="*", type=int,
                        help="GPU worker counts for Ray (default 1 and every GPU)")
    args = parser.parse_args()

    gpus = _gpu_adapters()
    sets = args.devices
    if sets is None:
        sets = ["numpy", "numpy:0,numpy:1"] if importlib.util.find_spec("numpy") else []
        if gpus:
            sets += [f"webgpu:{gpus[0]}"]
            if len(gpus) > 1:
                sets += [",".join(f"webgpu:{i}" for i in gpus)]
    train_data, valid_data, source = _datasets(args.steps * args.batch * 8)
    runs: list[dict[str, Any]] = []
    skipped: list[str] = []
    for devices in sets:
        print(f"devices {devices} ...", flush=True)
        runs.append(run_devices(devices, args, (train_data, valid_data)))
        print(f"  {runs[-1]['images_per_s']:.0f} images/s", flush=True)
    try:
        import ray  # noqa: F401
    except ImportError:
        skipped.append("Ray workers: Ray is not installed (pip install 'pyrite[distributed]')")
    else:
        if source != "mnist":
            skipped.append("Ray workers: MNIST not found (set PYRITE_DATA)")
        else:
            plan = [(n, "numpy") for n in args.workers]
            gpu_counts = args.gpu_workers
            if gpu_counts is None:
                gpu_counts = sorted({1, len(gpus)}) if gpus else []
            plan += [(n, "webgpu") for n in gpu_counts]
            for n, device in plan:
                print(f"{n} Ray worker(s) on {device} ...", flush=True)
                runs.append(run_workers(n, device, args))
                print(f"  {runs[-1]['images_per_s']:.0f} images/s", flush=True)
    _efficiency(runs)
    result = {"benchmark": "distributed", "date": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                               time.gmtime()),
              "cpu": cpu_name(), "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
              "pyrite_devices": pyrite.backend_names(), "gpu_adapters": gpus, "data": source,
              "steps": args.steps, "batch_per_replica": args.batch, "runs": runs,
              "skipped": skipped}
    write_results(args.out, result)
    for run in runs:
        print(f"{run['kind']:>8} {run['devices']:<28} x{run['replicas']}: "
              f"{run['images_per_s']:8.0f} images/s, efficiency {run['efficiency']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
