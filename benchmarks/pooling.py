"""Pooling kernels of pyrite's webgpu backend (`webgpu/pool.py`) against the device's own
memory bandwidth and a peer, in the same run.

For max pooling with indices (2x2, stride 2, and 3x3, stride 2, padding 1), average pooling
(3x3, stride 2, padding 1) and their gradients, on the raw `WebGpu` backend's contract methods
(the kernels Autodiff's pooling rules call): time per call and the bytes each must move at
least (every input read once, every output written once), as GB/s and as a fraction of a copy
of the input on the same device (`kernels.copy`, one read and one write per element). The
target is pooling at memory bandwidth: a fraction near 1. Peer: PyTorch CUDA (the same aten
ops, forward and backward) when a CUDA GPU is present.

    python benchmarks/pooling.py --quick --out benchmarks/results/pooling_lavapipe.json
    python benchmarks/pooling.py --out benchmarks/results/pooling_h100.json   # on a GPU
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
from pyrite.webgpu import WebGpu

#: name -> (kernel, stride, padding, max or avg)
CASES = {
    "max_2x2_s2": ((2, 2), (2, 2), 0, True),
    "max_3x3_s2_p1": ((3, 3), (2, 2), 1, True),
    "avg_3x3_s2_p1": ((3, 3), (2, 2), 1, False),
}


def pyrite_ops(gpu: WebGpu, x: Any, case: tuple[Any, ...]
               ) -> dict[str, tuple[Callable[[], Any], int]]:
    """forward and backward of one case as callables, with the bytes each moves at least."""
    kernel, stride, pad, is_max = case
    pads = ((pad, pad), (pad, pad))
    n, c, h, w = x.shape
    if is_max:
        out, index = gpu.max_pool2d_with_indices(x, kernel, stride, pads, (1, 1))
        forward = lambda: gpu.max_pool2d_with_indices(x, kernel, stride, pads, (1, 1))  # noqa: E731
        grad = gpu.full(out.shape, 1.0, out.dtype)
        backward = lambda: gpu.max_pool2d_with_indices_grad(  # noqa: E731
            grad, index, x.shape, kernel, stride, pads, (1, 1))
        out_bytes = out.numel * 8  # values and indices
    else:
        out = gpu.avg_pool2d(x, kernel, stride, pads, True)
        forward = lambda: gpu.avg_pool2d(x, kernel, stride, pads, True)  # noqa: E731
        grad = gpu.full(out.shape, 1.0, out.dtype)
        backward = lambda: gpu.avg_pool2d_grad(grad, x.shape, kernel, stride, pads, True)  # noqa: E731
        out_bytes = out.numel * 4
    in_bytes = x.numel * 4
    return {"forward": (forward, in_bytes + out_bytes),
            "backward": (backward, out_bytes + in_bytes)}


def torch_ops(torch: Any, shape: tuple[int, ...], case: tuple[Any, ...]
              ) -> dict[str, Callable[[], Any]]:
    kernel, stride, pad, is_max = case
    aten = torch.ops.aten
    x = torch.randn(shape, device="cuda")
    if is_max:
        out, index = aten.max_pool2d_with_indices(x, kernel, stride, pad)
        g = torch.ones_like(out)
        return {"forward": lambda: aten.max_pool2d_with_indices(x, kernel, stride, pad),
                "backward": lambda: aten.max_pool2d_with_indices_backward(
                    g, x, kernel, stride, pad, (1, 1), False, index)}
    out = aten.avg_pool2d(x, kernel, stride, pad)
    g = torch.ones_like(out)
    return {"forward": lambda: aten.avg_pool2d(x, kernel, stride, pad),
            "backward": lambda: aten.avg_pool2d_backward(g, x, kernel, stride, pad, False,
                                                         True, None)}


def repeat(fn: Callable[[], Any]) -> Callable[[int], None]:
    def run(reps: int) -> None:
        for _ in range(reps):
            fn()
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="a small input (4, 8, 56, 56)")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--min-ms", type=float, default=50.0)
    args = parser.parse_args()

    shape = (4, 8, 56, 56) if args.quick else (32, 64, 112, 112)
    gpu = WebGpu()
    x = gpu.from_data(TensorData(np.random.default_rng(0).normal(size=shape).astype(np.float32)))
    torch = cuda_torch()
    result: dict[str, Any] = {"benchmark": "pooling", "host": platform.node(), "cpu": cpu_name(),
                              "adapter": str(gpu.adapter), "shape": list(shape),
                              "torch": None if torch is None else torch.__version__}
    copy = timed(repeat(lambda: gpu.kernels.copy(x)), gpu.sync, args.min_ms, args.iters)
    copy_gbs = 2 * x.numel * 4 / copy["median_ms"] / 1e6
    result["copy"] = {**copy, "gb_s": round(copy_gbs, 1)}
    print("copy", result["copy"], flush=True)
    for name, case in CASES.items():
        entry: dict[str, Any] = {}
        peer = None if torch is None else torch_ops(torch, shape, case)
        for part, (fn, nbytes) in pyrite_ops(gpu, x, case).items():
            got = timed(repeat(fn), gpu.sync, args.min_ms, args.iters)
            gbs = nbytes / got["median_ms"] / 1e6
            row: dict[str, Any] = {**got, "bytes": nbytes, "gb_s": round(gbs, 1),
                                   "of_copy_bandwidth": round(gbs / copy_gbs, 3)}
            if peer is not None:
                theirs = timed(repeat(peer[part]), torch.cuda.synchronize, args.min_ms,
                               args.iters)
                row["torch"] = theirs
                row["vs_torch"] = round(theirs["median_ms"] / got["median_ms"], 3)
            entry[part] = row
        result[name] = entry
        print(name, entry, flush=True)
    if args.out:
        write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
