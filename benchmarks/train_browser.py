"""Training images/s of Burn's guide MNIST CNN (`pyrite.demos.mnist.Model`, Adam lr 1e-4, batch
64) in a web page, against the same model natively and TensorFlow.js `model.fit`, in one run:

- `native-numpy`, `native-webgpu`: pyrite in this process on `autodiff<numpy>` and
  `autodiff<webgpu>` (wgpu-py; lavapipe where there is no GPU);
- `pyrite-page`: pyrite in headless Chromium (WebGPU; SwiftShader without a GPU), the page
  loading `/pyrite.js` from pyrite's app, `await pyrite.load({device: "webgpu"})`, then Python
  sent with `await pyrite.run(code)` that trains on `autodiff<webgpu>` in pyrite's worker;
- `tfjs-webgpu`, `tfjs-wasm`, `tfjs-cpu`: TensorFlow.js 4.22 `model.fit` (layers API, the same
  layers, softmax + sparse categorical cross-entropy, Adam 1e-4) in the same Chromium
  (`benchmarks/tfjs/fit.html`); `cpu` is TF.js's plain-JS backend (its wasm backend cannot
  compute a conv layer's weight gradient).

A step is what pyrite's Learner does per batch: forward, cross-entropy, backward, the optimizer
step and the loss read back as a number (TF.js: an `onBatchEnd` callback, which resolves the
loss every step). The data are the first `--batches` x 64 MNIST training images, in order
(one "epoch" = `--batches` steps), built on the device before timing: pyrite's `MnistBatcher`
(uint8 pixels uploaded, normalised on the device), TF.js tensors normalised in JS. Each runner
starts and trains `--warmup` epochs (excluded); then `--repeats` rounds in which the runners
take turns, each training `--epochs` epochs timed (a change of load on a shared machine hits
all of them alike): images/s per repeat, the median counts. pyrite's page steps are timed in
Python (`time.perf_counter`, the worker's clock) and, around each `pyrite.run`, in the page;
TF.js's around `model.fit`.

The pages come from one uvicorn server on 127.0.0.1 (a free port): pyrite's Starlette app
(`pyrite.server.app.create_app()`, what `pyrite serve` runs, as benchmarks/browser.py mounts it)
at `/`, `benchmarks/tfjs/` at `/tfjs/`. Each page runner has a browser of its own. A runner
that fails gets its error in the JSON; the others go on.

    python benchmarks/train_browser.py [--batches 4] [--epochs 2] [--warmup 1] [--repeats 3]
        [--runners native-numpy,native-webgpu,pyrite-page,tfjs-webgpu,tfjs-wasm,tfjs-cpu]
        [--out FILE]

Set-up (benchmark-only): TF.js comes from npm (`benchmarks/tfjs/package.json`, locked); this
script runs `npm ci` there when `node_modules` is missing. MNIST is read from
`$PYRITE_DATA/mnist` (random pixels, said in the JSON, when it is not there).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from browser_servers import CHROMIUM, CHROMIUM_ARGS, PAGE_INFO_JS, Server, pyrite_app
from common import cpu_name, npm_versions, write_results

HERE = Path(__file__).resolve().parent
TFJS = HERE / "tfjs"
BATCH = 64
LR = 1e-4
RUNNERS = ["native-numpy", "native-webgpu", "pyrite-page", "tfjs-webgpu", "tfjs-wasm", "tfjs-cpu"]
NPM_PACKAGES = ["@tensorflow/tfjs", "@tensorflow/tfjs-backend-webgpu",
                "@tensorflow/tfjs-backend-wasm"]
MODEL = ("Burn guide MNIST CNN (conv 1->8 3x3, dropout, conv 8->16 3x3, dropout, relu, adaptive "
         "avg pool 8x8, linear 1024->512, dropout, relu, linear 512->10), 531178 params; "
         "cross-entropy, Adam lr 1e-4")

# Python run in the page's worker (and, the same code, natively): the model, the optimizer and
# the batches, then `_tb_steps(count, start)` trains `count` steps and answers JSON.
TRAIN_CODE = '''
import base64 as _tb_b64, json as _tb_json, time as _tb_time
import pyrite
from pyrite.demos.mnist import MnistBatcher, ModelConfig
from pyrite.optim import AdamConfig

_tb_raw = _tb_b64.b64decode(_TB_IMAGES)
_tb_labels = _TB_LABELS
_tb_device = pyrite.device(_TB_DEVICE)
pyrite.seed(0)
_tb_state = {"model": ModelConfig(10, 512).init(_tb_device)}
_tb_optim = AdamConfig().init()
_tb_batcher = MnistBatcher(_tb_device)
_tb_batches = [_tb_batcher([{"image": _tb_raw[i * 784:(i + 1) * 784], "label": _tb_labels[i]}
                            for i in range(s, s + _TB_BATCH)])
               for s in range(0, len(_tb_labels) - _TB_BATCH + 1, _TB_BATCH)]
for _tb_b in _tb_batches:  # the batches are real before timing (a lazy device computes them now)
    _tb_b.images.sum().into_scalar()


def _tb_steps(count, start):
    losses = []
    t0 = _tb_time.perf_counter()
    for i in range(start, start + count):
        model = _tb_state["model"]
        out = model.train_step(_tb_batches[i % len(_tb_batches)])
        losses.append(float(out.item.loss.into_scalar()))  # the Learner reads the loss
        _tb_state["model"] = _tb_optim.step(_TB_LR, model, out.grads)
    return _tb_json.dumps({"ms": (_tb_time.perf_counter() - t0) * 1e3, "losses": losses})


_tb_json.dumps({"device": str(_tb_device), "inner": type(_tb_device.inner).__name__,
                "pyrite": pyrite.__version__, "batches": len(_tb_batches)})
'''

PYRITE_RUN_JS = """async (code) => {
  const t0 = performance.now();
  const value = await window.pyriteModule.run(code);
  return {value, roundTripMs: performance.now() - t0};
}"""
PYRITE_LOAD_JS = """async () => {
  window.pyriteModule = await import('/pyrite.js');
  const t0 = performance.now();
  const loaded = await window.pyriteModule.load({device: 'webgpu'});
  return {loaded, loadMs: performance.now() - t0};
}"""


def train_code(images: bytes, labels: list[int], device: str) -> str:
    return (f"_TB_IMAGES = {base64.b64encode(images).decode()!r}\n_TB_LABELS = {labels!r}\n"
            f"_TB_DEVICE = {device!r}\n_TB_BATCH = {BATCH}\n_TB_LR = {LR!r}\n" + TRAIN_CODE)


def load_data(n: int) -> tuple[bytes, list[int], str]:
    """The first `n` MNIST training images (n * 784 bytes) and labels, or random ones."""
    try:
        from pyrite.dataset import MnistDataset

        ds = MnistDataset("train", download=False)
        items = [ds.get(i) for i in range(n)]
        return b"".join(bytes(it["image"]) for it in items), [int(it["label"]) for it in items], \
            "mnist (first training images, in order)"
    except Exception as e:  # noqa: BLE001 - any failure: random pixels, said in the JSON
        rng = __import__("random").Random(0)
        return (bytes(rng.randrange(256) for _ in range(n * 784)),
                [rng.randrange(10) for _ in range(n)], f"random pixels (MNIST: {e})")


def summary(repeats: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """images/s per repeat (each `steps` steps of BATCH images in `ms`), median."""
    ips = [steps * BATCH / (r["ms"] / 1e3) for r in repeats]
    return {"images_per_s": round(statistics.median(ips), 2),
            "images_per_s_each_repeat": [round(x, 2) for x in ips],
            "ms_per_step": round(statistics.median(r["ms"] for r in repeats) / steps, 2),
            "steps_per_repeat": steps, "repeats": len(repeats),
            "last_losses": [round(x, 4) for x in repeats[-1]["losses"][-4:]]}


# ---- runners ------------------------------------------------------------------------------------
# A runner: `start()` builds everything and answers what it found out (JSON-able), `warm(steps)`
# trains untimed, `timed(steps, start)` trains and answers {"ms", "losses"}, `close()`.
class Native:
    """The page's Python, run in this process."""

    def __init__(self, device: str, code: str) -> None:
        self.device, self.code = device, code
        self.scope: dict[str, Any] = {}

    def start(self) -> dict[str, Any]:
        exec(compile(self.code, "<train_code>", "exec"), self.scope)  # noqa: S102 - our own code
        return {"device": str(self.scope["_tb_device"]),
                "inner": type(self.scope["_tb_device"].inner).__name__}

    def warm(self, steps: int) -> None:
        self.scope["_tb_steps"](steps, 0)

    def timed(self, steps: int, start: int) -> dict[str, Any]:
        return json.loads(self.scope["_tb_steps"](steps, start))

    def close(self) -> None:
        self.scope.clear()


class Page:
    """A new headless Chromium with one page on the benchmark's server; errors the page
    reports are kept for the runner's error message."""

    def __init__(self, pw: Any, url: str) -> None:
        self.pw, self.url = pw, url
        self.browser: Any = None
        self.problems: list[str] = []

    def open(self) -> Any:
        self.browser = self.pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                               args=CHROMIUM_ARGS)
        self.page = self.browser.new_page()
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.on("console", lambda m: self.problems.append(m.text)
                     if m.type == "error" and "favicon" not in m.location.get("url", "")
                     else None)
        self.page.goto(self.url)
        return self.page

    def evaluate(self, script: str, arg: Any = None) -> Any:
        try:
            return self.page.evaluate(script, arg)
        except Exception as e:
            raise RuntimeError(f"{e}; page errors: {self.problems[-3:]}") from e

    def close(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.browser = None


class PyritePage(Page):
    """pyrite in the page: `/pyrite.js` loaded on an empty page of the server's origin,
    `pyrite.load({device: "webgpu"})`, then the training code through `pyrite.run`."""

    def __init__(self, pw: Any, base: str, code: str) -> None:
        super().__init__(pw, f"{base}/tfjs/blank.html")
        self.code = code

    def start(self) -> dict[str, Any]:
        self.open()
        page_info = self.evaluate(PAGE_INFO_JS)
        loaded = self.evaluate(PYRITE_LOAD_JS)
        t0 = time.perf_counter()
        info = json.loads(self.evaluate(PYRITE_RUN_JS, self.code)["value"])
        return {**info, "chromium": self.browser.version, "page": page_info,
                "load_ms": round(loaded["loadMs"]), "setup_s": round(time.perf_counter() - t0, 2),
                "adapter": (loaded["loaded"].get("adapter") or {}).get("in use"),
                "load_timings": loaded["loaded"].get("timings")}

    def warm(self, steps: int) -> None:
        self.evaluate(PYRITE_RUN_JS, f"_tb_steps({steps}, 0)")

    def timed(self, steps: int, start: int) -> dict[str, Any]:
        got = self.evaluate(PYRITE_RUN_JS, f"_tb_steps({steps}, {start})")
        return {**json.loads(got["value"]), "page_ms": got["roundTripMs"]}


class Tfjs(Page):
    """TF.js `model.fit` on `backend` (benchmarks/tfjs/fit.html)."""

    def __init__(self, pw: Any, base: str, backend: str, images: bytes, labels: list[int],
                 batches: int) -> None:
        super().__init__(pw, f"{base}/tfjs/fit.html")
        self.backend, self.images, self.labels, self.batches = backend, images, labels, batches

    def start(self) -> dict[str, Any]:
        page = self.open()
        page.wait_for_function("() => window.fitBench")
        info = self.evaluate("(a) => window.fitBench.setup(a)",
                             {"backend": self.backend, "labels": self.labels, "batch": BATCH,
                              "images": base64.b64encode(self.images).decode()})
        return {**info, "chromium": self.browser.version, "page": self.evaluate(PAGE_INFO_JS)}

    def fit(self, steps: int) -> dict[str, Any]:
        got = self.evaluate("(e) => window.fitBench.fit(e)", steps // self.batches)
        if got["steps"] != steps:
            raise RuntimeError(f"model.fit ran {got['steps']} steps, not {steps}")
        return got

    def warm(self, steps: int) -> None:
        self.fit(steps)

    def timed(self, steps: int, start: int) -> dict[str, Any]:
        return self.fit(steps)


def measure(made: dict[str, Any], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Start and warm up every runner, then `args.repeats` rounds in which each runner trains
    one timed repeat; a runner that fails gets its error and leaves the rounds."""
    out: dict[str, dict[str, Any]] = {}
    steps = args.epochs * args.batches
    live: dict[str, Any] = {}
    for name, runner in made.items():
        print(f"{name}: start, {args.warmup * args.batches} warm-up steps ...", flush=True)
        t0 = time.perf_counter()
        try:
            out[name] = runner.start()
            out[name]["start_s"] = round(time.perf_counter() - t0, 2)
            t0 = time.perf_counter()
            runner.warm(args.warmup * args.batches)
            out[name]["warmup_ms_per_step"] = round(
                (time.perf_counter() - t0) * 1e3 / (args.warmup * args.batches), 1)
            live[name] = runner
        except Exception as e:  # noqa: BLE001 - record it, go on with the others
            out[name] = {**out.get(name, {}), "error": f"{type(e).__name__}: {e}"}
            runner.close()
            print(f"  {name}: {out[name]['error'][:200]}", flush=True)
    timings: dict[str, list[dict[str, Any]]] = {name: [] for name in live}
    for k in range(args.repeats):
        for name, runner in list(live.items()):
            try:
                timings[name].append(runner.timed(steps, (1 + k) * steps))
            except Exception as e:  # noqa: BLE001 - record it, go on with the others
                out[name]["error"] = f"{type(e).__name__}: {e}"
                runner.close()
                del live[name]
                continue
            got = timings[name][-1]
            print(f"round {k + 1}: {name:14s} {steps * BATCH / (got['ms'] / 1e3):9.2f} images/s",
                  flush=True)
    for name, done in timings.items():
        if done:
            out[name].update(summary(done, steps))
            if "page_ms" in done[0]:  # pyrite's page: also timed around pyrite.run in the page
                out[name]["images_per_s_page_clock"] = round(statistics.median(
                    steps * BATCH / (d["page_ms"] / 1e3) for d in done), 2)
    return out


# ---- set-up, report -----------------------------------------------------------------------------
def prepare() -> None:
    if not (TFJS / "node_modules").is_dir():
        print("installing TF.js (npm ci in benchmarks/tfjs) ...", flush=True)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=TFJS, check=True)


def combined_app(main: Any) -> Any:
    """`/tfjs/...` from benchmarks/tfjs, everything else (lifespan included) to pyrite's app."""
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    tfjs = Starlette(routes=[Mount("/tfjs", StaticFiles(directory=TFJS, html=True))])
    main = main or tfjs

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        await (tfjs if path.startswith("/tfjs/") else main)(scope, receive, send)

    return app




def native_adapter() -> str | None:
    try:
        from fusion import webgpu_devices

        return str(webgpu_devices()[1].adapter)
    except Exception as e:  # noqa: BLE001 - informative only
        return f"unknown ({type(e).__name__}: {e})"


def table(runners: dict[str, dict[str, Any]]) -> str:
    rows = [("runner", "images/s (median)", "ms/step", "each repeat", "device")]
    notes = []
    for name, r in runners.items():
        if "error" in r or "skipped" in r:
            notes.append(f"{name}: " + (f"error: {r['error'][:300]}" if "error" in r
                                        else f"skipped: {r['skipped']}"))
            continue
        device = r.get("device") or f"tfjs {r.get('backend')}"
        rows.append((name, f"{r['images_per_s']:.1f}", f"{r['ms_per_step']:.1f}",
                     ", ".join(f"{x:.1f}" for x in r["images_per_s_each_repeat"]),
                     f"{device} ({r['inner']})" if "inner" in r else device))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    return "\n".join(lines + notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=4,
                        help="distinct batches of 64 MNIST images (one epoch)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per timed repeat")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up epochs (not timed)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runners", default=",".join(RUNNERS),
                        help=f"comma-separated, of {', '.join(RUNNERS)}")
    parser.add_argument("--out", type=Path,
                        default=HERE / "results" / "train_browser_lavapipe.json")
    args = parser.parse_args()
    wanted = [r for r in args.runners.split(",") if r]
    if set(wanted) - set(RUNNERS):
        parser.error(f"unknown runners {sorted(set(wanted) - set(RUNNERS))}")
    if min(args.batches, args.epochs, args.warmup, args.repeats) < 1:
        parser.error("--batches, --epochs, --warmup and --repeats must be at least 1")
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    started = time.perf_counter()
    load_before = os.getloadavg()

    images, labels, source = load_data(args.batches * BATCH)
    runners: dict[str, dict[str, Any]] = {}
    page_runners = [r for r in wanted if not r.startswith("native-")]
    with contextlib.ExitStack() as stack:
        made: dict[str, Any] = {}
        for name in wanted:
            if name.startswith("native-"):
                device = f"autodiff<{name.split('-', 1)[1]}>"
                made[name] = Native(device, train_code(images, labels, device))
        if page_runners:
            prepare()
            main_app, why = pyrite_app()
            from playwright.sync_api import sync_playwright

            pw = stack.enter_context(sync_playwright())
            server = stack.enter_context(Server(combined_app(main_app)))
            for name in page_runners:
                if name == "pyrite-page" and main_app is None:
                    runners[name] = {"skipped": f"pyrite's app did not import: {why}"}
                elif name == "pyrite-page":
                    made[name] = PyritePage(pw, server.url,
                                            train_code(images, labels, "autodiff<webgpu>"))
                else:
                    made[name] = Tfjs(pw, server.url, name.split("-", 1)[1], images, labels,
                                      args.batches)
        for runner in made.values():
            stack.callback(runner.close)
        runners.update(measure(made, args))

    notes = []
    if "Conv2DBackpropFilter" in runners.get("tfjs-wasm", {}).get("error", ""):
        notes.append("TF.js's wasm backend has no Conv2DBackpropFilter kernel, so model.fit "
                     "cannot train a conv layer on it (tensorflow/tfjs#8474, open); tfjs-cpu "
                     "(TF.js's plain-JS backend) is the CPU peer that trains")
    ips = {k: r["images_per_s"] for k, r in runners.items() if "images_per_s" in r}
    ratios: dict[str, float] = {}
    ratios_each_round: dict[str, list[float]] = {}
    for a, b in (("pyrite-page", "tfjs-webgpu"), ("pyrite-page", "tfjs-wasm"),
                 ("pyrite-page", "tfjs-cpu"),
                 ("pyrite-page", "native-webgpu"), ("pyrite-page", "native-numpy"),
                 ("native-webgpu", "native-numpy")):
        if a in ips and b in ips:
            ratios[f"{a}_over_{b}"] = round(ips[a] / ips[b], 4)
            each = zip(runners[a]["images_per_s_each_repeat"],
                       runners[b]["images_per_s_each_repeat"], strict=False)
            ratios_each_round[f"{a}_over_{b}"] = [round(x / y, 4) for x, y in each]
    import numpy as np
    import wgpu

    import pyrite

    first = next((r for r in runners.values() if "page" in r), {})
    page_info = first.get("page") or {}
    result = {
        "benchmark": "train_browser", "model": MODEL, "batch_size": BATCH, "data": source,
        "batches_per_epoch": args.batches, "epochs_per_repeat": args.epochs,
        "steps_per_repeat": args.epochs * args.batches, "warmup_epochs": args.warmup,
        "repeats": args.repeats,
        "statistic": "median images/s over the repeats; the runners take turns, one repeat "
                     "each per round (a change of load hits all of them alike)",
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "pyrite": pyrite.__version__, "wgpu": wgpu.__version__,
                    "native_webgpu_adapter": native_adapter() if "native-webgpu" in wanted
                    else None,
                    "load_average_1min": {"start": load_before[0], "end": os.getloadavg()[0]}},
        "chromium": first.get("chromium"), "chromium_args": CHROMIUM_ARGS,
        "page_adapter": page_info.get("adapter"),
        "page_cross_origin_isolated": page_info.get("crossOriginIsolated"),
        "page_user_agent": page_info.get("userAgent"),
        "npm": npm_versions(TFJS / "node_modules", NPM_PACKAGES), "runners": runners,
        "ratios": ratios,
        "ratios_each_round": ratios_each_round, "notes": notes,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print(table(runners))
    print("ratios:", ratios)
    for note in notes:
        print("note:", note)
    write_results(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
