"""Where a matmul tile's time goes: the tile as rendered, then with parts of its K loop taken out.

A diagnostic, not a kernel: the cut-down shaders compute wrong products (their spot error is
recorded to show it). For one tile (`--config`, any name `matmul_config.tile` knows), at each
size, it times:

    full          the tile as pyrite renders it
    no_global     without the in-loop global loads (the staged registers keep their values)
    no_staging    without the in-loop global loads and the stores into workgroup memory
    compute_only  without those and without the in-loop barriers: the inner product alone

The gap between two rows is what that part costs where it is not hidden. cuBLAS (TF32 off) in
the same run when a CUDA GPU is present. Timing as in webgpu_matmul.py.

    python benchmarks/webgpu_matmul_anatomy.py --sizes 4096 --out results/x.json
    python benchmarks/webgpu_matmul_anatomy.py --quick --out results/x_lavapipe.json
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np
import webgpu_matmul as wm
from common import cuda_torch, write_results

mc = wm.mc
LOOP = "    var s = 0u;\n    loop {"
CUTS = {
    "full": (),
    "no_global": ("load",),
    "no_staging": ("load", "store"),
    "compute_only": ("load", "store", "barrier"),
}
_PATTERNS = {
    "load": re.compile(r"^\s+[pq][ab]\d+ = load_[ab]4\(.*\n", re.M),
    "store": re.compile(r"^\s+(\{ let r = |[AB]s\[buf\]|buf = \du;).*\n", re.M),
    "barrier": re.compile(r"^\s+workgroupBarrier\(\);\n", re.M),
}


def cut(code: str, parts: tuple[str, ...]) -> str:
    """`code` with the lines of `parts` removed from its K loop (the prologue is kept)."""
    head, sep, loop = code.partition(LOOP)
    if not sep:
        raise SystemExit("the rendered tile has no ping-pong K loop: use a _pp tile")
    for part in parts:
        loop, count = _PATTERNS[part].subn("", loop)
        if not count:
            raise SystemExit(f"nothing to cut for {part!r}: the template changed")
    return head + sep + loop


def time_variant(r: wm.Runner, cfg, code: str, n: int, args) -> dict:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a_buf, b_buf, c_buf = r.buffer(a), r.buffer(b), r.buffer(nbytes=n * n * 4)
    module = wm.shader_module(r.device, cfg, code)  # unchecked for an `_nc` tile
    pipe = r.device.create_compute_pipeline(layout="auto",
                                            compute={"module": module, "entry_point": "main"})
    ubuf = r.device.create_buffer_with_data(data=mc.params_bytes(n, n, n, 1, 0, 0, n * n),
                                            usage=wm.UNIFORM)
    steps = [(pipe, r._bind(pipe, [a_buf, b_buf, c_buf, ubuf]), cfg.dispatch(n, n, 1))]

    def sync():
        r.device.queue.read_buffer(c_buf, 0, 16)

    med, reps, times = wm._time_loop(lambda k: r.submit(steps, k), sync, args.min_ms,
                                     args.warmup, args.iters)
    c = np.frombuffer(r.device.queue.read_buffer(c_buf), np.float32).reshape(n, n)
    ref = a[[0, n - 1]].astype(np.float64) @ b.astype(np.float64)
    rel = float(np.linalg.norm(c[[0, n - 1]] - ref) / np.linalg.norm(ref))
    for buf in (a_buf, b_buf, c_buf, ubuf):
        buf.destroy()
    return {"gflops": 2 * n**3 / med / 1e9, "median_ms": med * 1e3, "reps": reps,
            "times_ms": [round(t * 1e3, 4) for t in times], "spot_rel_err": rel}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=mc.WIDE, help="the tile (default: the ladder's WIDE)")
    ap.add_argument("--sizes", default="2048,4096")
    ap.add_argument("--cuts", default=",".join(CUTS), help="which rows to time, in order")
    ap.add_argument("--quick", action="store_true", help="one small size, short blocks (CPU)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--min-ms", type=float, default=30.0)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.warmup, args.iters, args.min_ms = "256", 1, 2, 5.0

    r = wm.Runner()
    cfg = mc.tile(args.config)
    if cfg.workgroup_bytes > r.max_wg_bytes:
        print(f"note: {cfg.name} needs {cfg.workgroup_bytes} bytes of workgroup memory, the"
              f" adapter gives {r.max_wg_bytes}", flush=True)
    code = mc.render(cfg, True)
    torch = cuda_torch()
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        row: dict = {"n": n, "flop": 2 * n**3, "webgpu": {}}
        for name in args.cuts.split(","):
            row["webgpu"][name] = time_variant(r, cfg, cut(code, CUTS[name]), n, args)
        if torch is not None:
            row["torch_cuda"] = wm.time_torch(torch, n, args)
        rows.append(row)
        peer = row.get("torch_cuda", {}).get("gflops")
        print(f"n={n}: " + "  ".join(f"{k} {v['gflops']:.0f}" for k, v in row["webgpu"].items())
              + (f"  torch {peer:.0f}" if peer else "") + " GFLOP/s", flush=True)
    result = {
        "benchmark": "webgpu_matmul_anatomy",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "device": r.info,
        "peers": ({"torch": {"version": torch.__version__,
                             "device": torch.cuda.get_device_name(0),
                             "allow_tf32": torch.backends.cuda.matmul.allow_tf32}}
                  if torch is not None else {}),
        "config": cfg.as_dict(),
        "method": {"timing": "as webgpu_matmul.py", "warmup": args.warmup, "iters": args.iters,
                   "min_ms": args.min_ms, "cuts": {k: list(v) for k, v in CUTS.items()}},
        "sizes": rows,
    }
    if args.out:
        write_results(Path(args.out), result)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
