"""Data-parallel scaling (several devices in one process, and Ray workers): the MNIST guide's
training images/s and the charlm's training tokens/s on one device and on several, with compiled
steps (the default) and eagerly, and the final accuracy of one device against several for the
same global batch.

Every throughput run trains with the Learner for two epochs of `--steps` steps and reads the
*second* epoch's items/s from the Learner's own log line (`epoch 2 train: ... items/s`), so the
captures of the first steps, set-up and validation are not counted but the data pipeline is.
The batch grows with the replicas (`--batch` images, `--charlm-batch` windows of 64 characters
per replica: weak scaling, as data-parallel training is used). Efficiency is items/s over
(replicas x the one-replica items/s of the same model and step kind). The load average is
recorded before and after each run.

    python benchmarks/distributed.py --out benchmarks/results/distributed.json
    python benchmarks/distributed.py --quick --out benchmarks/results/distributed_lavapipe.json
    python benchmarks/distributed.py --out x.json --devices numpy numpy:0,numpy:1 --workers 1 2

On a machine with several GPU adapters: webgpu:0 compiled, all GPUs compiled and all GPUs eager,
for MNIST and the charlm; then the accuracy check: the guide model without dropout trained on
one GPU with the global batch and on all GPUs with a slice each, validation accuracy and the
largest relative parameter difference. `--devices` adds runs of the given device sets (numpy
ones too). `--quick` (a machine with one adapter, lavapipe): small sizes, and two devices of
adapter 0 (PYRITE_WEBGPU_DEVICES=0,0) stand for two GPUs. With Ray installed, 1 and 2 CPU
workers (more with `--workers`) and GPU workers up to the GPU count; without it those runs are
skipped and say so. MNIST is read from $PYRITE_DATA/mnist; where it is missing, synthetic
digits (noise with a bright patch whose place is the label: learnable, so accuracies mean
something) stand in for the in-process runs (the Ray runs need MNIST: workers read it).
"""

from __future__ import annotations

import argparse
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

_SPEED = re.compile(r"epoch (\d+) train: .*\((\d+) iterations, ([\d.]+) s, ([\d,]+) items/s\)")
_ACCURACY = re.compile(r"epoch \d+ valid: Accuracy ([\d.]+) %")


def _synthetic(n: int, seed: int) -> list[dict[str, Any]]:
    """`n` 28x28 digits of noise, each with a bright 7x7 patch at one of 10 places (its
    label)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    pixels = rng.integers(0, 96, (n, 28, 28), dtype=np.uint8)
    for label in range(10):
        top, left = 3 + 11 * (label // 5), 1 + 5 * (label % 5)
        rows = labels == label
        pixels[rows, top:top + 7, left:left + 7] = rng.integers(
            200, 256, (int(rows.sum()), 7, 7), dtype=np.uint8)
    return [{"image": pixels[i].tobytes(), "label": int(labels[i])} for i in range(n)]


def _datasets(n: int) -> tuple[Any, Any, str]:
    """MNIST's train and test splits, or synthetic digits where MNIST is missing."""
    try:  # never downloads: the GPU machines reach no network
        return (MnistDataset("train", download=False), MnistDataset("test", download=False),
                "mnist")
    except Exception:  # noqa: BLE001 - no MNIST here: synthetic digits stand in
        return (InMemDataset(_synthetic(n, 0)), InMemDataset(_synthetic(2048, 1)),
                "synthetic digits (no MNIST under $PYRITE_DATA)")


def _log(folder: Path) -> str:
    return (folder / "experiment.log").read_text()


def _speed(folder: Path, epoch: int = 2) -> dict[str, float]:
    """The train split's items/s, iterations and seconds of `epoch`, from the Learner's log."""
    for found in _SPEED.finditer(_log(folder)):
        if int(found.group(1)) == epoch:
            return {"items_per_s": float(found.group(4).replace(",", "")),
                    "iterations": int(found.group(2)), "seconds": float(found.group(3))}
    raise RuntimeError(f"no epoch {epoch} train speed in {folder / 'experiment.log'}")


def _config(batch: int, replicas: int, epochs: int = 2) -> TrainingConfig:
    config = TrainingConfig.load(CONFIG).with_num_epochs(epochs)
    return config.replace(batch_size=batch * replicas, num_workers=0)  # type: ignore[no-any-return]


def _names(devices: str) -> str:
    first, *more = devices.split(",")  # the model's device records gradients
    return ",".join([f"autodiff<{first}>", *more])


def _common(devices: str, compiled: bool, load: Any) -> dict[str, Any]:
    return {"devices": devices, "replicas": len(devices.split(",")), "compiled": compiled,
            "load_avg_before": load, "load_avg_after": os.getloadavg()}


def _watch_parts(learner: Any) -> Any:
    """The compiled several-device step's clock, restarted when epoch 1 ends (None: not
    compiled or one device)."""
    compiled = getattr(learner.parallel, "compiled", None)
    if compiled is None:
        return None
    clock = compiled.clock
    original = learner.step_done

    def step_done(epoch: int, iteration: int, total: int | None, pending: bool) -> None:
        original(epoch, iteration, total, pending)
        if epoch == 1 and iteration == total:
            clock.reset()
    learner.step_done = step_done
    return clock


def _parts(clock: Any, speed: dict[str, float]) -> dict[str, Any]:
    """Where a step's time went (ms per step of epoch 2)."""
    out: dict[str, Any] = {"step_ms": round(1000 * speed["seconds"] / speed["iterations"], 3)}
    if clock is not None:
        out["compiled_parts_ms"] = clock.per_step_ms()
    return out


def run_devices(devices: str, args: argparse.Namespace, data: tuple[Any, Any], *,
                compiled: bool = True) -> dict[str, Any]:
    """MNIST guide training on `devices` in one process: images/s of the second epoch."""
    replicas = len(devices.split(","))
    config = _config(args.batch, replicas)
    with tempfile.TemporaryDirectory(prefix="pyrite-dp-") as tmp:
        folder = Path(tmp)
        create_artifact_dir(folder)
        load = os.getloadavg()
        learner, train_loader, _ = build_learner(
            folder, config, _names(devices), resume=None, limit=args.steps * config.batch_size,
            data=data, compiled=compiled)
        clock = _watch_parts(learner)
        learner.fit(train_loader, None)
        speed = _speed(folder)
    return {"kind": "devices", "model": "mnist", "unit": "images/s",
            "global_batch": config.batch_size, "steps": args.steps,
            "images_per_s": speed["items_per_s"], "speed": speed, **_parts(clock, speed),
            **_common(devices, compiled, load)}


def run_charlm(devices: str, args: argparse.Namespace, *, compiled: bool = True
               ) -> dict[str, Any]:
    """charlm training (the shipped config's sizes) on `devices`: tokens/s of the second
    epoch (the Learner counts one item per predicted character)."""
    from pyrite.demos.charlm.training import default_config, loaders
    from pyrite.train import LearnerBuilder, Loss, NoRenderer

    replicas = len(devices.split(","))
    config = default_config(num_epochs=2, steps_per_epoch=args.charlm_steps,
                            batch_size=args.charlm_batch * replicas)
    with tempfile.TemporaryDirectory(prefix="pyrite-dp-charlm-") as tmp:
        folder = Path(tmp)
        load = os.getloadavg()
        first, *more = _names(devices).split(",")
        ad = pyrite.device(first)
        pyrite.seed(config.seed, device=ad)
        train_loader, _ = loaders(config, ad)
        if more:  # as the charlm's train: batches on the host, one upload per slice
            train_loader.device = pyrite.device("numpy")
        learner = (LearnerBuilder(folder).metric_train_numeric(Loss()).renderer(NoRenderer())
                   .devices([ad, *more]).num_epochs(2).compile(compiled)
                   .build(config.model.init(ad), config.optimizer.init(),
                          config.learning_rate))
        clock = _watch_parts(learner)
        learner.fit(train_loader, None)
        speed = _speed(folder)
    return {"kind": "devices", "model": "charlm", "unit": "tokens/s",
            "global_batch": config.batch_size, "context": config.model.context,
            "steps": args.charlm_steps, "tokens_per_s": speed["items_per_s"], "speed": speed,
            **_parts(clock, speed), **_common(devices, compiled, load)}


def accuracy_check(one: str, several: str, args: argparse.Namespace, data: tuple[Any, Any]
                   ) -> dict[str, Any]:
    """The guide model without dropout, one epoch of `--accuracy-steps` steps of the same
    global batch on `one` device and on `several`: validation accuracy and the largest
    relative parameter difference."""
    import numpy as np

    replicas = len(several.split(","))
    config = _config(args.batch, replicas, epochs=1)
    config = config.replace(model=config.model.replace(dropout=0.0))
    out: dict[str, Any] = {"global_batch": config.batch_size, "steps": args.accuracy_steps,
                           "dropout": 0.0}
    params = []
    for devices in (one, several):
        with tempfile.TemporaryDirectory(prefix="pyrite-dp-acc-") as tmp:
            folder = Path(tmp)
            create_artifact_dir(folder)
            learner, train_loader, valid_loader = build_learner(
                folder, config, _names(devices), resume=None,
                limit=args.accuracy_steps * config.batch_size, data=data)
            model = learner.fit(train_loader, valid_loader)
            found = _ACCURACY.findall(_log(folder))
            out[devices] = {"valid_accuracy_percent": float(found[-1]) if found else None,
                            "valid_items": valid_loader.dataset.len()}
            params.append([p.val.to_data().to_numpy() for p in model.params()])
    out["max_relative_param_difference"] = max(
        float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))
        for a, b in zip(*params, strict=True))
    accuracies = [out[d]["valid_accuracy_percent"] for d in (one, several)]
    out["accuracy_difference_points"] = (round(abs(accuracies[0] - accuracies[1]), 3)
                                         if None not in accuracies else None)
    return out


def run_workers(workers: int, device: str, args: argparse.Namespace) -> dict[str, Any]:
    config = _config(args.batch, workers)
    with tempfile.TemporaryDirectory(prefix="pyrite-ray-") as tmp:
        folder = Path(tmp)
        load = os.getloadavg()
        train(folder, config, f"autodiff<{device}>", limit=args.steps * config.batch_size,
              workers=workers, checkpoint_every=10_000)
        speed = _speed(folder)
    return {"kind": f"ray-{'gpu' if device == 'webgpu' else 'cpu'}", "model": "mnist",
            "unit": "images/s", "global_batch": config.batch_size, "steps": args.steps,
            "images_per_s": speed["items_per_s"], "speed": speed,
            **_common(device, True, load), "replicas": workers}


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
    """Each run's items/s over replicas x the one-replica run of the same kind, model and
    device family (compiled one-device runs are the base of eager ones too)."""
    base: dict[str, float] = {}
    for run in runs:
        key = ":".join([run["kind"], run["model"], run["devices"].split(",")[0].split(":")[0]])
        speed = run["speed"]["items_per_s"]
        if run["replicas"] == 1 and run["compiled"]:
            base[key] = speed
        one = base.get(key)
        run["efficiency"] = round(speed / (run["replicas"] * one), 3) if one else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes; two devices of adapter 0 where there is one GPU")
    parser.add_argument("--steps", type=int, help="MNIST steps per epoch (default 150)")
    parser.add_argument("--batch", type=int, help="MNIST images per replica and step (64)")
    parser.add_argument("--charlm-steps", type=int, help="charlm steps per epoch (60)")
    parser.add_argument("--charlm-batch", type=int,
                        help="charlm windows per replica and step (16)")
    parser.add_argument("--accuracy-steps", type=int,
                        help="steps of the accuracy check (300; 0 skips it)")
    parser.add_argument("--devices", nargs="*", default=[],
                        help="more MNIST device sets, each comma-separated (numpy:0,numpy:1)")
    parser.add_argument("--no-eager", action="store_true",
                        help="skip the eager several-GPU runs")
    parser.add_argument("--workers", nargs="*", type=int, default=[1, 2],
                        help="CPU worker counts for Ray (default 1 2)")
    parser.add_argument("--gpu-workers", nargs="*", type=int,
                        help="GPU worker counts for Ray (default 1 and every GPU)")
    args = parser.parse_args()
    small = {"steps": 3, "batch": 8, "charlm_steps": 2, "charlm_batch": 2, "accuracy_steps": 6}
    full = {"steps": 150, "batch": 64, "charlm_steps": 60, "charlm_batch": 16,
            "accuracy_steps": 300}
    for name, value in (small if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)

    gpus = _gpu_adapters()
    gpu_names = [f"webgpu:{i}" for i in range(len(gpus))]
    shared = None
    if args.quick and len(gpus) < 2 and _has_adapter():
        os.environ["PYRITE_WEBGPU_DEVICES"] = "0,0"  # two devices of one adapter
        gpu_names, shared = ["webgpu:0", "webgpu:1"], "webgpu:0 and webgpu:1 on adapter 0"
    # the GPU adapters in wgpu's order are webgpu:0.. unless they are not the first adapters
    if gpus and gpus != list(range(len(gpus))) and shared is None:
        gpu_names = [f"webgpu:{i}" for i in gpus]
    widest = max([len(gpu_names), *(len(d.split(",")) for d in args.devices), 1])
    train_data, valid_data, source = _datasets(
        max(args.steps, args.accuracy_steps) * args.batch * widest)
    data = (train_data, valid_data)
    plan: list[tuple[str, str, bool]] = []  # (model, devices, compiled)
    if gpu_names:
        everything = ",".join(gpu_names)
        for model in ("mnist", "charlm"):
            plan.append((model, gpu_names[0], True))
            if len(gpu_names) > 1:
                plan.append((model, everything, True))
                if not args.no_eager:
                    plan.append((model, everything, False))
    plan += [("mnist", devices, True) for devices in args.devices]
    runs: list[dict[str, Any]] = []
    skipped: list[str] = []
    for model, devices, compiled in plan:
        print(f"{model} on {devices} ({'compiled' if compiled else 'eager'}) ...", flush=True)
        if model == "mnist":
            runs.append(run_devices(devices, args, data, compiled=compiled))
        else:
            runs.append(run_charlm(devices, args, compiled=compiled))
        print(f"  {runs[-1]['speed']['items_per_s']:.0f} {runs[-1]['unit']}", flush=True)
    accuracy = None
    if len(gpu_names) > 1 and args.accuracy_steps:
        print("accuracy: one GPU against all ...", flush=True)
        accuracy = accuracy_check(gpu_names[0], ",".join(gpu_names), args, data)
        print(f"  {accuracy}", flush=True)
    elif args.accuracy_steps:
        skipped.append("accuracy check: fewer than two GPU devices")
    _ray_runs(args, gpus, source, runs, skipped)
    _efficiency(runs)
    result = {"benchmark": "distributed", "date": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                               time.gmtime()),
              "cpu": cpu_name(), "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
              "pyrite_devices": pyrite.backend_names(), "gpu_adapters": gpus,
              "gpu_devices": gpu_names, "shared_adapter": shared, "adapters": _adapter_names(),
              "data": source, "quick": args.quick, "epochs": 2, "timed_epoch": 2,
              "steps": args.steps, "batch_per_replica": args.batch,
              "charlm_steps": args.charlm_steps, "charlm_windows_per_replica": args.charlm_batch,
              "runs": runs, "accuracy": accuracy, "skipped": skipped}
    write_results(args.out, result)
    for run in runs:
        mode = "compiled" if run["compiled"] else "eager"
        print(f"{run['kind']:>8} {run['model']:<7} {run['devices']:<22} {mode:<8} "
              f"x{run['replicas']}: {run['speed']['items_per_s']:9.0f} {run['unit']}, "
              f"efficiency {run['efficiency']}, {run.get('step_ms')} ms/step "
              f"{run.get('compiled_parts_ms', '')}")
    print(f"wrote {args.out}")
    return 0


def _has_adapter() -> bool:
    try:
        from pyrite.webgpu import adapters
        return bool(adapters())
    except Exception:  # noqa: BLE001 - no wgpu, no adapter
        return False


def _adapter_names() -> list[str]:
    try:
        from pyrite.webgpu import adapters
        return [f"{a['index']}: {a['name']} ({a['adapter_type']}, {a['backend']})"
                for a in adapters()]
    except Exception:  # noqa: BLE001 - no wgpu, no adapter
        return []


def _ray_runs(args: argparse.Namespace, gpus: list[int], source: str,
              runs: list[dict[str, Any]], skipped: list[str]) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        skipped.append("Ray workers: Ray is not installed (pip install 'pyrite[distributed]')")
        return
    if source != "mnist":
        skipped.append("Ray workers: MNIST not found (set PYRITE_DATA)")
        return
    if args.quick:
        skipped.append("Ray workers: not in --quick")
        return
    plan = [(n, "numpy") for n in args.workers]
    gpu_counts = args.gpu_workers
    if gpu_counts is None:
        gpu_counts = sorted({1, len(gpus)}) if gpus else []
    plan += [(n, "webgpu") for n in gpu_counts]
    for n, device in plan:
        print(f"{n} Ray worker(s) on {device} ...", flush=True)
        runs.append(run_workers(n, device, args))
        print(f"  {runs[-1]['images_per_s']:.0f} images/s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
