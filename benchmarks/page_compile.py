"""Kernels in the page's WebGPU (SwiftShader in headless Chromium without a GPU): how long each
takes to compile (`createComputePipelineAsync`, awaited alone) against how long it runs.

SwiftShader compiles a pipeline on the CPU (its SPIR-V through LLVM), and a page compiles its
kernels while it loads: a kernel that compiles for a second delays the first prediction by as
much, where one that runs a second costs every prediction. Two parts:

- `pages`: the kernels the demo pages compile on a software adapter (each demo model recorded
  as `pyrite export-web` records it, `wasm/build.py: record_kernels`, adapter type "CPU"),
  each compiled `--reps` times, every time on a fresh adapter and device (a device keeps the
  pipelines it made). Their run times in the pages are `page_predict.py --kernels`'.
- `products`: the products the pages run (MNIST's fc1 and SqueezeNet's conv GEMMs as plain
  matmuls of the same M, N, K, and products of 4 and 16 rows), each on the candidate kernels
  (tiles of `matmul_config`, and the GEMV of `webgpu/gemv.py` up to GEMV_ROWS rows): compile
  ms and run ms side by side, marked where the software adapter picks it (the GEMV up to
  `gemv.MAX_ROWS` rows, else `matmul_config.choose_config(software=True)`).

A static server on 127.0.0.1 gives the page its origin (WebGPU needs a secure context); no
Python runs in the page.

    python benchmarks/page_compile.py [--reps 2] [--only pages|products] [--quick]
        [--out results/page_compile.json]
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import random
import statistics
import struct
import tempfile
from pathlib import Path
from typing import Any

from browser_servers import CHROMIUM, CHROMIUM_ARGS, StaticServer
from common import write_results

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 900.0

# In the page: each kernel compiled REPS times (a fresh adapter and device each time), then,
# where it has a `run` spec, dispatched until a block of runs lasts 50 ms (after one warm-up).
COMPILE_JS = """async ({kernels, reps}) => {
  const fresh = async () => {
    const adapter = await navigator.gpu.requestAdapter();
    const limit = adapter.limits.maxComputeWorkgroupStorageSize;
    return await adapter.requestDevice({requiredLimits: {maxComputeWorkgroupStorageSize: limit}});
  };
  const out = [];
  for (const k of kernels) {
    const row = {label: k.label, compile_ms: [], bytes: k.source.length};
    for (let r = 0; r < reps; r++) {
      const device = await fresh();
      const t0 = performance.now();
      const module = device.createShaderModule({code: k.source});
      const pipeline = await device.createComputePipelineAsync(
        {layout: "auto", compute: {module, entryPoint: k.entry}});
      row.compile_ms.push(performance.now() - t0);
      if (k.run && r === 0) {
        const buffers = k.run.buffers.map((b) => {
          const usage = (b.uniform ? GPUBufferUsage.UNIFORM : GPUBufferUsage.STORAGE)
            | GPUBufferUsage.COPY_DST;
          const buf = device.createBuffer({size: b.size, usage});
          if (b.data) {
            const bytes = Uint8Array.from(atob(b.data), (c) => c.charCodeAt(0));
            device.queue.writeBuffer(buf, 0, bytes);
          }
          return buf;
        });
        const group = device.createBindGroup({layout: pipeline.getBindGroupLayout(0),
          entries: buffers.map((buffer, binding) => ({binding, resource: {buffer}}))});
        const dispatch = async (n) => {
          const enc = device.createCommandEncoder();
          const pass = enc.beginComputePass();
          pass.setPipeline(pipeline);
          pass.setBindGroup(0, group);
          for (let i = 0; i < n; i++) pass.dispatchWorkgroups(...k.run.grid);
          pass.end();
          device.queue.submit([enc.finish()]);
          await device.queue.onSubmittedWorkDone();
        };
        let t = performance.now();
        await dispatch(1);
        row.first_run_ms = performance.now() - t;
        let n = 1;
        for (;;) {
          t = performance.now();
          await dispatch(n);
          const ms = performance.now() - t;
          if (ms >= 50 || n >= 256) { row.run_ms = ms / n; row.runs = n; break; }
          n *= 4;
        }
      }
      device.destroy();
    }
    out.push(row);
  }
  return out;
}"""


def _label(source: str) -> str:
    """A recorded kernel's name: its banner's first line without the comment marks."""
    first = source.lstrip().splitlines()[0]
    if first.startswith("//"):
        return first[2:].split(":")[0].strip()
    return first[:60]


def page_kernels(quick: bool) -> list[dict[str, Any]]:
    """Every kernel the demo pages compile on a software adapter, each under its demo."""
    from pyrite.demos import registry
    from pyrite.wasm.build import record_kernels

    out = []
    for name in ("mnist",) if quick else ("mnist", "squeezenet"):
        if registry.get(name).missing() is not None:
            continue
        for k in record_kernels(name):
            if "CPU" in k["adapters"]:
                out.append({"label": f"{name}: {_label(str(k['source']))}",
                            "entry": k["entry"], "source": k["source"]})
    return out


#: (name, M, N, K): the products the pages run (SqueezeNet's conv GEMMs: M out channels, N
#: output pixels, K in channels x taps)
PRODUCTS = (("mnist fc1", 1, 512, 1024), ("4 rows", 4, 512, 1024), ("16 rows", 16, 512, 1024),
            ("fire2.squeeze", 16, 3136, 64), ("fire2.expand3x3", 64, 3136, 144),
            ("fire4.expand1x1", 128, 784, 32), ("fire4.expand3x3", 128, 784, 288),
            ("fire6.expand3x3", 192, 169, 432), ("fire9.squeeze", 64, 169, 512),
            ("conv10", 1000, 169, 512))
QUICK = (("mnist fc1", 1, 512, 1024), ("fire4.expand1x1", 128, 784, 32))
#: the tiles timed for each product (beside the software ladder's pick)
TILES = ("t128x128x8_8x8_u8_pp", "t64x128x16_4x8", "t32x32x16_4x4_u16", "t64x64x8_8x8_u8",
         "t32x32x16_4x4")
GEMV_ROWS = 16  # products of up to this many rows are timed on the GEMV too


def _floats(count: int, rng: random.Random) -> str:
    return base64.b64encode(struct.pack(f"<{count}f", *(rng.uniform(-1, 1)
                                                          for _ in range(count)))).decode()


def product_kernels(quick: bool) -> list[dict[str, Any]]:
    """Each product on each candidate kernel, with the buffers and grid to run it."""
    from pyrite.webgpu import gemv, matmul_config

    rng = random.Random(0)
    out = []
    for name, m, n, k in QUICK if quick else PRODUCTS:
        a, b = _floats(m * k, rng), _floats(k * n, rng)
        pick = ("" if m <= gemv.MAX_ROWS
                else matmul_config.choose_config(m, n, k, software=True).name)
        aligned = matmul_config.is_aligned(n, k)
        for tile in dict.fromkeys((pick, *TILES) if pick else TILES):
            cfg = matmul_config.CONFIGS[tile]
            params = base64.b64encode(matmul_config.params_bytes(m, n, k)).decode()
            out.append({
                "label": f"{name}: {tile}", "product": name, "kernel": tile,
                "pick": tile == pick, "entry": "main",
                "source": matmul_config.render(cfg, aligned),
                "run": {"buffers": [{"size": m * k * 4, "data": a}, {"size": k * n * 4, "data": b},
                                    {"size": m * n * 4},
                                    {"size": 64, "uniform": True, "data": params}],
                        "grid": list(cfg.dispatch(m, n))}})
        if m <= GEMV_ROWS:
            for layout in ("nn", "nt"):
                params = base64.b64encode(gemv.params_bytes(m, n, k, layout=layout)).decode()
                out.append({
                    "label": f"{name}: gemv {layout}", "product": name, "kernel": f"gemv {layout}",
                    "pick": layout == "nn" and m <= gemv.MAX_ROWS, "entry": "main",
                    "source": gemv.render(),
                    "run": {"buffers": [{"size": m * k * 4, "data": a},
                                        {"size": k * n * 4, "data": b}, {"size": m * n * 4},
                                        {"size": 64, "uniform": True, "data": params}],
                            "grid": list(gemv.dispatch(m, n))}})
    return out


def measure(pw: Any, url: str, kernels: list[dict[str, Any]], reps: int) -> list[dict[str, Any]]:
    """Compile (and run) `kernels` in one fresh headless Chromium."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_S * 1000)
        page.goto(url + "/")
        rows: list[dict[str, Any]] = page.evaluate(COMPILE_JS, {"kernels": kernels, "reps": reps})
    finally:
        browser.close()
    for spec, row in zip(kernels, rows, strict=True):
        row["median_compile_ms"] = statistics.median(row["compile_ms"])
        for key in ("product", "kernel", "pick"):
            if key in spec:
                row[key] = spec[key]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2, help="compiles of each kernel")
    parser.add_argument("--only", choices=("pages", "products"))
    parser.add_argument("--quick", action="store_true",
                        help="MNIST's kernels and two products only (a check of the script)")
    parser.add_argument("--out", default=str(HERE / "results" / "page_compile.json"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {
        "what": "kernels in headless Chromium's WebGPU (SwiftShader): createComputePipelineAsync"
                " ms per kernel (fresh device each), and run ms for the products' candidates",
        "machine": platform.node(), "cpus": os.cpu_count(), "reps": args.reps,
        "load_1min": [os.getloadavg()[0]]}
    with tempfile.TemporaryDirectory() as root, StaticServer(Path(root)) as server, \
            sync_playwright() as pw:
        out["chromium"] = pw.chromium.executable_path
        if args.only in (None, "pages"):
            rows = out["pages"] = measure(pw, server.url, page_kernels(args.quick), args.reps)
            for r in rows:
                print(f"  compile {r['median_compile_ms']:7.0f} ms  {r['bytes']:6d} B  "
                      f"{r['label']}", flush=True)
        if args.only in (None, "products"):
            # a fresh browser per product: one Chromium making a device for each of ~150
            # compiles crashed once (a CHECK in the browser process)
            specs = product_kernels(args.quick)
            rows = out["products"] = []
            for name in dict.fromkeys(k["product"] for k in specs):
                rows += measure(pw, server.url, [k for k in specs if k["product"] == name],
                                args.reps)
            for r in rows:
                print(f"  compile {r['median_compile_ms']:7.0f} ms  run {r['run_ms']:8.2f} ms"
                      f"{'  (pick)' if r['pick'] else ''}  {r['label']}", flush=True)
    out["load_1min"].append(os.getloadavg()[0])
    write_results(Path(args.out), out)
    print(f"wrote {args.out} (load {out['load_1min'][0]:.1f} -> {out['load_1min'][1]:.1f})")


if __name__ == "__main__":
    main()
