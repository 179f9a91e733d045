"""SqueezeNet 1.1 inference latency: pyrite (numpy and webgpu) against onnxruntime CPU, in the
same run, at batch 1 and 16; plus the ONNX node-test scoreboard.

pyrite runs the module `pyrite import-onnx` generates from the model (the same code the
`/classify` page runs), and `pyrite.onnx.load`'s graph runtime for comparison. onnxruntime runs
the same file with its default CPU settings (all cores), the batch dim made symbolic in memory
(the file declares batch 1). Inputs are random pixels in the model's range (0..255 less the
mean); outputs are checked against onnxruntime before timing.

Timing: wall clock per forward pass including the readback of the probabilities, median of
--iters; each pyrite runner takes turns with onnxruntime, pass by pass, and its ratio is
against the onnxruntime passes of the same turns. The first call (webgpu: it compiles the
kernels) is timed on its own, with the pipelines it compiled; `first_turns` are the turns right
after it and --warmup, as a fresh process meets them; the row's own figures are the steady
turns, after passes back to back have brought the GPU to its working clock (--settle-ms; the
clock from nvidia-smi where there is one). `--threads N` runs both on N threads. The target on
numpy is <= 1.5x onnxruntime's batch-16 latency.

    PYRITE_MODELS=../shared/models python benchmarks/onnx_models.py \\
        --out benchmarks/results/onnx_models.json

A machine without the onnx package (the H100 machine, where a call's files are limited) runs a
folder made beforehand where it is installed: `--prebuild DIR` writes the generated module, its
record and the batch-symbolic model for onnxruntime into DIR; `--prebuilt DIR` runs from it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, load_average, pin_threads, write_results
from gpu_clock import at_working_clock, settle, sm_clock_mhz

import pyrite


def model_path(models: str | None) -> Path:
    root = models or os.environ.get("PYRITE_MODELS")
    if not root:
        raise SystemExit("set PYRITE_MODELS (or --models) to the folder holding "
                         "squeezenet1.1/squeezenet1.1.onnx")
    path = Path(root) / "squeezenet1.1" / "squeezenet1.1.onnx"
    if not path.is_file():
        raise SystemExit(f"{path}: not found")
    return path


PREBUILT_MODEL = "squeezenet1.1_batch_n.onnx"  # in a --prebuild folder: the batch-symbolic model


def symbolic_batch(path: Path) -> bytes:
    """The model's bytes with the batch dim of its inputs and outputs made symbolic (the file
    declares batch 1)."""
    import onnx

    proto = onnx.load(str(path))
    for value in list(proto.graph.input) + list(proto.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    return bytes(proto.SerializeToString())


def ort_session(path: Path, threads: int | None = None, spin: bool = True) -> Any:
    """onnxruntime on the CPU; `threads` intra-op threads (None: its default, all cores);
    `spin` False: its threads block between runs instead of spinning. `path`: the model, or a
    --prebuild folder."""
    import onnxruntime as ort

    blob = (path / PREBUILT_MODEL).read_bytes() if path.is_dir() else symbolic_batch(path)
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])


def prebuild(path: Path, out: Path) -> None:
    """The generated module, its record and the batch-symbolic model, written into `out`."""
    from pyrite.interop.onnx.codegen import import_onnx

    import_onnx(path, out, name="squeezenet", class_name="SqueezeNet")
    (out / PREBUILT_MODEL).write_bytes(symbolic_batch(path))


def generated(path: Path, device: str) -> Any:
    """The `pyrite import-onnx` module with its record, on `device`; `path`: the model (imported
    into a temporary folder) or a --prebuild folder."""
    import importlib.util

    from pyrite.record import BinFileRecorder

    out = path
    if not path.is_dir():
        out = Path(tempfile.mkdtemp(prefix="pyrite-onnx-bench-"))
        prebuild(path, out)
    spec = importlib.util.spec_from_file_location("bench_squeezenet", out / "squeezenet.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SqueezeNet(device).load_file(out / "squeezenet.bin", BinFileRecorder())


def timed(fn: Callable[[], Any], warmup: int, iters: int) -> dict[str, float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": statistics.median(times), "best_ms": min(times)}


def timed_pair(fn: Callable[[], Any], peer: Callable[[], Any], warmup: int,
               iters: int) -> tuple[dict[str, float], dict[str, float]]:
    """`timed` for two runners taking turns, iteration by iteration, so both see the same load
    on a shared machine; the ratio of their medians is the number to trust there."""
    for _ in range(warmup):
        fn()
        peer()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(iters):
        for f, out in ((fn, times[0]), (peer, times[1])):
            t0 = time.perf_counter()
            f()
            out.append((time.perf_counter() - t0) * 1000)
    a, b = ({"median_ms": statistics.median(t), "best_ms": min(t), "times_ms": t}
            for t in times)
    return a, b


def slowest_compiles(device: str, top: int = 5) -> Callable[[], list[tuple[str, float]]]:
    """Starts logging each pipeline the webgpu `device` compiles; the function returned stops
    and gives the `top` slowest (kernel key, ms)."""
    if not device.startswith("webgpu"):
        return lambda: []
    from pyrite.backend.base import layers
    from pyrite.webgpu import WebGpu

    raw = next(b for b in layers(pyrite.device(device)) if isinstance(b, WebGpu))
    runtime = getattr(raw.kernels.runtime, "inner", raw.kernels.runtime)
    compile_one, log = runtime.pipeline, []

    def logged(key: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return compile_one(key, *args, **kwargs)
        finally:
            log.append((str(key)[:120], (time.perf_counter() - start) * 1000))

    runtime.pipeline = logged

    def stop() -> list[tuple[str, float]]:
        del runtime.pipeline  # the class's method again
        return sorted(log, key=lambda kv: -kv[1])[:top]

    return stop


def pipelines(device: str) -> tuple[int, float]:
    """Pipelines a webgpu device has compiled and the milliseconds it took ((0, 0) elsewhere)."""
    if not device.startswith("webgpu"):
        return 0, 0.0
    from pyrite.webgpu import stats

    runtime = stats(device)["runtime"]
    return int(runtime.get("pipelines", 0)), float(runtime.get("pipeline_ms", 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="the models folder (default: $PYRITE_MODELS)")
    parser.add_argument("--devices", default="numpy,webgpu")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--no-scoreboard", action="store_true")
    parser.add_argument("--kinds", default="generated,runtime",
                        help="pyrite runners: the generated module, the graph runtime, and "
                        "generated-eager (the generated forward's Python every call, as "
                        "before it was compiled)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of both pyrite's BLAS and onnxruntime (default: each "
                        "its own default)")
    parser.add_argument("--settle-ms", type=float, default=300,
                        help="webgpu: milliseconds of passes back to back between the first "
                        "turns and the steady ones, then more until nvidia-smi reads the "
                        "GPU's most SM clock (at most 3 s in all; 0: none)")
    parser.add_argument("--prebuild", type=Path, metavar="DIR",
                        help="write the generated module and the batch-symbolic model into "
                        "DIR, then stop")
    parser.add_argument("--prebuilt", type=Path, metavar="DIR",
                        help="run from a --prebuild folder (no onnx package needed)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.prebuild is not None:
        prebuild(model_path(args.models), args.prebuild)
        return
    if args.threads is not None:
        pin_threads(args.threads)
    start_load = load_average()

    if "webgpu" in args.devices:
        importlib.import_module("pyrite.webgpu")  # registers the device from a source tree
    if args.prebuilt is not None and ("runtime" in args.kinds.split(",")
                                      or not args.no_scoreboard):
        raise SystemExit("--prebuilt runs the generated module only: pass --kinds generated "
                         "and --no-scoreboard (the graph runtime and the node tests read "
                         ".onnx files with the onnx package)")
    path = args.prebuilt if args.prebuilt is not None else model_path(args.models)
    session = ort_session(path, args.threads)
    rng = np.random.default_rng(0)
    working = at_working_clock()
    rows: list[dict[str, Any]] = []
    for batch in (int(b) for b in args.batches.split(",")):
        x = rng.uniform(-123, 151, (batch, 3, 227, 227)).astype(np.float32)
        want = session.run(None, {"data": x})[0]
        ort = timed(lambda x=x: session.run(None, {"data": x}), args.warmup, args.iters)
        rows.append({"batch": batch, "runner": "onnxruntime-cpu", **ort})
        print(f"batch {batch:3d} onnxruntime cpu        {ort['median_ms']:9.2f} ms")
        for device in args.devices.split(","):
            for kind in args.kinds.split(","):
                model = generated(path, device) if kind.startswith("generated") else \
                    pyrite.onnx.load(path, device)
                xt = pyrite.tensor(x, device=device)
                # the compiled forward's function: the module's Python runs every call
                run = type(model).forward.fn if kind == "generated-eager" else type(model).__call__
                compiled0 = pipelines(device)
                stop_log = slowest_compiles(device)
                start = time.perf_counter()
                got = run(model, xt).numpy()
                first_ms = (time.perf_counter() - start) * 1000
                slowest = stop_log()
                compiled1 = pipelines(device)
                err = float(np.abs(got - want).max())

                def mine(m: Any = model, xt: Any = xt, run: Any = run) -> Any:
                    return run(m, xt).numpy()

                def peer_run(x: np.ndarray = x) -> Any:
                    return session.run(None, {"data": x})

                # the turns right after the first call (what this benchmark timed until
                # session 8: a fresh process's first seconds), then, after a burst at full
                # load, the steady turns
                clock = {"first_turns": sm_clock_mhz()}
                t_first, peer_first = timed_pair(mine, peer_run, args.warmup, args.iters)
                settled = 0
                if device.startswith("webgpu") and args.settle_ms > 0:
                    settled = settle(lambda m=model, xt=xt, run=run: run(m, xt),
                                     lambda out: out.numpy(), args.settle_ms, working)
                clock["turns"] = sm_clock_mhz()
                t, peer = timed_pair(mine, peer_run, 0, args.iters)
                clock["end"] = sm_clock_mhz()
                compiled2 = pipelines(device)
                ratio = t["median_ms"] / peer["median_ms"]
                first_ratio = t_first["median_ms"] / peer_first["median_ms"]
                rows.append({"batch": batch, "runner": f"pyrite-{device}-{kind}", **t,
                             "onnxruntime_same_run": peer, "vs_onnxruntime": ratio,
                             "first_turns": {**t_first, "onnxruntime_same_run": peer_first,
                                             "vs_onnxruntime": first_ratio},
                             "first_call_ms": first_ms,
                             "pipelines_first_call": compiled1[0] - compiled0[0],
                             "pipeline_ms_first_call": compiled1[1] - compiled0[1],
                             "pipelines_timed": compiled2[0] - compiled1[0],
                             "slowest_compiles_ms": slowest,
                             "settle_passes": settled, "sm_clock_mhz": clock,
                             "max_abs_diff": err, "load_average": load_average()})
                print(f"batch {batch:3d} pyrite {device:7s} {kind:15s} {t['median_ms']:9.2f} ms"
                      f"  {ratio:5.2f}x onnxruntime  (max diff {err:.1e}); first call "
                      f"{first_ms:.0f} ms ({compiled1[0] - compiled0[0]} pipelines, "
                      f"{compiled1[1] - compiled0[1]:.0f} ms), first turns "
                      f"{t_first['median_ms']:.2f} ms {first_ratio:.2f}x, clock {clock}")
    result: dict[str, Any] = {
        "benchmark": "onnx_models", "model": "squeezenet1.1", "cpu": cpu_name(),
        "cores": os.cpu_count(), "python": platform.python_version(),
        "onnxruntime": __import__("onnxruntime").__version__, "threads": args.threads,
        "load_average": {"start": start_load, "end": load_average()}, "rows": rows}
    if "webgpu" in args.devices:
        result["adapter"] = pyrite.device("webgpu").adapter_info()
    if not args.no_scoreboard:
        from pyrite.interop.onnx.node_tests import score
        board = {}
        for device in args.devices.split(","):
            b = score(device)
            board[device] = {"total": len(b.results), **dict(b.totals())}
            print(f"node tests on {device}: {board[device]}")
        result["node_tests"] = board
        result["burn_node_tests"] = {"onnx": "1.19", "total": 1615, "compile": 932,
                                     "match": 830, "source": "the issue's figures"}
    if args.out:
        write_results(args.out, result)


if __name__ == "__main__":
    main()
