"""Predictions in the demo pages, /mnist and /classify (SqueezeNet), on the page's WebGPU
(SwiftShader in headless Chromium without a GPU): the first prediction and the steady state,
each split into pipeline creation, Python (host) time and GPU time.

pyrite's Starlette app (what `pyrite serve` runs) on 127.0.0.1; one fresh headless Chromium
per page. A page's first prediction is its warm-up (`DemoPage` runs it once loaded and hands
back its answer as `ready.firstRun`); then `--runs` predictions through pyrite.js as the page
makes them. The second prediction is the compiled step's second capture (`pyrite.compile`
replays from the third), so the steady state is the median from the third on. After a first
visit a second worker makes the next visit's Python snapshot once the page is idle
(wasm/next_visit.js); `next_visit` says when it started against the predictions
(`besidePredictions`: whether it ran while they did, as until session 7) and how long it took.

Per prediction, from `pyrite.wasm.page.predict` (Python's clock in the worker):
- `ms`: the whole call in Python;
- `readback_ms`: submit to mapped result (the GPU's work and the wait; the floor of an empty
  submit + mapAsync is ~0.3 ms on SwiftShader), which is the GPU time;
- `python_ms` = ms - readback_ms: Python and its calls into WebGPU (pipeline creation
  included, shown apart as `pipeline_ms` with the counts `pipelines` compiled in the page and
  `precompiled` taken from the worker's list);
- `bridge_ms` = roundTripMs - ms: the page <-> worker messages.

With `--kernels`, the steady step's dispatches are also timed one by one in the page (each
replayed alone, repeated until a block lasts 20 ms, then a queue sync): GPU ms per kernel, and
summed by kernel family. The SqueezeNet record must be installed (`$PYRITE_MODELS` or
`pyrite demos fetch squeezenet`).

    python benchmarks/page_predict.py [--runs 6] [--kernels] [--conv-layers 5] [--only mnist]
        [--out results/page_predict.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browser_servers import CHROMIUM, CHROMIUM_ARGS, Server, pyrite_app
from common import write_results

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Demo:
    model: str  # the bundle's name of the model
    path: str  # the page
    handle: str  # the page's window object (its `ready` promise)
    pixels: int  # the input's length
    typed: bool  # the page sends its pixels as a Uint8Array (else a plain array)


DEMOS = (Demo("mnist", "/mnist", "mnistDemo", 28 * 28, False),
         Demo("squeezenet", "/classify", "classifyDemo", 227 * 227 * 3, True))

READY_JS = """async (handle) => {
  while (!window[handle]) await new Promise((r) => setTimeout(r, 20));
  return await window[handle].ready;
}"""
BUNDLE_JS = """const bundle = new URL(document.querySelector('meta[name="pyrite-bundle"]')
    ?.content || "/", location.href);
  const pyrite = await import(new URL("pyrite.js", bundle).href);"""
PREDICT_JS = """async ({model, n, typed, runs}) => {
  """ + BUNDLE_JS + """
  const pixels = Array.from({ length: n }, (_, i) => (i * 7919) % 256); // as PIXELS in Python
  const out = [];
  const began = performance.now();
  for (let i = 0; i < runs; i++) {
    const input = typed ? Uint8Array.from(pixels, (p) => (p + 37 * i) & 255)
                        : pixels.map((p) => (p + 37 * i) % 256);
    const got = await pyrite.predict(model, { pixels: input });
    delete got.top;
    delete got.probabilities;
    out.push(got);
  }
  // the next visit's snapshot (a second worker, after a first visit): when it started and was
  // stored against the predictions (ms on the page's clock; older bundles say less or nothing)
  const ended = performance.now();
  const next = pyrite.nextVisitReady ? await pyrite.nextVisitReady() : null;
  if (next && next.startedAt != null) {
    next.startedAfterPredictionsBeganMs = next.startedAt - began;
    next.startedAfterPredictionsEndedMs = next.startedAt - ended;
    next.besidePredictions = next.startedAt < ended && next.startedAt + (next.ms ?? 0) > began;
  }
  return { calls: out, nextVisit: next };
}"""
# Python run in the page: the steady step's dispatches, each timed alone (see the module doc)
KERNELS_PY = """
import json, time
from pyrite.demos import registry
from pyrite.wasm import page
runtime = page.device().kernels.runtime
runtime = getattr(runtime, "inner", runtime)
names = {id(p): (str(k[0].kernel), str(k[0].op), k[1]) for k, p in runtime._pipelines.items()
         if hasattr(k[0], "kernel")}
seen = []
replay = runtime.replay
def tapped(items, writes=()):
    seen.extend(items)
    replay(items, writes)
runtime.replay = tapped
try:
    registry.get(MODEL).predict(page._models[MODEL], INPUTS)
finally:
    runtime.replay = replay
rows = []
for pipeline, group, grid in seen:
    replay([(pipeline, group, grid)])
    runtime.sync()
    reps = 1
    while True:
        start = time.perf_counter()
        replay([(pipeline, group, grid)] * reps)
        runtime.sync()
        ms = (time.perf_counter() - start) * 1000
        if ms >= 20 or reps >= 64:
            break
        reps *= 4
    kernel, op, entry = names.get(id(pipeline), ("?", "", ""))
    rows.append({"kernel": kernel, "op": op, "entry": entry, "grid": list(grid),
                 "ms": ms / reps, "reps": reps})
json.dumps(rows)
"""

# Python run in the page: SqueezeNet's conv layers (one of each shape family), each kernel
# candidate timed alone, interleaved, REPS times; what the GPU and the software heuristics pick
CONV_LAYERS_PY = """
import json, time
import pyrite
from pyrite.dtype import DType
from pyrite.wasm import page
from pyrite.webgpu import conv, conv_gemm
from pyrite.webgpu import matmul_config
from pyrite.webgpu.matmul_config import CONFIGS
backend = page.device()
raw = getattr(backend, "inner", backend)
k = raw.kernels
limit = k.runtime.limits.max_compute_workgroup_storage_size
LAYERS = [("conv1", 3, 64, 3, 227, 2, 0), ("fire2.squeeze", 64, 16, 1, 56, 1, 0),
          ("fire2.expand1x1", 16, 64, 1, 56, 1, 0), ("fire2.expand3x3", 16, 64, 3, 56, 1, 1),
          ("fire4.squeeze", 128, 32, 1, 28, 1, 0), ("fire4.expand1x1", 32, 128, 1, 28, 1, 0),
          ("fire4.expand3x3", 32, 128, 3, 28, 1, 1), ("fire6.squeeze", 256, 48, 1, 14, 1, 0),
          ("fire6.expand1x1", 48, 192, 1, 14, 1, 0), ("fire6.expand3x3", 48, 192, 3, 14, 1, 1),
          ("fire9.squeeze", 512, 64, 1, 14, 1, 0), ("fire9.expand1x1", 64, 256, 1, 14, 1, 0),
          ("fire9.expand3x3", 64, 256, 3, 14, 1, 1), ("conv10", 512, 1000, 1, 14, 1, 0)]
TILES = ("t128x128x8_8x8_u8_pp", "t64x128x16_4x8", "t32x32x16_4x4_u16", "t64x64x8_8x8_u8",
         "t32x32x16_4x4")
# the software ladder before the compile-time work (session 5), for a side-by-side sum
LADDER_S4 = ("t128x128x8_8x8_u8_pp", "t64x128x16_4x8", "t32x32x16_4x4_u16")
def s4_pick(m, n, kdim, pick):
    if pick == "direct" or kdim < 32:  # session 4 ran the direct kernel below 32 terms
        return "direct"
    now = matmul_config.SOFTWARE_LADDER
    matmul_config.SOFTWARE_LADDER = LADDER_S4
    try:
        return "gemm/" + matmul_config.choose_config(m, n, kdim, 1, limit, software=True).name
    finally:
        matmul_config.SOFTWARE_LADDER = now
rows = []
for name, c_in, c_out, size, side, stride, pad in LAYERS:
    x = pyrite.ones((1, c_in, side, side), device=raw)._prim
    w = pyrite.ones((c_out, c_in, size, size), device=raw)._prim
    b = pyrite.ones((c_out,), device=raw)._prim
    pads = ((pad, pad), (pad, pad))
    oh, ow = conv._out_hw(x.shape, w.shape, (stride, stride), pads, (1, 1))
    out = k.empty((1, c_out, oh, ow), DType.F32, "bench")
    m, n, kdim = conv_gemm.sizes(x.shape, w.shape, (oh, ow), 1, conv_gemm.FORWARD)
    picks = {soft: conv._heuristic("conv2d_kernel", m, n, kdim, 1, size * size, limit, soft)
             for soft in (False, True)}
    old = s4_pick(m, n, kdim, picks[True])
    runs = {"direct": lambda: conv._direct(k, out, x, w, b, (stride, stride), pads, (1, 1), 1)}
    for tile in dict.fromkeys([*TILES, *(p[5:] for p in (*picks.values(), old)
                                         if p != "direct")]):
        runs["gemm/" + tile] = (lambda t=tile: conv_gemm.run(
            k, CONFIGS[t], out, x, w, b, x.shape, (stride, stride), pads, (1, 1), 1,
            conv_gemm.FORWARD, None))
    ms = {}
    for run in runs.values():
        run()
    k.runtime.sync()
    for _ in range(REPS):
        for label, run in runs.items():
            start = time.perf_counter()
            run()
            k.runtime.sync()
            ms.setdefault(label, []).append((time.perf_counter() - start) * 1000)
    rows.append({"layer": name, "gemm_mnk": [m, n, kdim], "gpu_pick": picks[False],
                 "software_pick": picks[True], "software_pick_s4": old, "ms": ms})
json.dumps(rows)
"""


def conv_layers(pw: Any, url: str, reps: int) -> dict[str, Any]:
    """SqueezeNet's conv layers in the /classify page, each candidate kernel timed alone."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_S * 1000)
        load_before = os.getloadavg()[0]
        page.goto(url + "/classify", wait_until="commit")
        page.evaluate(READY_JS, "classifyDemo")
        rows = json.loads(page.evaluate(
            "async (code) => { " + BUNDLE_JS + " return await pyrite.run(code); }",
            f"REPS = {reps}\n" + CONV_LAYERS_PY))
    finally:
        browser.close()
    for r in rows:
        r["median_ms"] = {k: statistics.median(v) for k, v in r["ms"].items()}
    total = {which: sum(r["median_ms"][r[which]] for r in rows)
             for which in ("gpu_pick", "software_pick", "software_pick_s4")}
    return {"layers": rows, "sum_ms": total, "reps": reps,
            "load_1min": [load_before, os.getloadavg()[0]]}


def _split(call: dict[str, Any]) -> dict[str, Any]:
    """One prediction's time, split (see the module doc)."""
    keys = ("ms", "readback_ms", "pipeline_ms", "pipelines", "precompiled", "dispatches",
            "submits", "readbacks")
    out = {k: call.get(k) for k in keys}
    out["python_ms"] = call["ms"] - call.get("readback_ms", 0.0)
    if "roundTripMs" in call:
        out["bridge_ms"] = call["roundTripMs"] - call["ms"]
    return out


def _median(calls: list[dict[str, Any]]) -> dict[str, float]:
    keys = [k for k, v in calls[0].items() if isinstance(v, (int, float))]
    return {k: statistics.median(c[k] for c in calls) for k in keys}


def _by_family(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """GPU ms and dispatches per kernel family (the template, with the tile of a GEMM)."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        name = r["kernel"] + (f"/{r['op']}" if r["kernel"].startswith(("conv2d_gemm",
                                                                         "matmul")) else "")
        slot = out.setdefault(name, {"ms": 0.0, "dispatches": 0})
        slot["ms"] += r["ms"]
        slot["dispatches"] += 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["ms"]))


def run_demo(pw: Any, url: str, demo: Demo, runs: int, kernels: bool) -> dict[str, Any]:
    """Open the demo's page in a new browser, await its first prediction, then predict."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_S * 1000)
        load_before = os.getloadavg()[0]
        page.goto(url + demo.path, wait_until="commit")
        ready = page.evaluate(READY_JS, demo.handle)
        if ready.get("state") != "ready":
            raise RuntimeError(f"{demo.path} did not get ready: {ready}")
        # made in the page (PREDICT_JS): sending 155k pixels from here took long enough for
        # the page to fall idle between its warm-up and these predictions
        pixels = [(i * 7919) % 256 for i in range(demo.pixels)]
        got_js = page.evaluate(PREDICT_JS, {"model": demo.model, "n": demo.pixels,
                                            "typed": demo.typed, "runs": runs})
        calls = got_js["calls"]
        out: dict[str, Any] = {
            "page": demo.path, "backend": ready.get("backend"), "load": ready["timings"],
            "first": {**_split(ready["firstRun"]), "wall_ms": ready["timings"]["warmupMs"]},
            "second": _split(calls[0]), "steady_runs": [_split(c) for c in calls[1:]],
            "next_visit": got_js["nextVisit"]}
        if len(calls) > 2:
            out["steady"] = _median([_split(c) for c in calls[2:]])
        if kernels:
            code = (f"MODEL = {demo.model!r}\nINPUTS = {{'pixels': {pixels!r}}}\n"
                    if not demo.typed else
                    f"MODEL = {demo.model!r}\nINPUTS = {{'pixels': bytes({pixels!r})}}\n")
            rows = json.loads(page.evaluate(
                "async (code) => { " + BUNDLE_JS + " return await pyrite.run(code); }",
                code + KERNELS_PY))
            out["kernels"] = {"sum_ms": sum(r["ms"] for r in rows), "dispatches": len(rows),
                              "by_family": _by_family(rows), "rows": rows}
        out["load_1min"] = [load_before, os.getloadavg()[0]]
        return out
    finally:
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6,
                        help="predictions after the page's first (>= 3: the steady state "
                             "is from the third on)")
    parser.add_argument("--kernels", action="store_true",
                        help="also time the steady step's kernels one by one")
    parser.add_argument("--only", choices=[d.model for d in DEMOS],
                        help="one page only")
    parser.add_argument("--conv-layers", type=int, default=0, metavar="REPS",
                        help="also time SqueezeNet's conv layers' kernels alone in the page "
                             "(REPS interleaved rounds): the GPU and the software heuristic's "
                             "picks (pyrite.webgpu.software) and the other candidates")
    parser.add_argument("--out", default=str(HERE / "results" / "page_predict.json"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from pyrite.demos import registry

    demos = [d for d in DEMOS if args.only in (None, d.model)]
    for d in demos:
        missing = registry.get(d.model).missing()
        if missing is not None:
            raise SystemExit(f"page_predict: {missing}")
    app, why = pyrite_app()
    if app is None:
        raise SystemExit(f"page_predict: pyrite's app cannot start: {why}")
    out: dict[str, Any] = {
        "what": "demo pages' predictions in headless Chromium (WebGPU: SwiftShader without a "
                "GPU): first and steady state, split into pipelines, Python and GPU time",
        "machine": platform.node(), "cpus": os.cpu_count(), "runs": args.runs, "pages": {}}
    with Server(app) as server, sync_playwright() as pw:
        out["chromium"] = pw.chromium.executable_path
        for demo in demos:
            got = run_demo(pw, server.url, demo, args.runs, args.kernels)
            out["pages"][demo.model] = got
            first, steady = got["first"], got.get("steady", {})
            print(f"{demo.model}: first {first['ms']:.0f} ms (GPU {first['readback_ms']:.0f}, "
                  f"Python {first['python_ms']:.0f}, pipelines {first['pipelines']} + "
                  f"{first['precompiled']} precompiled, {first['pipeline_ms']:.0f} ms); "
                  f"steady {steady.get('ms', float('nan')):.1f} ms (GPU "
                  f"{steady.get('readback_ms', float('nan')):.1f}, Python "
                  f"{steady.get('python_ms', float('nan')):.1f}, "
                  f"{steady.get('dispatches', 0):.0f} dispatches); load "
                  f"{got['load_1min'][0]:.1f} -> {got['load_1min'][1]:.1f}", flush=True)
            nv = got["next_visit"]
            if nv and nv.get("startedAt") is not None:
                print(f"    next visit's snapshot: {nv.get('ms', float('nan')):.0f} ms, started "
                      f"{nv['startedAfterPredictionsEndedMs']:.0f} ms after the predictions' "
                      f"end ({'beside' if nv['besidePredictions'] else 'not beside'} them)")
            if "kernels" in got:
                for name, v in list(got["kernels"]["by_family"].items())[:6]:
                    print(f"    {v['ms']:8.1f} ms  {v['dispatches']:3d}x  {name}")
        if args.conv_layers:
            got = out["conv_layers"] = conv_layers(pw, server.url, args.conv_layers)
            for r in got["layers"]:
                print(f"    {r['layer']:16} GPU pick {r['gpu_pick']:28} "
                      f"{r['median_ms'][r['gpu_pick']]:7.1f} ms, software pick "
                      f"{r['software_pick']:28} {r['median_ms'][r['software_pick']]:7.1f} ms")
            print(f"conv layers: GPU picks {got['sum_ms']['gpu_pick']:.0f} ms, software picks "
                  f"{got['sum_ms']['software_pick']:.0f} ms (session 4's software picks "
                  f"{got['sum_ms']['software_pick_s4']:.0f} ms)")
    write_results(Path(args.out), out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
