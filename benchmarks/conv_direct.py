"""The direct conv kernel's blocks (`webgpu/conv_direct.py`: output channels x pixels of a row
per invocation) on the MNIST guide model's convs, each timed alone, against the implicit GEMM
with the heuristic's tile and PyTorch cuDNN (fp32, TF32 off) in the same run.

Ops: conv1 (1 -> 8, 28x28) and conv2 (8 -> 16, 26x26) forward at the inference batch
(`--infer-batch`, 256) and the training batch (`--batch`, 64), and conv2's input gradient at
the training batch (the direct path runs it as a forward conv of the output gradient with the
flipped, transposed kernel). Each variant runs once (its result checked against the 4x1 block,
the kernel before blocks, relative error < 1e-5), its dispatches are captured, and the same
dispatches are replayed `reps` times in one submission then a device sync, `reps` grown until
a block takes >= --min-ms; the median of --iters blocks (so no host time is counted, as in
`step_kernels.py`). `heuristic` names the block `conv_direct.choose_block` picks (autotune
off); `gemm` is the implicit GEMM with `conv_gemm.default_tile`'s tile. torch: back-to-back
`conv2d` calls then `torch.cuda.synchronize()`.

    python benchmarks/conv_direct.py --quick --out benchmarks/results/conv_direct_lavapipe.json
    python benchmarks/conv_direct.py --out $OUT/conv_direct_h100.json     # about 20 s
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, timed, write_results

from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu import WebGpu, conv, conv_direct, conv_gemm, software
from pyrite.webgpu.conv_direct import Block

_CONV = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)  # stride, padding, dilation, groups


def ops(batch: int, infer_batch: int) -> list[dict[str, Any]]:
    """(name, op, x shape, weight shape) of the timed convs."""
    return [
        {"name": f"conv1.forward.b{infer_batch}", "op": "forward", "x": (infer_batch, 1, 28, 28),
         "w": (8, 1, 3, 3)},
        {"name": f"conv2.forward.b{infer_batch}", "op": "forward", "x": (infer_batch, 8, 26, 26),
         "w": (16, 8, 3, 3)},
        {"name": f"conv1.forward.b{batch}", "op": "forward", "x": (batch, 1, 28, 28),
         "w": (8, 1, 3, 3)},
        {"name": f"conv2.forward.b{batch}", "op": "forward", "x": (batch, 8, 26, 26),
         "w": (16, 8, 3, 3)},
        {"name": f"conv2.input_grad.b{batch}", "op": "input_grad", "x": (batch, 8, 26, 26),
         "w": (16, 8, 3, 3)},
    ]


class Capture:
    """The dispatches a call makes, taken from the runtime (and passed on), for replays."""

    def __init__(self, raw: WebGpu) -> None:
        self.rt = raw.kernels.runtime
        self.items: list[Any] = []
        self._dispatch = self.rt.dispatch

        def dispatch(pipeline: Any, group: Any, grid: Any) -> None:
            self.items.append((pipeline, group, grid))
            self._dispatch(pipeline, group, grid)
        self.rt.dispatch = dispatch

    def take(self, call: Callable[[], None]) -> list[Any]:
        self.items = []
        call()
        self.rt.sync()
        return list(self.items)

    def time(self, items: list[Any], min_ms: float, iters: int) -> float:
        def run(reps: int) -> None:
            self.rt.replay(items * reps)
        return round(timed(run, self.rt.sync, min_ms, iters)["median_ms"], 5)


def run_op(raw: WebGpu, cap: Capture, spec: dict[str, Any], torch: Any,
           args: argparse.Namespace, rng: np.random.Generator) -> dict[str, Any]:
    k = raw.kernels
    xs, ws = spec["x"], spec["w"]
    n, _, h, w_ = xs
    out_hw = (h - ws[2] + 1, w_ - ws[3] + 1)
    x = rng.standard_normal(xs, dtype=np.float32)
    w = rng.standard_normal(ws, dtype=np.float32) / np.float32(np.sqrt(np.prod(ws[1:])))
    b = rng.standard_normal(ws[0], dtype=np.float32)
    dy = rng.standard_normal((n, ws[0], *out_hw), dtype=np.float32)

    def put(a: np.ndarray) -> Any:
        return raw.from_data(TensorData(a))
    gx, gw, gb, gdy = put(x), put(w), put(b), put(dy)
    forward = spec["op"] == "forward"
    out = k.empty((n, ws[0], *out_hw) if forward else xs, DType.F32, "bench")
    soft = software.software(k.runtime.adapter)
    if forward:
        blocks = conv_direct.candidates(n, ws[0], 1, *out_hw)
        pick = conv_direct.choose_block(n, ws[0], 1, *out_hw, ws[1] * 9, soft)

        def direct(block: Block) -> None:
            conv._direct(k, out, gx, gw, gb, *_CONV, block=block)
        mode, a_in, b_in, bias = conv_gemm.FORWARD, gx, gw, gb
    else:
        blocks = conv_direct.candidates(n, xs[1], 1, h, w_)
        pick = conv_direct.choose_block(n, xs[1], 1, h, w_, ws[0] * 9, soft)

        def direct(block: Block) -> None:
            conv._direct_input_grad(k, out, gdy, gw, *_CONV, block=block)
        mode, a_in, b_in, bias = conv_gemm.INPUT_GRAD, gdy, gw, None
    tile = conv_gemm.default_tile(k, conv_gemm.sizes(xs, ws, out_hw, 1, mode), 1, mode)
    row: dict[str, Any] = {"op": spec["name"], "x": list(xs), "w": list(ws),
                           "heuristic": pick.name, "direct_ms": {}}
    want = None
    for block in blocks:
        items = cap.take(lambda block=block: direct(block))
        got = np.asarray(raw.to_data(out).to_numpy())
        if want is None:
            want = got.copy()
        err = float(np.linalg.norm(got - want) / max(float(np.linalg.norm(want)), 1e-30))
        if err > 1e-5:
            row.setdefault("failed", {})[block.name] = err
            continue
        row["direct_ms"][block.name] = cap.time(items, args.min_ms, args.iters)
    items = cap.take(lambda: conv_gemm.run(k, tile, out, a_in, b_in, bias, xs, *_CONV, mode))
    row["gemm"] = {"tile": tile.name, "ms": cap.time(items, args.min_ms, args.iters)}
    timings = row["direct_ms"]
    row["best"] = min(timings, key=timings.get) if timings else None
    if torch is not None:
        import torch.nn.functional as tf
        tx, tw, tb, tdy = (torch.from_numpy(a).cuda() for a in (x, w, b, dy))

        def peer(reps: int) -> None:
            for _ in range(reps):
                if forward:
                    tf.conv2d(tx, tw, tb)
                else:
                    torch.nn.grad.conv2d_input(xs, tw, tdy)
        row["torch_ms"] = round(timed(peer, torch.cuda.synchronize, args.min_ms,
                                      args.iters)["median_ms"], 5)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--infer-batch", type=int, default=256)
    ap.add_argument("--min-ms", type=float, default=10.0)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="batches 4 and 8, short blocks")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.quick:
        args.batch, args.infer_batch, args.min_ms, args.iters = 4, 8, 5.0, 3
    raw = WebGpu(seed=0)
    cap = Capture(raw)
    torch = cuda_torch()
    rng = np.random.default_rng(0)
    rows = []
    for spec in ops(args.batch, args.infer_batch):
        row = run_op(raw, cap, spec, torch, args, rng)
        rows.append(row)
        print(row, flush=True)
    result = {"benchmark": "conv_direct", "host": platform.node(), "cpu": cpu_name(),
              "adapter": str(raw.adapter), "min_ms": args.min_ms, "iters": args.iters,
              "torch": torch.__version__ if torch is not None else None, "ops": rows}
    if args.out:
        write_results(args.out, result)
    return 1 if any("failed" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
