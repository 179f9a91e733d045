"""Host time per step in a page, eager against compiled (`pyrite.compile`), in headless Chromium.

A page on a real GPU would be bound by Pyodide's interpreter, not by the GPU; this machine has
no GPU, so this measures the proxy: the same steps on a device whose runtime runs nothing
(`RecordingRuntime`: buffers are placeholders, dispatches are dropped, readbacks are zeros), so
all that is timed is Python and the bridge. In the page's worker (pyrite loaded from
`/pyrite.js` of pyrite's app on 127.0.0.1):

- the MNIST guide CNN's training step (batch 64, Adam; forward, backward, optimizer step), and
- one charlm token (the demo transformer's next-character logits over its window),

each `--steps` times after `--warmup` (captures happen there), eager and compiled, timed in
Python (`time.perf_counter`, the worker's clock), best of `--repeats`. The same code also runs
natively on the recorder for reference.

    python benchmarks/compile_browser.py --out benchmarks/results/compile_browser.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

from browser_servers import Server, pyrite_app
from common import cpu_name, write_results
from train_browser import PYRITE_LOAD_JS, PYRITE_RUN_JS, PyritePage, combined_app

CODE = '''
import json as _cb_json, time as _cb_time
import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.webgpu import WebGpu
from pyrite.webgpu.fusion import Fusion
from pyrite.webgpu.recorder import RecordingRuntime
from pyrite.demos.mnist import MnistBatch, ModelConfig
from pyrite.demos.charlm.generate import model_config, _next_logits
from pyrite.optim import AdamConfig

def _cb_mnist(compiled, warmup, steps, repeats):
    dev = Autodiff(Fusion(WebGpu(runtime=RecordingRuntime())))
    model = ModelConfig(10, 512).init(dev)
    optim = AdamConfig().init()
    batch = MnistBatch(pyrite.zeros((64, 28, 28), device=dev),
                       pyrite.zeros((64,), device=dev, dtype="i32"))
    def step(model, batch, lr):
        out = model.train_step(batch)
        return optim.step(lr, model, out.grads), out.item.loss
    run = pyrite.compile(step, enabled=compiled)
    for _ in range(warmup):
        model, loss = run(model, batch, 1e-4)
    best = None
    for _ in range(repeats):
        t0 = _cb_time.perf_counter()
        for _ in range(steps):
            model, loss = run(model, batch, 1e-4)
        t = (_cb_time.perf_counter() - t0) / steps
        best = t if best is None else min(best, t)
    return {"ms_per_step": round(best * 1e3, 3), "replays": run.replays,
            "fallbacks": run.fallbacks}

def _cb_token(compiled, warmup, steps, repeats):
    dev = Fusion(WebGpu(runtime=RecordingRuntime()))
    model = model_config().init(dev)
    window = model.tokens([[1] * model.context])
    position = pyrite.tensor([model.context // 2], device=dev, dtype="i32")
    run = _next_logits if compiled else _next_logits.fn
    for _ in range(warmup):
        run(model, window, position).to_data()
    best = None
    for _ in range(repeats):
        t0 = _cb_time.perf_counter()
        for _ in range(steps):
            run(model, window, position).to_data()
        t = (_cb_time.perf_counter() - t0) / steps
        best = t if best is None else min(best, t)
    return {"ms_per_token": round(best * 1e3, 3)}

def _cb_all(warmup, steps, repeats):
    out = {}
    for name, fn in (("mnist_train_step", _cb_mnist), ("charlm_token", _cb_token)):
        out[name] = {"eager": fn(False, warmup, steps, repeats),
                     "compiled": fn(True, warmup, steps, repeats)}
    return _cb_json.dumps(out)
'''


def ratios(found: dict[str, Any]) -> dict[str, Any]:
    for key, unit in (("mnist_train_step", "ms_per_step"), ("charlm_token", "ms_per_token")):
        row = found[key]
        row["host_time_ratio_eager_over_compiled"] = round(
            row["eager"][unit] / row["compiled"][unit], 2)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    call = f"_cb_all({args.warmup}, {args.steps}, {args.repeats})"
    result: dict[str, Any] = {"cpu": cpu_name(), "python": platform.python_version(),
                              "runtime": "RecordingRuntime (runs nothing: host time only)"}
    scope: dict[str, Any] = {}
    exec(compile(CODE, "<compile_browser>", "exec"), scope)  # noqa: S102 - our own code
    result["native"] = ratios(json.loads(eval(call, scope)))  # noqa: S307 - our own code
    print("native:", json.dumps(result["native"]), flush=True)

    from playwright.sync_api import sync_playwright

    main_app, why = pyrite_app()
    if main_app is None:
        raise SystemExit(f"pyrite's app is unavailable: {why}")
    with Server(combined_app(main_app)) as server, sync_playwright() as pw:
        page = PyritePage(pw, server.url, CODE)
        try:
            page.open()
            page.evaluate(PYRITE_LOAD_JS)
            page.evaluate(PYRITE_RUN_JS, CODE)
            t0 = time.perf_counter()
            got = page.evaluate(PYRITE_RUN_JS, call)
            result["page"] = ratios(json.loads(got["value"]))
            result["page"]["wall_s"] = round(time.perf_counter() - t0, 1)
            result["chromium"] = page.browser.version
        finally:
            page.close()
    print("page:", json.dumps(result["page"]), flush=True)
    if args.out:
        write_results(args.out, result)


if __name__ == "__main__":
    main()
