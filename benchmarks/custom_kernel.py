"""A user's kernel against pyrite's own: relu(x @ w + b) three ways on one webgpu device.

- `custom`: `fused_matmul_add_relu` from examples/custom_kernel.py (the Burn book's kernel: one
  invocation per output element, no tiling), on the fused device;
- `custom_tiled`: `fused_matmul_add_relu_tiled`, the same op with the example's kernel that
  tiles lhs and rhs (16 x 16) in workgroup memory;
- `epilogue`: the same expression through Fusion, which runs it as the tiled matmul with the
  add and ReLU as its epilogue;
- `unfused`: the same expression on the raw webgpu backend (matmul, add, relu: three kernels).

Each is timed forward and forward + backward (Autodiff over the same device; the custom op's
backward is the example's, written with tensor ops). Wall clock around `reps` calls and one
device sync, median of --iters; each variant is first checked against numpy in float64.

    python benchmarks/custom_kernel.py --out benchmarks/results/custom_kernel_lavapipe.json --quick
    python custom_kernel.py --out x.json    # from benchmarks/, as the GPU machine runs it
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pyrite
import pyrite.webgpu
from pyrite.activation import relu
from pyrite.backend.autodiff import Autodiff
from pyrite.webgpu import WebGpu
from pyrite.webgpu.fusion import Fusion

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "custom_kernel.py"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("custom_kernel_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _time(fn: Callable[[], object], sync: Callable[[], None], reps: int, iters: int) -> float:
    """Median milliseconds per call: `reps` calls back to back, then one device sync. Every
    result is held through the sync, since Fusion computes only the results still referenced
    when it flushes."""
    held = [fn()]
    sync()
    samples = []
    for _ in range(iters):
        start = time.perf_counter()
        held = [fn() for _ in range(reps)]
        sync()
        samples.append((time.perf_counter() - start) * 1e3 / reps)
        del held
    return statistics.median(samples)


def _forward(ex: Any, name: str) -> Callable[..., pyrite.Tensor]:
    if name == "custom":
        return ex.fused_matmul_add_relu  # type: ignore[no-any-return]
    if name == "custom_tiled":
        return ex.fused_matmul_add_relu_tiled  # type: ignore[no-any-return]
    return lambda x, w, b: relu(x @ w + b)


def _measure(forward: Callable[..., pyrite.Tensor], device: pyrite.Backend,
             arrays: list[np.ndarray], reps: int, iters: int) -> dict[str, float]:
    """Forward and forward + backward times of `forward` on `device`, and its error."""
    x, w, b = (pyrite.tensor(a, device=device) for a in arrays)
    expect = np.maximum(arrays[0].astype(np.float64) @ arrays[1] + arrays[2], 0)
    error = float(np.abs(forward(x, w, b).numpy() - expect).max())
    if error > 1e-3 * max(1.0, float(np.abs(expect).max())):
        raise SystemExit(f"{device.name}: wrong result (max error {error})")
    ms = _time(lambda: forward(x, w, b), device.sync, reps, iters)
    ad = Autodiff(device)
    xa, wa, ba = (pyrite.tensor(a, device=ad).require_grad() for a in arrays)
    # the gradients are returned, so they are held through the sync
    ms_bw = _time(lambda: forward(xa, wa, ba).sum().backward(), device.sync, reps, iters)
    n = arrays[0].shape[0]
    return {"forward_ms": round(ms, 4), "forward_backward_ms": round(ms_bw, 4),
            "forward_gflops": round(2 * n**3 / ms / 1e6, 2), "max_error": error}


def run(sizes: list[int], reps: int, iters: int) -> dict[str, Any]:
    ex = _example()
    raw = WebGpu(seed=0)
    fused = Fusion(raw)
    devices = {"custom": fused, "custom_tiled": fused, "epilogue": fused, "unfused": raw}
    results: list[dict[str, Any]] = []
    rng = np.random.default_rng(0)
    for n in sizes:
        arrays = [rng.normal(size=(n, n)).astype(np.float32) / np.sqrt(n),
                  rng.normal(size=(n, n)).astype(np.float32),
                  rng.normal(size=(n,)).astype(np.float32)]
        row: dict[str, Any] = {"m": n, "k": n, "n": n}
        for name, device in devices.items():
            row[name] = _measure(_forward(ex, name), device, arrays, reps, iters)
        for mine in ("custom", "custom_tiled"):
            for other in ("epilogue", "unfused"):
                for what in ("forward_ms", "forward_backward_ms"):
                    row[f"{mine}_over_{other}_{what.removesuffix('_ms')}"] = round(
                        row[mine][what] / row[other][what], 3)
        results.append(row)
        print(json.dumps(row), flush=True)
    return {"benchmark": "custom_kernel", "adapter": str(raw.adapter),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(), "reps": reps, "iters": iters,
            "note": "ms per call (median); custom*_over_* > 1: the custom kernel is slower",
            "results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true", help="small sizes (lavapipe)")
    parser.add_argument("--sizes", type=int, nargs="*")
    parser.add_argument("--reps", type=int)
    parser.add_argument("--iters", type=int, default=5)
    args = parser.parse_args()
    sizes = args.sizes or ([64, 128] if args.quick else [256, 1024, 2048])
    reps = args.reps or (3 if args.quick else 10)
    report = run(sizes, reps, args.iters)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
