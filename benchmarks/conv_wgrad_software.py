"""The conv weight gradient's tiled kernel against the implicit GEMM with the tile a page's
software adapter gets (`webgpu/software.py`), each with that adapter's slicing, on a CPU
adapter (lavapipe stands in for a page's SwiftShader: both run WebGPU on the CPU).

Three layer shapes (a 28x28 3x3 of SqueezeNet at batch 1, MNIST's conv2 at batch 16, a 14x14
1x1 at batch 2): `gemm` is `conv_gemm.run` with `conv_gemm.choose_tile(..., software=True)`,
`wgrad` is `conv_wgrad.run` with `conv_wgrad.slice_length(..., soft=True)`. Each result is
checked against numpy first (exit 1 on a mismatch); then `--reps` calls and one readback,
the median of `--iters` such blocks after a warm-up, ms per call.

    python benchmarks/conv_wgrad_software.py --out FILE.json
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, write_results

from pyrite.backend.module_ops import ModuleOps
from pyrite.backend.numpy import NumpyBackend
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import conv_gemm, conv_wgrad
from pyrite.webgpu.backend import WebGpu

LAYERS = {  # x shape, weight shape (stride 1, no padding, one group)
    "fire4_expand3x3 (batch 1)": ((1, 32, 28, 28), (128, 32, 3, 3)),
    "mnist.conv2 (batch 16)": ((16, 8, 26, 26), (16, 8, 3, 3)),
    "fire8_expand1x1 (batch 2)": ((2, 64, 14, 14), (256, 64, 1, 1)),
}
_CONV = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    gpu = WebGpu()
    k = gpu.kernels
    ref = NumpyBackend()
    info = k.runtime.adapter
    rows: list[dict[str, Any]] = []
    ok = True
    for name, (xs, ws) in LAYERS.items():
        rng = np.random.default_rng(0)
        oh, ow = xs[2] - ws[2] + 1, xs[3] - ws[3] + 1
        x = rng.normal(size=xs).astype(np.float32)
        g = rng.normal(size=(xs[0], ws[0], oh, ow)).astype(np.float32)
        want = ref.to_data(ModuleOps.conv2d_weight_grad(ref, x, g, ws, *_CONV)).to_numpy()
        gx, gg = gpu.from_data(TensorData(x)), gpu.from_data(TensorData(g))
        out = k.empty(ws, DType.F32, "bench")
        m, n, kdim = conv_gemm.sizes(xs, ws, (oh, ow), 1, conv_gemm.WEIGHT_GRAD)
        cfg = conv_gemm.choose_tile((m, n, kdim), 1, conv_gemm.WEIGHT_GRAD,
                                    k.runtime.limits.max_compute_workgroup_storage_size, True)
        tile = conv_wgrad.choose_tile(m, n, soft=True)
        length = conv_wgrad.slice_length(tile, m, n, 1, kdim, soft=True)
        variants = {
            f"gemm/{cfg.name}": partial(conv_gemm.run, k, cfg, out, gx, gg, None, xs, *_CONV,
                                        conv_gemm.WEIGHT_GRAD),
            f"wgrad/{tile}/l{length}": partial(conv_wgrad.run, k, out, gx, gg, *_CONV, tile,
                                               length)}
        row: dict[str, Any] = {"layer": name, "x": list(xs), "w": list(ws), "ms": {}}
        for label, run in variants.items():
            run()
            got = gpu.to_data(out).to_numpy()
            err = float(np.abs(got - want).max() / max(1e-30, float(np.abs(want).max())))
            ok = ok and err < 1e-4
            times = []
            for _ in range(args.iters):
                start = time.perf_counter()
                for _ in range(args.reps):
                    run()
                gpu.to_data(out)
                times.append((time.perf_counter() - start) / args.reps * 1e3)
            row["ms"][label] = round(statistics.median(times), 3)
            row.setdefault("rel_err", {})[label] = err
        gemm_ms, wgrad_ms = row["ms"].values()
        row["wgrad_over_gemm"] = round(wgrad_ms / gemm_ms, 3)
        print(f"{name:28s} " + "  ".join(f"{k_} {v:8.1f} ms" for k_, v in row["ms"].items())
              + f"  wgrad/gemm {row['wgrad_over_gemm']:.2f}", flush=True)
        rows.append(row)
    result = {"benchmark": "conv_wgrad_software",
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "host": {"machine": platform.machine(), "cpu": cpu_name(),
                       "python": platform.python_version()},
              "device": {"adapter": info.name, "backend": info.backend,
                         "type": info.adapter_type},
              "method": {"reps": args.reps, "iters": args.iters,
                         "ratio": "wgrad ms / gemm ms (< 1: the tiled kernel faster)"},
              "layers": rows}
    if args.out:
        write_results(args.out, result)
        print(f"wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
