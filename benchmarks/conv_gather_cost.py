"""Where the time of the conv layer-ops furthest from cuDNN goes: host against GPU, and the
implicit GEMM's gathers against a plain matmul of the same sizes on the same tile.

For each layer-op of `OPS` (SqueezeNet 1.1 at batch `--batch`, the ops still under half of
cuDNN's speed after session 7), each variant is timed in blocks of `reps` launches then one
sync (a 4-byte readback), two ways:
- `ms`: as conv_layers.py times it, the submit policy as it is (`webgpu/batch.py`): the host's
  recording and the GPU's work overlap only where the policy submits mid-block;
- `gpu_ms`: the policy's work rule off, so the whole block is recorded first and submitted at
  the sync: the time from the end of the recording to the sync's return, per launch, is the
  GPU's (plus one submit and readback per block), and `host_ms` the recording's.
Variants: `dispatched` (the backend's op, as a model runs it), `gemm` (conv_gemm.run on the
heuristic's tile, by hand), `plain` (the tiled matmul of the GEMM's M x K @ K x N on that tile,
dense operands, no gather: the floor a gather-free GEMM would reach), `slices/64x32s4`
(webgpu/conv_slices.py), and for a strided input gradient `direct/staged` and `direct/gather`
(webgpu/conv_strided_grad.py and the plain gather), and for a stride-1 3x3 op `winograd`
(webgpu/conv_winograd.py, by hand) and each of its dispatches alone: `winograd/weights`,
`winograd/input` (the input transform), `winograd/matmul` (the 16 batched products) and
`winograd/output` (the output transform). torch's op (cuDNN, TF32 off) is timed in
the same run where CUDA is present. No result is checked here (conv_layers.py and the unit
tests do).

    python benchmarks/conv_gather_cost.py --quick --out results/conv_gather_cost_lavapipe.json
    python benchmarks/conv_gather_cost.py --out $OUT/gather.json        # H100: about 20 s
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import calibrate, cuda_torch, write_results
from conv_shapes import out_shape, squeezenet_layers

import pyrite
from pyrite.data import TensorData

OPS = (("fire6_expand3x3", "forward"), ("fire7_expand3x3", "forward"),
       ("fire8_expand3x3", "forward"), ("fire9_expand3x3", "forward"),
       ("fire4_expand3x3", "input_grad"), ("fire5_expand3x3", "input_grad"),
       ("fire8_expand3x3", "input_grad"), ("fire9_expand3x3", "input_grad"),
       ("fire9_squeeze1x1", "forward"), ("conv1", "input_grad"))


def _time(run: Any, sync: Any, min_ms: float, iters: int) -> dict[str, float]:
    """Median per launch over `iters` blocks: whole block, recording, and recording to sync."""
    reps = calibrate(run, sync, min_ms, warm=2, most=2048)
    whole, host, tail = [], [], []
    for _ in range(iters):
        t0 = time.perf_counter()
        run(reps)
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        whole.append((t2 - t0) / reps)
        host.append((t1 - t0) / reps)
        tail.append((t2 - t1) / reps)
    return {"ms": statistics.median(whole) * 1e3, "host_ms": statistics.median(host) * 1e3,
            "after_record_ms": statistics.median(tail) * 1e3, "reps": reps}


def _variants(raw: Any, layer: dict[str, Any], op: str, rng: np.random.Generator) -> dict[str, Any]:
    from pyrite.dtype import DType
    from pyrite.webgpu import conv as wconv
    from pyrite.webgpu import conv_gemm as cg
    from pyrite.webgpu import conv_winograd as wino
    from pyrite.webgpu import linalg, matmul_config

    k = raw.kernels
    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    xs, ws = layer["x"], layer["w"]

    def put(shape: tuple[int, ...]) -> Any:
        return raw.from_data(TensorData(rng.standard_normal(shape, dtype=np.float32)))

    gx, gw, gb, gdy = put(xs), put(ws), put(ws[:1]), put(out_shape(layer))
    mode = cg.FORWARD if op == "forward" else cg.INPUT_GRAD
    out = k.empty(out_shape(layer) if op == "forward" else xs, DType.F32, "bench")
    a, bias = (gx, gb) if op == "forward" else (gdy, None)
    m, n, kdim = cg.sizes(xs, ws, out_shape(layer)[2:], layer["groups"], mode)
    tile = cg.default_tile(k, (m, n, kdim), layer["groups"], mode)
    found: dict[str, Any] = {
        "dispatched": (lambda: raw.conv2d(gx, gw, gb, *conv)) if op == "forward" else
        (lambda: raw.conv2d_input_grad(gdy, gw, xs, *conv)),
        "gemm": lambda: cg.run(k, tile, out, a, gw, bias, xs, *conv, mode),
        "slices/64x32s4": lambda: wconv.launch_variant(k, op, "slices/64x32s4", out, a, gw,
                                                       bias, xs, *conv),
    }
    if cg.flipped_padding(ws, *conv[:3]) is None and op == "input_grad":
        for name in ("direct/staged", "direct/gather"):
            found[name] = (lambda name=name: wconv.launch_variant(k, op, name, out, a, gw, None,
                                                                  xs, *conv))
    # the plain tiled matmul of the same sizes on the same tile (its interior form where whole)
    from pyrite.webgpu.kernels import KernelKey
    plain = matmul_config.for_shape(matmul_config.tile(tile.name + "_in"), m, n, kdim, 0)
    if "_in" not in plain.name:
        plain = tile
    pa, pb, pc = put((m, kdim)), put((kdim, n)), k.empty((m, n), DType.F32, "bench")
    key = KernelKey("matmul_tiled", plain.name, (DType.F32,) * 3, 0,
                    ("bench", *plain.cache_key(False)))
    pipeline = k.cached(key) or k.pipeline(key, matmul_config.render(plain, False),
                                           checks=cg.NATIVE_CHECKS)
    params = k.constant(matmul_config.params_bytes(m, n, kdim), uniform=True)
    found["plain"] = lambda: k.launch(pipeline, [pa.block.buffer, pb.block.buffer,
                                                 pc.block.buffer, params],
                                      plain.dispatch(m, n), 2.0 * m * n * kdim)
    if wino.takes(ws, *conv):  # the Winograd conv whole, and each of its four dispatches
        flip = op == "input_grad"
        pads = cg.flipped_padding(ws, *conv[:3]) if flip else conv[1]
        assert pads is not None
        src, out_hw = (gdy if flip else gx), out.shape[2:]
        th, tw = wino.tiles(out_hw)
        u = wino.weights(k, gw, flip)
        v = k.empty((16, src.shape[1], src.shape[0] * th * tw), DType.F32, "bench")
        prod = k.dense(linalg.matmul(k, u, v))
        found |= {
            "winograd": lambda: wconv.launch_variant(k, op, wino.NAME, out, a, gw, bias, xs,
                                                     *conv),
            "winograd/weights": lambda: wino.weights(k, gw, flip),
            "winograd/input": lambda: wino.transform_input(k, src, v, out_hw, pads),
            "winograd/matmul": lambda: linalg.matmul(k, u, v),
            "winograd/output": lambda: wino.transform_output(k, prod, bias, out)}
    return found | {"_sizes": (m, n, kdim, tile.name, plain.name)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--min-ms", type=float, default=2.0)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="batch 1, 3 layer-ops (lavapipe)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    ops = OPS[-3:] if args.quick else OPS
    if args.quick:
        args.batch, args.min_ms, args.iters = 1, 5.0, 2
    from pyrite.webgpu import batch
    torch = cuda_torch()
    dev = pyrite.device("webgpu")
    raw = getattr(dev, "inner", dev)
    layers = {lay["name"].split(".")[-1]: lay for lay in squeezenet_layers(args.batch)}
    rng = np.random.default_rng(0)
    rows = []
    for name, op in ops:
        layer = layers[name]
        found = _variants(raw, layer, op, rng)
        m, n, kdim, tile, plain = found.pop("_sizes")
        row: dict[str, Any] = {"layer": name, "op": op, "gemm_mnk": [m, n, kdim], "tile": tile,
                               "plain_tile": plain,
                               "gflop": 2.0 * math.prod(out_shape(layer)) *
                               math.prod(layer["w"][1:]) / 1e9, "variants": {}}
        for vname, make in found.items():
            def run(reps: int, make: Any = make) -> None:
                for _ in range(reps):
                    make()
            timed = _time(run, raw.sync, args.min_ms, args.iters)
            work = batch.POLICY.work
            batch.POLICY.work = math.inf  # the whole block recorded, then submitted at the sync
            try:
                alone = _time(run, raw.sync, args.min_ms, args.iters)
            finally:
                batch.POLICY.work = work
            row["variants"][vname] = {"ms": round(timed["ms"], 4),
                                      "host_ms": round(alone["host_ms"], 4),
                                      "gpu_ms": round(alone["after_record_ms"], 4)}
        if torch is not None:
            row["cudnn_ms"] = round(_torch(torch, layer, op, args), 4)
        rows.append(row)
        print(name, op, {v: (r["ms"], r["gpu_ms"]) for v, r in row["variants"].items()},
              row.get("cudnn_ms"), flush=True)
        if args.out:
            write_results(args.out, {"benchmark": "conv_gather_cost", "partial": True,
                                     "rows": rows})
    info = raw.kernels.runtime.adapter
    result = {"benchmark": "conv_gather_cost", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "device": {"adapter": info.name, "backend": info.backend,
                         "type": info.adapter_type},
              "peer": ({"torch": torch.__version__, "allow_tf32": False}
                       if torch is not None else None),
              "method": {"batch": args.batch, "min_ms": args.min_ms, "iters": args.iters,
                         "autotune": raw.kernels.autotune.mode},
              "rows": rows}
    if args.out:
        write_results(args.out, result)
        print(f"wrote {args.out}")
    return 0


def _torch(torch: Any, layer: dict[str, Any], op: str, args: argparse.Namespace) -> float:
    """cuDNN's op (TF32 off), ms per call in blocks as above."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    (pt, _), (pl, _) = layer["padding"]
    kw = {"stride": layer["stride"], "padding": (pt, pl), "dilation": layer["dilation"],
          "groups": layer["groups"]}
    x = torch.randn(*layer["x"], device="cuda")
    w = torch.randn(*layer["w"], device="cuda")
    b = torch.randn(layer["w"][0], device="cuda")
    dy = torch.randn(*out_shape(layer), device="cuda")
    if op == "forward":
        def f() -> Any:
            return torch.nn.functional.conv2d(x, w, b, **kw)
    else:
        def f() -> Any:
            return torch.nn.grad.conv2d_input(x.shape, w, dy, **kw)

    def run(reps: int) -> None:
        for _ in range(reps):
            f()
    return _time(run, torch.cuda.synchronize, args.min_ms, args.iters)["ms"]


if __name__ == "__main__":
    sys.exit(main())
