"""fp32 matmul throughput of pyrite's tiled WGSL kernel (wgpu-py) against a peer in the same run.

Peers: PyTorch CUDA fp32 with TF32 off when a CUDA GPU is present; numpy's matmul otherwise (or
with --numpy). The script is standalone: it drives wgpu-py directly and imports only
webgpu/matmul_config.py (by path), which renders shaders/matmul_tiled.wgsl.

It first checks the kernel against numpy (float64 reference) on small ragged, batched and
broadcast cases, for each tile configuration it will time and for both the vec4 (aligned) and the
scalar variant; then it times square sizes. Timing is wall clock around queue submit plus a
readback of 16 bytes of C (which waits for the GPU): `reps` back-to-back dispatches per block,
grown until a block really lasts >= --min-ms, --warmup such blocks, then --iters timed blocks,
median.
The peers are timed the same way (torch: `reps` matmuls then torch.cuda.synchronize()).

    python benchmarks/webgpu_matmul.py --out benchmarks/results/webgpu_matmul_lavapipe.json
    python benchmarks/webgpu_matmul.py --sweep --sizes 4096 --out r.json   # all configs
    python benchmarks/webgpu_matmul.py --split --subgroup both --out r.json  # the variants

--subgroup times each config's subgroup twin (needs the adapter's subgroup feature) along with
it, instead of it, or not; --split adds each config with K split into slices where that gives
the GPU more workgroups (the partial products added by shaders/matmul_split_sum.wgsl, timed
with it).

Exit status 1 if a correctness check fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time
import types
from pathlib import Path

import numpy as np
import wgpu
from common import cuda_torch, write_results

ROOT = Path(__file__).resolve().parent.parent


def _load_matmul_config():
    """webgpu/matmul_config.py (and matmul_render.py, which it imports relatively) without
    importing pyrite: a bare package whose path is webgpu/."""
    package = types.ModuleType("pyrite_matmul")
    package.__path__ = [str(ROOT / "webgpu")]
    sys.modules[package.__name__] = package
    spec = importlib.util.spec_from_file_location(
        "pyrite_matmul.matmul_config", ROOT / "webgpu" / "matmul_config.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up
    spec.loader.exec_module(mod)
    return mod


mc = _load_matmul_config()


def _load_unchecked_module():
    """webgpu/unchecked_module.py (standard library and wgpu-py only), by path."""
    spec = importlib.util.spec_from_file_location(
        "pyrite_matmul.unchecked_module", ROOT / "webgpu" / "unchecked_module.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


unchecked_module = _load_unchecked_module()


def shader_module(device, cfg, code: str):
    """The module of a config: without (some of) naga's run-time checks where the config says
    so (matmul_options `_nc`, `_nb`, `_nl`; an error if this wgpu-py cannot), else wgpu-py's."""
    if cfg is not None and cfg.checks != unchecked_module.ALL_CHECKS:
        module = unchecked_module.create(device, code, cfg.name, cfg.checks)
        if module is None:
            raise SystemExit(f"{cfg.name}: this wgpu-py has no unchecked shader modules")
        return module
    return device.create_shader_module(code=code)

STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
UNIFORM = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST


class Runner:
    """A wgpu device plus a pipeline cache for the matmul template."""

    def __init__(self, power_preference: str = "high-performance"):
        self.adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        lim = self.adapter.limits
        wanted = {
            "max-compute-workgroup-storage-size": lim["max-compute-workgroup-storage-size"],
            "max-storage-buffer-binding-size": lim["max-storage-buffer-binding-size"],
            "max-buffer-size": lim["max-buffer-size"],
        }
        features = [f for f in ("subgroup",) if f in self.adapter.features]
        self.device = self.adapter.request_device_sync(required_limits=wanted,
                                                       required_features=features)
        self.subgroup = "subgroup" in features
        self.max_wg_bytes = wanted["max-compute-workgroup-storage-size"]
        self.max_binding = wanted["max-storage-buffer-binding-size"]
        self.pipelines: dict[tuple, wgpu.GPUComputePipeline] = {}
        self.compile_s: dict[str, float] = {}

    @property
    def info(self) -> dict:
        d = dict(self.adapter.info)
        return {
            "adapter": d.get("device", ""),
            "vendor": d.get("vendor", ""),
            "description": d.get("description", ""),
            "backend": d.get("backend_type", ""),
            "adapter_type": d.get("adapter_type", ""),
            "wgpu_py": wgpu.__version__,
            "max_compute_workgroup_storage_size": self.max_wg_bytes,
            "subgroup_feature": self.subgroup,
            "subgroup_sizes": [d.get("subgroup_min_size"), d.get("subgroup_max_size")],
        }

    @property
    def is_cpu(self) -> bool:
        return dict(self.adapter.info).get("adapter_type", "") == "CPU"

    def pipeline(self, cfg, aligned: bool):
        key = cfg.cache_key(aligned) if cfg is not None else ("split_sum",)
        if key not in self.pipelines:
            code = mc.render(cfg, aligned) if cfg is not None else mc.split_sum_source()
            if os.environ.get("PYRITE_DEBUG") == "wgsl":
                print(f"// {key}\n{code}", file=sys.stderr)
            t0 = time.perf_counter()
            module = shader_module(self.device, cfg, code)
            self.pipelines[key] = self.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"}
            )
            name = cfg.name if cfg is not None else "split_sum"
            self.compile_s[f"{name}/{'vec4' if aligned else 'scalar'}"] = round(
                time.perf_counter() - t0, 3
            )
        return self.pipelines[key]

    def buffer(self, data: np.ndarray | None = None, nbytes: int = 0):
        if data is not None:
            return self.device.create_buffer_with_data(
                data=np.ascontiguousarray(data, dtype=np.float32), usage=STORAGE
            )
        return self.device.create_buffer(size=max(16, nbytes), usage=STORAGE)

    def _bind(self, pipe, buffers):
        return self.device.create_bind_group(
            layout=pipe.get_bind_group_layout(0),
            entries=[{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(buffers)],
        )

    def prepare(self, cfg, a_buf, b_buf, c_buf, m, n, k, batch, sa, sb, aligned, splits=1):
        """The dispatches of one product: [(pipeline, bind group, workgroups)], the matmul and,
        with K split into `splits` slices, the kernel adding the partial products."""
        pipe = self.pipeline(cfg, aligned)
        length = mc.split_length(k, splits) if splits > 1 else 0
        ubuf = self.device.create_buffer_with_data(
            data=mc.params_bytes(m, n, k, batch, sa, sb, m * n, splits=splits, k_split=length),
            usage=UNIFORM,
        )
        if splits == 1:
            return [(pipe, self._bind(pipe, [a_buf, b_buf, c_buf, ubuf]),
                     cfg.dispatch(m, n, batch))], [ubuf]
        parts = self.buffer(nbytes=batch * splits * m * n * 4)
        data, groups = mc.split_sum_params(batch * m * n, m * n, splits)
        sbuf = self.device.create_buffer_with_data(data=data, usage=UNIFORM)
        spipe = self.pipeline(None, False)
        return [(pipe, self._bind(pipe, [a_buf, b_buf, parts, ubuf]),
                 cfg.dispatch(m, n, batch * splits)),
                (spipe, self._bind(spipe, [parts, c_buf, sbuf]), groups)], [ubuf, parts, sbuf]

    def submit(self, steps, reps: int = 1):
        enc = self.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        for _ in range(reps):
            for pipe, bind, groups in steps:
                cp.set_pipeline(pipe)
                cp.set_bind_group(0, bind)
                cp.dispatch_workgroups(*groups)
        cp.end()
        self.device.queue.submit([enc.finish()])


def run_matmul(r: Runner, cfg, a: np.ndarray, b: np.ndarray, aligned: bool | None = None,
               splits: int = 1):
    """C = A @ B on the GPU for a: (batch|1, M, K), b: (batch|1, K, N); returns (batch, M, N)."""
    ba, m, k = a.shape
    bb, k2, n = b.shape
    assert k == k2
    batch = max(ba, bb)
    sa = 0 if ba == 1 else m * k
    sb = 0 if bb == 1 else k * n
    if aligned is None:
        aligned = mc.is_aligned(n, k, (sa, sb, m * n))
    a_buf, b_buf = r.buffer(a), r.buffer(b)
    c_buf = r.buffer(np.full((batch, m, n), np.nan, np.float32))  # poison: unwritten shows NaN
    steps, _ = r.prepare(cfg, a_buf, b_buf, c_buf, m, n, k, batch, sa, sb, aligned, splits)
    r.submit(steps)
    out = r.device.queue.read_buffer(c_buf)
    return np.frombuffer(out, np.float32).reshape(batch, m, n)


def check(r: Runner, configs, seed: int = 0) -> list[dict]:
    """Compare with a float64 numpy reference on ragged, batched and broadcast shapes."""
    rng = np.random.default_rng(seed)
    cases = [
        # (batch_a, batch_b, M, N, K)
        (1, 1, 1, 1, 1),
        (1, 1, 37, 45, 29),  # nothing aligned, K not a multiple of BK
        (3, 3, 70, 132, 36),  # aligned, ragged M / N tiles
        (4, 1, 65, 68, 100),  # B broadcast over the batch
        (1, 2, 129, 260, 20),  # A broadcast
        (2, 2, 200, 136, 300),
    ]
    results = []
    for cfg, splits in configs:
        todo = cases + ([(1, 1, 130, 140, 1100), (2, 2, 64, 68, 700)] if splits > 1 else [])
        if cfg.clamped:  # clamped loads (`_cl`): K whole steps, M and N ragged
            todo = [(ba, bb, m, n, -(-k // cfg.bk) * cfg.bk) for ba, bb, m, n, k in todo]
        if cfg.interior:  # no bound compares (`_in`): only shapes whose workgroups are interior
            bm, bn, bk = cfg.bm, cfg.bn, cfg.bk
            todo = [(1, 1, bm, bn, bk), (3, 3, 2 * bm, bn, 5 * bk), (4, 1, bm, 2 * bn, 3 * bk),
                    (1, 2, 3 * bm, bn, 2 * bk)] + ([(1, 1, bm, bn, 1024)] if splits > 1 else [])
        for ba, bb, m, n, k in todo:
            a = rng.standard_normal((ba, m, k), dtype=np.float32)
            b = rng.standard_normal((bb, k, n), dtype=np.float32)
            ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
            variants = [False] + ([True] if mc.is_aligned(n, k) else [])
            for aligned in variants:
                out = run_matmul(r, cfg, a, b, aligned, splits)
                rel = float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))
                ok = bool(np.isfinite(out).all() and rel < 1e-5)
                results.append(
                    {
                        "config": variant_name(cfg, splits),
                        "shape": [max(ba, bb), m, n, k],
                        "broadcast": "A" if ba < bb else "B" if bb < ba else "",
                        "variant": "vec4" if aligned else "scalar",
                        "rel_err": rel,
                        "ok": ok,
                    }
                )
    return results


def _time_loop(run_once, sync, min_ms: float, warmup: int, iters: int):
    """Median seconds per op: iterations of `reps` ops each, wall clock incl. sync.

    `reps` is grown until one block really lasts >= min_ms (a first guess from one op is
    dominated by the submit + readback latency at mid sizes, which gave blocks of a few ms with
    the GPU idle between them), and the GPU is kept busy for `warmup` such blocks first: on
    the H100 a 1024 product measured 0.59 ms per op in short blocks after idle gaps and
    0.12 ms in the same run once the clocks were up (results/webgpu_matmul_h100_*.json)."""
    run_once(1)
    sync()
    reps = 1
    while True:
        t0 = time.perf_counter()
        run_once(reps)
        sync()
        took = time.perf_counter() - t0
        if took * 1e3 >= min_ms or reps >= 4000:
            break
        reps = min(4000, max(2 * reps, int(reps * min_ms / 1e3 / max(took, 1e-6)) + 1))
    for _ in range(warmup):
        run_once(reps)
        sync()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        run_once(reps)
        sync()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times), reps, times


def variant_name(cfg, splits: int) -> str:
    return cfg.name + (f"/k{splits}" if splits > 1 else "")


def parse_variant(name: str):
    cfg, _, splits = name.partition("/k")
    return mc.tile(cfg), int(splits or 1)


def time_webgpu(r: Runner, cfg, n: int, args, splits: int = 1) -> dict:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a_buf, b_buf, c_buf = r.buffer(a), r.buffer(b), r.buffer(nbytes=n * n * 4)
    aligned = mc.is_aligned(n, n)
    steps, extra = r.prepare(cfg, a_buf, b_buf, c_buf, n, n, n, 1, 0, 0, aligned, splits)

    def sync():
        r.device.queue.read_buffer(c_buf, 0, 16)

    med, reps, times = _time_loop(
        lambda k: r.submit(steps, k), sync, args.min_ms, args.warmup, args.iters
    )
    # spot check of the timed result (rows 0 and n-1)
    c = np.frombuffer(r.device.queue.read_buffer(c_buf), np.float32).reshape(n, n)
    rows = [0, n - 1]
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    rel = float(np.linalg.norm(c[rows] - ref) / np.linalg.norm(ref))
    for buf in (a_buf, b_buf, c_buf, *extra):
        buf.destroy()
    return {
        "config": variant_name(cfg, splits),
        "subgroup": cfg.subgroup,
        "splits": splits,
        "variant": "vec4" if aligned else "scalar",
        "gflops": 2 * n**3 / med / 1e9,
        "median_ms": med * 1e3,
        "reps": reps,
        "times_ms": [round(t * 1e3, 4) for t in times],
        "spot_rel_err": rel,
    }


def time_torch(torch, n: int, args) -> dict:
    g = torch.Generator(device="cuda").manual_seed(n)
    a = torch.randn(n, n, device="cuda", dtype=torch.float32, generator=g)
    b = torch.randn(n, n, device="cuda", dtype=torch.float32, generator=g)
    c = torch.empty(n, n, device="cuda", dtype=torch.float32)

    def run_once(k):
        for _ in range(k):
            torch.matmul(a, b, out=c)

    med, reps, times = _time_loop(
        run_once, torch.cuda.synchronize, args.min_ms, args.warmup, args.iters
    )
    return {
        "gflops": 2 * n**3 / med / 1e9,
        "median_ms": med * 1e3,
        "reps": reps,
        "times_ms": [round(t * 1e3, 4) for t in times],
    }


def time_numpy(n: int, args) -> dict:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    med, reps, times = _time_loop(
        lambda k: [np.matmul(a, b, out=c) for _ in range(k)],
        lambda: None,
        args.min_ms,
        args.warmup,
        args.iters,
    )
    return {
        "gflops": 2 * n**3 / med / 1e9,
        "median_ms": med * 1e3,
        "reps": reps,
        "times_ms": [round(t * 1e3, 4) for t in times],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="256,512,1024,2048,4096")
    ap.add_argument(
        "--max-size",
        type=int,
        default=None,
        help="skip larger sizes (default 1024 on a CPU adapter, else no cap)",
    )
    ap.add_argument(
        "--configs",
        default="",
        help="comma-separated config names to time (default: the one choose_config picks per size)",
    )
    ap.add_argument("--sweep", action="store_true", help="time every config in CONFIGS")
    ap.add_argument(
        "--subgroup",
        choices=("both", "on", "off"),
        default="both",
        help="time each config's subgroup twin too (both), instead (on) or never (off); twins "
        "need the adapter's subgroup feature",
    )
    ap.add_argument(
        "--split",
        action="store_true",
        help="also time each config with K split (matmul_config.split_k) where that adds tiles",
    )
    ap.add_argument("--numpy", action="store_true", help="also time numpy on a GPU machine")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-numpy", action="store_true", help="never time numpy")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument(
        "--min-ms",
        type=float,
        default=50.0,
        help="target wall time of one timed iteration (sets reps)",
    )
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    r = Runner()
    info = r.info
    print(f"adapter: {info['adapter']} ({info['backend']}, {info['adapter_type']})", flush=True)
    max_size = args.max_size or (1024 if r.is_cpu else 1 << 30)
    sizes = [int(s) for s in args.sizes.split(",") if int(s) <= max_size]

    fitting = [c for c in mc.CONFIGS.values()
               if c.workgroup_bytes <= r.max_wg_bytes and (r.subgroup or not c.subgroup)]
    # what pyrite runs with autotune off: choose_split's tile and slices of K
    # (natively, the interior twin where every workgroup is interior: matmul_config.for_shape)
    chosen = {n: (mc.for_shape(cfg, n, n, n, r.max_wg_bytes), s) for n in sizes
              for cfg, s in [mc.choose_split(n, n, n, 1, r.max_wg_bytes)]}

    def twins(cfgs):
        """cfgs with their subgroup twins, per --subgroup (a twin needs the feature)."""
        out = []
        for c in cfgs:
            twin = mc.CONFIGS.get(c.name + mc.SUBGROUP_SUFFIX) if r.subgroup else None
            if c.subgroup or args.subgroup != "on" or twin is None:
                out.append(c)
            if twin is not None and not c.subgroup and args.subgroup != "off":
                out.append(twin)
        return out

    def variants(n):
        """(config, splits) timed at size n."""
        if args.sweep:
            cfgs = [c for c in fitting if args.subgroup != "off" or not c.subgroup]
        elif args.configs:  # an interior config (`_in`) runs guarded where n is ragged
            return [(mc.for_shape(c, n, n, n, 0), s)
                    for c, s in map(parse_variant, args.configs.split(","))]
        else:
            cfgs = twins([chosen[n][0]])
        found = [(c, chosen[n][1] if c == chosen[n][0] else 1) for c in cfgs]
        if args.split:
            found += [(c, s) for c in cfgs for s in [mc.split_k(c, n, n, n)[0]] if s > 1]
        return list(dict.fromkeys(found))

    per_size = {n: variants(n) for n in sizes}
    check_cfgs = sorted({v for vs in per_size.values() for v in vs},
                        key=lambda v: variant_name(*v))

    correctness = check(r, check_cfgs)
    bad = [c for c in correctness if not c["ok"]]
    worst = max(c["rel_err"] for c in correctness)
    print(
        f"correctness: {len(correctness) - len(bad)}/{len(correctness)} ok, "
        f"max rel err {worst:.2e}",
        flush=True,
    )
    for c in bad:
        print("  FAIL", c)

    torch = None if args.no_torch else cuda_torch()
    peer_info = {}
    if torch is not None:
        peer_info["torch"] = {
            "version": torch.__version__,
            "device": torch.cuda.get_device_name(0),
            "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        }
    use_numpy = (args.numpy or torch is None) and not args.no_numpy
    if use_numpy:
        peer_info["numpy"] = {
            "version": np.__version__,
            "threads_env": os.environ.get("OMP_NUM_THREADS", ""),
        }

    rows = []
    for n in sizes:
        row: dict = {"n": n, "flop": 2 * n**3}
        cfgs = per_size[n]
        if chosen[n] not in cfgs:
            cfgs = [*cfgs, chosen[n]]
        row["webgpu"] = [time_webgpu(r, cfg, n, args, splits) for cfg, splits in cfgs]
        best = max(row["webgpu"], key=lambda x: x["gflops"])
        pick = next(x for x in row["webgpu"] if x["config"] == variant_name(*chosen[n]))
        # "chosen": what choose_split (so pyrite) uses at this size; "best": best timed here
        row["webgpu_chosen"] = {"config": pick["config"], "gflops": pick["gflops"]}
        row["webgpu_best"] = {"config": best["config"], "gflops": best["gflops"]}
        for peer, fn in (("torch_cuda", torch is not None), ("numpy", use_numpy)):
            if not fn:
                continue
            row[peer] = time_torch(torch, n, args) if peer == "torch_cuda" else time_numpy(n, args)
            short = peer.split("_")[0]
            row[f"ratio_vs_{short}"] = pick["gflops"] / row[peer]["gflops"]
            row[f"ratio_best_vs_{short}"] = best["gflops"] / row[peer]["gflops"]
        rows.append(row)
        line = f"n={n:5d}"
        for w in row["webgpu"]:
            line += f"  {w['config']}:{w['gflops']:9.1f}"
        for peer in ("torch_cuda", "numpy"):
            if peer in row:
                line += f"  {peer}:{row[peer]['gflops']:9.1f}"
        print(line + " GFLOP/s", flush=True)

    result = {
        "benchmark": "webgpu_matmul",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": {
            "machine": platform.machine(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "device": info,
        "peers": peer_info,
        "method": {
            "timing": "wall clock around queue submit + 16-byte readback (GPU) or "
            "torch.cuda.synchronize(); median of iters, each of reps ops",
            "warmup": args.warmup,
            "iters": args.iters,
            "min_ms": args.min_ms,
        },
        "kernel": {
            "ladder": list(mc.LADDER),
            "min_workgroups": mc.MIN_WORKGROUPS,
            "configs": {c.name: c.as_dict() for c in fitting},
            "chosen_per_size": {str(n): variant_name(*chosen[n]) for n in sizes},
            "compile_s": r.compile_s,
        },
        "correctness": correctness,
        "sizes": rows,
    }
    print("\nsummary (GFLOP/s):")
    for row in rows:
        ch, be = row["webgpu_chosen"], row["webgpu_best"]
        line = f"  {row['n']:5d}  webgpu {ch['gflops']:9.1f} ({ch['config']})"
        if be["config"] != ch["config"]:
            line += f" best {be['gflops']:9.1f} ({be['config']})"
        if "torch_cuda" in row:
            line += f"  torch {row['torch_cuda']['gflops']:9.1f}  ratio {row['ratio_vs_torch']:.2f}"
        if "numpy" in row:
            line += f"  numpy {row['numpy']['gflops']:9.1f}  ratio {row['ratio_vs_numpy']:.2f}"
        print(line)
    if args.out:
        write_results(Path(args.out), result)
        print(f"wrote {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
