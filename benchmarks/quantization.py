"""Quantized products against f32 in the same run: int8 and int4 matmul/linear on webgpu and
numpy, with whether the WebGPU device compiles WGSL's `dot4I8Packed`.

For each (m, k, n) and device the variants are:

- `f32`: `x @ w`, pyrite's float matmul (the tiled WGSL kernel on webgpu, BLAS on numpy);
- `int8_gemm`: the integer kernel alone on pre-quantized operands (`int8_matmul`: activations
  packed four a u32 word, then the GEMM into i32 accumulators; the weight is packed once);
- `int8_static`: `xq @ qw` with xq already quantized (static quantization): the GEMM plus
  the scales and zero-point corrections (fused elementwise ops on webgpu);
- `int8_dynamic`: `x @ qw` with float x: the activations' range, their quantization, the GEMM
  and the scales;
- `int4_weight_only`: `x @ q4` for a QInt4 weight with per-block (32) params: weights unpacked
  and dequantized in registers (webgpu), dequantize + BLAS (numpy).

Each result is checked first against numpy on its first 128 rows (the int8 GEMM must be
exact, the rest agree with float64). Timing is
wall clock: a block of `reps` calls then `device.sync()` (which waits for the GPU), `reps`
chosen so a block takes >= --min-ms; after a warm-up the variants take turns for --iters
rounds and the median block counts. Throughput is 2*m*k*n per second (GOP/s); `vs_f32` is the
variant's throughput over f32's on the same device.

    python benchmarks/quantization.py --quick --out benchmarks/results/quantization_lavapipe.json
    python benchmarks/quantization.py --out x.json     # the H100 machine: the recipe in the README
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, write_results

import pyrite
import pyrite.webgpu
from pyrite.quantization import QuantizationScheme, QuantizationType, int_kernels

S, T = QuantizationScheme, QuantizationType
Call = Callable[[], Any]
CHECKED_ROWS = 128  # rows of each product checked against numpy before timing


def dot4_report(device: pyrite.Backend) -> dict[str, Any]:
    """What the device says about packed int8 dot products."""
    from pyrite.backend.base import layers
    from pyrite.webgpu.quantized import has_packed_dot
    raw = layers(device)[-1]
    runtime = raw.kernels.runtime  # type: ignore[attr-defined]
    import wgpu
    return {
        "dot4I8Packed_compiles": has_packed_dot(raw.kernels),  # type: ignore[attr-defined]
        "wgsl_language_features": sorted(getattr(wgpu.gpu, "wgsl_language_features", set())),
        "adapter": str(raw.adapter),  # type: ignore[attr-defined]
        "features": sorted(str(f) for f in runtime.features),
        "kernel_dot_product": int_kernels(device).dot_product,  # type: ignore[union-attr]
    }


def timed(calls: dict[str, Call], sync: Call, min_ms: float, warmup: int,
          iters: int) -> dict[str, dict[str, float]]:
    """Median and best ms per call of each variant (turns taken, see the module docstring)."""
    reps: dict[str, int] = {}
    for name, call in calls.items():
        call()
        sync()
        n = 1
        while True:
            start = time.perf_counter()
            for _ in range(n):
                call()
            sync()
            elapsed = (time.perf_counter() - start) * 1e3
            if elapsed >= min_ms or n >= 1 << 14:
                break
            n *= 2
        reps[name] = n
        for _ in range(warmup):
            for _ in range(n):
                call()
            sync()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(iters):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(reps[name]):
                call()
            sync()
            samples[name].append((time.perf_counter() - start) * 1e3 / reps[name])
    return {name: {"median_ms": statistics.median(s), "best_ms": min(s), "reps": reps[name]}
            for name, s in samples.items()}


def run_case(device: pyrite.Backend, m: int, k: int, n: int, args: argparse.Namespace,
             errors: list[str]) -> dict[str, Any]:
    rng = np.random.default_rng(m + k + n)
    x_np = rng.standard_normal((m, k)).astype(np.float32)
    w_np = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    x = pyrite.tensor(x_np, device=device)
    w = pyrite.tensor(w_np, device=device)
    qw = w.quantize_dynamic(S.PerChannelSymmetric(T.QInt8))
    q4 = w.quantize_dynamic(S.PerBlock(T.QInt4, 32))
    xq = x.quantize_dynamic(S.PerTensorAffine(T.QInt8))
    kernels = int_kernels(device)
    assert kernels is not None
    held: list[Any] = []

    def keep(value: Any) -> None:  # results stay alive until the sync, as a caller's would
        held.append(value)

    calls: dict[str, Call] = {
        "f32": lambda: keep(x @ w),
        "int8_gemm": lambda: keep(kernels.int8_matmul(xq.values, qw)),
        "int8_static": lambda: keep(xq @ qw),
        "int8_dynamic": lambda: keep(x @ qw),
        "int4_weight_only": lambda: keep(q4.__rmatmul__(x)),
    }
    # correctness first, on the first CHECKED_ROWS rows (numpy's integer matmul is slow):
    # the int8 GEMM exactly, the rest against float64
    rows = slice(0, min(m, CHECKED_ROWS))
    acc = kernels.int8_matmul(xq.values, qw).numpy()[rows].astype(np.int64)
    want = xq.values.numpy()[rows].astype(np.int64) @ qw.values.numpy().astype(np.int64)
    if not np.array_equal(acc, want):
        errors.append(f"{device.name} {m}x{k}x{n}: int8 GEMM differs from the exact product")
    ref = xq.dequantize().numpy()[rows].astype(np.float64) @ qw.dequantize().numpy()
    got = (xq @ qw).numpy()[rows]
    if not np.allclose(got, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max()):
        errors.append(f"{device.name} {m}x{k}x{n}: int8 static linear differs from float64")
    ref4 = x_np[rows].astype(np.float64) @ q4.dequantize().numpy()
    got4 = (x @ q4).numpy()[rows]
    if not np.allclose(got4, ref4, rtol=1e-3, atol=1e-3 * np.abs(ref4).max()):
        errors.append(f"{device.name} {m}x{k}x{n}: int4 weight-only differs from float64")

    def sync() -> None:
        device.sync()
        held.clear()
    times = timed(calls, sync, args.min_ms, args.warmup, args.iters)
    ops = 2.0 * m * k * n
    f32 = times["f32"]["median_ms"]
    for t in times.values():
        t["gops"] = ops / (t["median_ms"] * 1e-3) / 1e9
        t["vs_f32"] = f32 / t["median_ms"]
    return {"m": m, "k": k, "n": n, "variants": times}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, few iterations (a CPU adapter such as lavapipe)")
    parser.add_argument("--devices", default="webgpu,numpy")
    parser.add_argument("--min-ms", type=float, default=None)
    parser.add_argument("--iters", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    if args.quick:
        gpu_sizes = [(64, 256, 256), (128, 512, 512)]
        cpu_sizes = [(64, 256, 256), (128, 512, 512)]
    else:
        gpu_sizes = [(512, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
                     (8192, 4096, 4096)]
        cpu_sizes = [(64, 1024, 512), (512, 1024, 1024), (1024, 2048, 2048)]
    args.min_ms = args.min_ms or (20.0 if args.quick else 50.0)
    args.iters = args.iters or (3 if args.quick else 5)
    result: dict[str, Any] = {
        "benchmark": "quantization",
        "host": {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
                 "numpy": np.__version__},
        "quick": args.quick, "min_ms": args.min_ms, "iters": args.iters, "devices": {}}
    errors: list[str] = []
    start = time.perf_counter()
    for name in args.devices.split(","):
        device = pyrite.device(name)
        entry: dict[str, Any] = {"backend": device.name, "cases": []}
        if name == "webgpu":
            entry["dot4"] = dot4_report(device)
            print(f"webgpu: {entry['dot4']}", flush=True)
        else:
            entry["dot_product"] = int_kernels(device).dot_product  # type: ignore[union-attr]
        for m, k, n in gpu_sizes if name == "webgpu" else cpu_sizes:
            case = run_case(device, m, k, n, args, errors)
            entry["cases"].append(case)
            line = ", ".join(f"{v}: {t['median_ms']:.3f} ms ({t['vs_f32']:.2f}x)"
                             for v, t in case["variants"].items())
            print(f"{name} {m}x{k}x{n}: {line}", flush=True)
        result["devices"][name] = entry
    result["errors"] = errors
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_results(args.out, result)
    for e in errors:
        print("ERROR:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
