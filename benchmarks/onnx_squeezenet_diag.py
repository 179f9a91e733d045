"""Why one SqueezeNet process is slow and the next is not: the generated module (the runner
benchmarks/onnx_models.py times) in phases, each pass's host time split at the readback, with
the pipelines compiled and the compile counters read around every phase. Run from benchmarks/:

    python onnx_squeezenet_diag.py --models DIR --order alone,turns,turns-peer-first,\\
        turns-nospin,gpu,alone --out diag.json

Phases (`--order`, any order, repeats allowed): `alone` pyrite's passes back to back; `turns`
pyrite then onnxruntime (its default thread pool, which spins between runs), pass by pass, as
onnx_models.py does; `turns-peer-first` the same with onnxruntime first; `turns-nospin` with an
onnxruntime session whose threads do not spin (`session.intra_op.allow_spinning` 0); `gpu`
`--iters` forwards submitted back to back and one readback, so the time per pass is the GPU's
when the host keeps ahead. Each pass records: submit_ms (the call up to the readback: the
host's recording and submit), wait_ms (the readback: the GPU finishing and the copy) and
total_ms. Each phase records the pipelines the runtime compiled during it (0 is the steady
state) and the `pyrite.compile` counters' change.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import write_results
from onnx_models import generated, model_path, ort_session

import pyrite


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "best": min(values), "worst": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="the models folder (default: $PYRITE_MODELS)")
    parser.add_argument("--prebuilt", type=Path, metavar="DIR",
                        help="run from an `onnx_models.py --prebuild DIR` folder")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--order", default="alone,turns,turns-peer-first,turns-nospin,gpu,alone")
    parser.add_argument("--label", default="")
    parser.add_argument("--spin-off", action="store_true",
                        help="the readback blocks at once (native_readback.SPIN_S = 0)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    importlib.import_module("pyrite.webgpu")
    from pyrite.webgpu import native_readback
    from pyrite.webgpu import stats as webgpu_stats

    if args.spin_off:
        native_readback.SPIN_S = 0.0

    path = args.prebuilt if args.prebuilt is not None else model_path(args.models)
    sessions = {"spin": ort_session(path), "nospin": ort_session(path, spin=False)}
    x = np.random.default_rng(0).uniform(-123, 151, (args.batch, 3, 227, 227)).astype(
        np.float32)
    want = sessions["spin"].run(None, {"data": x})[0]
    t0 = time.perf_counter()
    model = generated(path, "webgpu")
    built_ms = (time.perf_counter() - t0) * 1e3
    runtime = pyrite.device("webgpu").kernels.runtime  # type: ignore[attr-defined]
    inner = getattr(runtime, "inner", runtime)
    xt = pyrite.tensor(x, device="webgpu")
    t0 = time.perf_counter()
    got = model(xt).numpy()
    first_ms = (time.perf_counter() - t0) * 1e3
    err = float(np.abs(got - want).max())
    t0 = time.perf_counter()
    model(xt).numpy()
    second_ms = (time.perf_counter() - t0) * 1e3

    def pipelines() -> int:
        return len(inner._pipelines)

    def counters() -> dict[str, Any]:
        s = webgpu_stats("webgpu")
        c = s["compile"]
        return {"pipelines": pipelines(), "captures": c["captures"], "replays": c["replays"],
                "fallbacks": c["fallbacks"], "dispatches": s["runtime"]["dispatches"],
                "submits": s["runtime"]["submits"], "pool_bytes": s["memory"]}

    def pyrite_pass() -> dict[str, float]:
        a = time.perf_counter()
        out = model(xt)
        b = time.perf_counter()
        out.numpy()
        c = time.perf_counter()
        return {"submit_ms": (b - a) * 1e3, "wait_ms": (c - b) * 1e3, "total_ms": (c - a) * 1e3}

    def peer_pass(which: str) -> float:
        a = time.perf_counter()
        sessions[which].run(None, {"data": x})
        return (time.perf_counter() - a) * 1e3

    phases = []
    for phase in args.order.split(","):
        before = counters()
        p0 = time.perf_counter()
        passes: list[dict[str, float]] = []
        peer: list[float] = []
        if phase == "alone":
            passes = [pyrite_pass() for _ in range(args.iters)]
        elif phase.startswith("turns"):
            which = "nospin" if phase == "turns-nospin" else "spin"
            for _ in range(args.iters):
                if phase == "turns-peer-first":
                    peer.append(peer_pass(which))
                    passes.append(pyrite_pass())
                else:
                    passes.append(pyrite_pass())
                    peer.append(peer_pass(which))
        elif phase == "gpu":
            a = time.perf_counter()
            outs = [model(xt) for _ in range(args.iters)]
            outs[-1].numpy()
            passes = [{"total_ms": (time.perf_counter() - a) * 1e3 / args.iters}]
        else:
            raise SystemExit(f"--order: unknown phase {phase!r}; use alone, turns, "
                             f"turns-peer-first, turns-nospin or gpu")
        after = counters()
        row: dict[str, Any] = {
            "phase": phase, "at_s": p0 - started,
            "total_ms": _summary([p["total_ms"] for p in passes]),
            "new_pipelines": after["pipelines"] - before["pipelines"],
            "captures": after["captures"] - before["captures"],
            "replays": after["replays"] - before["replays"],
            "fallbacks": after["fallbacks"] - before["fallbacks"],
            "dispatches": after["dispatches"] - before["dispatches"],
            "submits": after["submits"] - before["submits"], "passes": passes}
        if passes and "wait_ms" in passes[0]:
            row["submit_ms"] = _summary([p["submit_ms"] for p in passes])
            row["wait_ms"] = _summary([p["wait_ms"] for p in passes])
        if peer:
            row["onnxruntime_ms"] = {**_summary(peer), "all": peer}
        phases.append(row)
        extra = f"  ort {row['onnxruntime_ms']['median']:7.2f}" if peer else ""
        split = (f" submit {row['submit_ms']['median']:6.2f} wait {row['wait_ms']['median']:6.2f}"
                 if "wait_ms" in row else "")
        print(f"{args.label:12s} {phase:17s} t={row['at_s']:6.1f}s pyrite "
              f"{row['total_ms']['median']:7.2f} (best {row['total_ms']['best']:6.2f}){split}"
              f"{extra} new pipelines {row['new_pipelines']} captures {row['captures']}",
              flush=True)
    result: dict[str, Any] = {
        "benchmark": "onnx_squeezenet_diag", "label": args.label, "batch": args.batch,
        "spin_s": native_readback.SPIN_S, "env": {k: v for k, v in os.environ.items()
                if k.startswith(("PYRITE_", "__GL_", "OMP_"))},
        "adapter": pyrite.device("webgpu").adapter_info(),  # type: ignore[attr-defined]
        "build_ms": built_ms, "first_call_ms": first_ms, "second_call_ms": second_ms,
        "pipelines_after_first_calls": counters()["pipelines"], "max_abs_diff": err,
        "phases": phases, "end": counters()}
    if args.out:
        write_results(args.out, result)


if __name__ == "__main__":
    main()
