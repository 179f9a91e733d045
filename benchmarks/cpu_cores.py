"""Many cores on the numpy backend: SqueezeNet 1.1 (the generated module) with the sample pool
against one thread of samples, and onnxruntime, in one run on the cores this process may use.

Run it unpinned and pinned to two cores on the same machine:

    PYRITE_MODELS=../shared/models python benchmarks/cpu_cores.py --out results/cores_all.json
    taskset -c 0,1 python benchmarks/cpu_cores.py --out results/cores_2.json

Both sides get --threads (default: the cores this process may run on, from its affinity):
pyrite's BLAS budget (`PYRITE_BLAS_THREADS`, which the pool splits among samples) and
onnxruntime's intra-op threads. Each runner takes turns with onnxruntime pass by pass (see
onnx_models.py); the ratio of medians of the same turns is the figure.
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, load_average, pin_threads, write_results
from onnx_models import generated, model_path, ort_session, timed_pair

import pyrite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="the models folder (default: $PYRITE_MODELS)")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="batches 1,4 and 3 passes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.batches, args.warmup, args.iters = "1,4", 1, 3
    pin_threads(args.threads)
    from pyrite.backend import blas_threads, sample_pool

    start_load = load_average()
    path = model_path(args.models)
    session = ort_session(path, args.threads)
    model = generated(path, "numpy")
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for batch in (int(b) for b in args.batches.split(",")):
        x = rng.uniform(-123, 151, (batch, 3, 227, 227)).astype(np.float32)
        want = session.run(None, {"data": x})[0]
        xt = pyrite.tensor(x, device="numpy")
        err = float(np.abs(model(xt).numpy() - want).max())
        for runner in ("pool", "serial"):
            def run(xt: Any = xt, runner: str = runner) -> Any:
                if runner == "serial":
                    with sample_pool.serial():
                        return model(xt).numpy()
                return model(xt).numpy()

            t, peer = timed_pair(run, lambda x=x: session.run(None, {"data": x}),
                                 args.warmup, args.iters)
            ratio = t["median_ms"] / peer["median_ms"]
            rows.append({"batch": batch, "runner": f"pyrite-numpy-generated-{runner}", **t,
                         "workers": 1 if runner == "serial" else sample_pool.workers(batch),
                         "onnxruntime_same_run": peer, "vs_onnxruntime": ratio,
                         "max_abs_diff": err, "load_average": load_average()})
            print(f"batch {batch:3d} numpy {runner:6s} {t['median_ms']:9.2f} ms   onnxruntime "
                  f"{peer['median_ms']:8.2f} ms   {ratio:6.2f}x")
    result: dict[str, Any] = {
        "benchmark": "cpu_cores", "model": "squeezenet1.1", "cpu": cpu_name(),
        "cores": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
        "threads": args.threads, "blas_budget": blas_threads.budget(),
        "blas_switch": blas_threads.blas_switch() is not None,
        "python": platform.python_version(), "numpy": np.__version__,
        "onnxruntime": __import__("onnxruntime").__version__,
        "load_average": {"start": start_load, "end": load_average()}, "rows": rows}
    if args.out:
        write_results(args.out, result)


if __name__ == "__main__":
    main()
