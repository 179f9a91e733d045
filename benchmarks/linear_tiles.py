"""The MNIST guide model's two linear layers as pyrite runs them in a fused step (the product
with its bias add, and ReLU on the first, as the epilogue), on each matmul tile and K split,
each timed alone, against PyTorch (`relu(x @ w + b)`, cuBLAS, fp32, TF32 off) in the same run.

Products: linear1 (batch x 1024 @ 1024 x 512) and linear2 (batch x 512 @ 512 x 10), at the
inference batch (`--infer-batch`, 256) and the training batch (`--batch`, 64). For each tile
of `matmul_config.candidates` (the first --tiles of them; the heuristic's first) and each
number of K slices in --splits, the product runs once through `linalg.matmul_epilogue` with
that choice forced (its result checked against numpy, relative error < 1e-4), its dispatches
are captured and replayed `reps` times in one submission then a device sync (as
`conv_direct.py` does; no host time counted). `heuristic` is what autotune-off runs.

    python benchmarks/linear_tiles.py --quick --out benchmarks/results/linear_tiles_lavapipe.json
    python benchmarks/linear_tiles.py --out $OUT/linear_tiles_h100.json     # about 20 s
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, timed, write_results
from conv_direct import Capture

from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import WebGpu, linalg, matmul_config
from pyrite.webgpu.fused import INPUT, STEP, DenseEpilogue, Program, Step


def _epilogue(k: Any, bias: Any, m: int, n: int, relu: bool) -> DenseEpilogue:
    """acc + bias (broadcast over rows), then ReLU where `relu`: what fusion hands the product."""
    steps = [Step("binary", "add", DType.F32, ((INPUT, 0), (INPUT, 1)))]
    if relu:
        steps.append(Step("unary", "relu", DType.F32, ((STEP, 0),)))
    view = bias.reshaped((1, n)).expanded((m, n))
    words = [m, n, view.offset, *view.strides]
    return DenseEpilogue(Program(tuple(steps), (DType.F32, DType.F32), ()), 0, len(steps) - 1,
                         2, (view,), words)


def run_product(raw: WebGpu, cap: Capture, name: str, m: int, inner: int, n: int, relu: bool,
                torch: Any, args: argparse.Namespace, rng: np.random.Generator) -> dict[str, Any]:
    k = raw.kernels
    a = rng.standard_normal((m, inner), dtype=np.float32)
    w = rng.standard_normal((inner, n), dtype=np.float32) / np.float32(np.sqrt(inner))
    b = rng.standard_normal(n, dtype=np.float32)
    want = a.astype(np.float64) @ w + b
    if relu:
        want = np.maximum(want, 0)
    ga, gw, gb = (raw.from_data(TensorData(v)) for v in (a, w, b))
    tune = k.autotune
    limits = k.runtime.limits
    tiles = matmul_config.candidates(m, n, inner, 1, limits.max_compute_workgroup_storage_size,
                                     limits.max_compute_invocations_per_workgroup)[:args.tiles]
    first, slices = matmul_config.choose_split(m, n, inner, 1,
                                               limits.max_compute_workgroup_storage_size)
    if linalg.splits_k(m, n, inner, 1) and slices == 1:
        slices = matmul_config.split_k(first, m, n, inner, min_split=linalg.MIN_SPLIT)[0]
    row: dict[str, Any] = {"product": name, "m": m, "k": inner, "n": n,
                           "heuristic": f"{first.name}/k{slices}", "ms": {}}
    original = tune.matmul
    for cfg in tiles:
        for splits in sorted({int(s) for s in args.splits.split(",")}):
            if splits > 1 and inner // splits < matmul_config.SPLIT_ALIGN:
                continue

            def forced(*given: Any, cfg: Any = cfg, splits: int = splits, **kw: Any) -> Any:
                return cfg, given[4], splits
            tune.matmul = forced  # type: ignore[method-assign]
            # and no split forced on a product the backend would split: this many slices
            splits_k = linalg.splits_k
            linalg.splits_k = lambda *_, s=splits: s > 1  # type: ignore[assignment]
            try:
                holder: list[Any] = []
                items = cap.take(lambda holder=holder: holder.append(linalg.matmul_epilogue(
                    k, ga, gw, _epilogue(k, gb, m, n, relu))))
            finally:
                tune.matmul = original  # type: ignore[method-assign]
                linalg.splits_k = splits_k
            got = np.asarray(raw.to_data(holder[0]).to_numpy())
            err = float(np.linalg.norm(got - want) / max(float(np.linalg.norm(want)), 1e-30))
            label = f"{cfg.name}/k{splits}"
            if err > 1e-4:
                row.setdefault("failed", {})[label] = err
                continue
            row["ms"][label] = cap.time(items, args.min_ms, args.iters)
    row["best"] = min(row["ms"], key=row["ms"].get) if row["ms"] else None
    if torch is not None:
        ta, tw, tb = (torch.from_numpy(v).cuda() for v in (a, w, b))

        def peer(reps: int) -> None:
            for _ in range(reps):
                y = torch.addmm(tb, ta, tw)
                if relu:
                    torch.relu_(y)
        row["torch_ms"] = round(timed(peer, torch.cuda.synchronize, args.min_ms,
                                      args.iters)["median_ms"], 5)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--infer-batch", type=int, default=256)
    ap.add_argument("--tiles", type=int, default=6, help="candidates timed per product")
    ap.add_argument("--splits", default="1,2,4,8", help="K slices to time")
    ap.add_argument("--min-ms", type=float, default=10.0)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="batches 4 and 8, 2 tiles, short blocks")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.quick:
        args.batch, args.infer_batch, args.tiles, args.min_ms, args.iters = 4, 8, 2, 5.0, 3
    raw = WebGpu(seed=0)
    cap = Capture(raw)
    torch = cuda_torch()
    rng = np.random.default_rng(0)
    rows = []
    for batch in (args.infer_batch, args.batch):
        for name, inner, n, relu in (("linear1", 1024, 512, True), ("linear2", 512, 10, False)):
            row = run_product(raw, cap, f"{name}.b{batch}", batch, inner, n, relu, torch, args,
                              rng)
            rows.append(row)
            print(row, flush=True)
    result = {"benchmark": "linear_tiles", "host": platform.node(), "cpu": cpu_name(),
              "adapter": str(raw.adapter), "min_ms": args.min_ms, "iters": args.iters,
              "torch": torch.__version__ if torch is not None else None, "products": rows}
    if args.out:
        write_results(args.out, result)
    return 1 if any("failed" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
