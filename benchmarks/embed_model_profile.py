"""Where a visit's model step and first prediction go, in the page: cProfile around
`page.load_model` and the first `page.predict`.

The bundle is exported (`a`, this checkout; with `--against REF` also `b`, the export of a git
ref's sources, as embed_ab.py makes it) and served by a static server; each visit is a fresh
browser profile. Visits alternate a, b, b, a, ...

- By default (`--settled`, session 7's mode) a first visit loads pyrite without a model
  (`pyrite.load({models: []})`: Pyodide boots, the wheels are installed, the device starts),
  waits `--settle` seconds (the GPU's start-up work that a model load would otherwise run
  beside), fetches the MNIST record with `pyfetch` and times `page.load_model`, then
  `page.predict` (the demo's example input), each under cProfile.
- `--in-load`: the steps where the page's load runs them, as a visit does: the served copy of
  the bundle's worker.js wraps `page.load_model` and `page.predict` in cProfile right after it
  imports the page module (the only change to the bundle), the page loads with
  `models: ["mnist"]` (its kernels precompiled while Python starts) and predicts at once
  (or `--pause MS` after its answer).
- `--repeat` (with either): the profiled visit is a repeat visit. A first visit with the
  same browser profile loads pyrite and waits until the next visit's Python snapshot is
  stored (`pyrite.nextVisitReady()`); the profiled visit restores Python from it.

    python benchmarks/embed_model_profile.py [--against main] [--in-load] [--repeat]
        [--visits 2] [--out FILE]

Writes, per visit and per step (`load`, `predict`): its ms, the modules it imported, the top
functions by cumulative and by own time (cProfile's text), the worker's load timings and the
machine's 1-minute load.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from browser_servers import CHROMIUM, CHROMIUM_ARGS, HERE, StaticServer
from common import write_results
from embed_ab import export

PAGE = """<!doctype html><script type="module">
const bundle = new URLSearchParams(location.search).get("bundle");
window.pyrite = await import(`/tools/${bundle}/pyrite.js`);
window.ready = true;
</script>
"""
#: Python: `profiled(step, call)` runs call() under cProfile, keeping what it saw in PROFILES
PROFILER = r"""
import cProfile, io, pstats, sys, time

PROFILES = {}

def profiled(step, call):
    before = set(sys.modules)
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    answer = call()
    profile.disable()
    ms = (time.perf_counter() - start) * 1000
    texts = []
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(key).print_stats(40)
        texts.append(out.getvalue())
    PROFILES[step] = {"ms": ms, "imported": sorted(set(sys.modules) - before),
                      "answer": {k: v for k, v in answer.items() if k != "probabilities"},
                      "by_cumulative": texts[0], "by_own_time": texts[1]}
    return answer
"""
#: --settled: run in the page's Python (pyrite.run) after the load; URL is the record's address
CODE = PROFILER + r"""
import json
from pyodide.http import pyfetch
import pyrite.wasm.page as page
from pyrite.demos import registry
data = await (await pyfetch(URL)).bytes()
profiled("load", lambda: page.load_model("mnist", data))
profiled("predict", lambda: page.predict("mnist", registry.get("mnist").example))
json.dumps(PROFILES)
"""
#: --in-load: what the worker runs right after importing the page module (its first
#: load_model and predict go through `profiled`; the results stay in page._profiles)
WRAP = PROFILER + r"""
import pyrite.wasm.page as page

def _wrapped(step, inner):
    def call(*args):
        if step in PROFILES:
            return inner(*args)
        return profiled(step, lambda: inner(*args))
    return call

page.load_model = _wrapped("load", page.load_model)
page.predict = _wrapped("predict", page.predict)
page._profiles = PROFILES
"""
IMPORTED = 'page = pyodide.pyimport("pyrite.wasm.page");\n'
IN_LOAD = """async ([pixels, pauseMs]) => {
  window.timings = (await pyrite.load({device: 'webgpu', models: ['mnist']})).timings;
  await new Promise((r) => setTimeout(r, pauseMs));
  await pyrite.predict('mnist', {pixels});
  return await pyrite.run('import json, pyrite.wasm.page as p; json.dumps(p._profiles)');
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REF", help="b: the export of git ref REF")
    parser.add_argument("--visits", type=int, default=2, help="visits per bundle")
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--in-load", action="store_true",
                        help="profile the steps inside the page's load (see above)")
    parser.add_argument("--repeat", action="store_true",
                        help="profile a repeat visit (Python restored from the snapshot)")
    parser.add_argument("--pause", type=float, default=0.0,
                        help="--in-load: ms between the load's answer and the prediction")
    parser.add_argument("--out", default=str(HERE / "results" / "embed_model_profile.json"))
    args = parser.parse_args()
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="xdg-")
    from playwright.sync_api import sync_playwright

    kinds = ["a", "b"] if args.against else ["a"]
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site = Path(tmp)
        (site / "tools").mkdir()
        (site / "p.html").write_text(PAGE)
        export(site / "tools/a", None)
        if args.against:
            export(site / "tools/b", args.against)
        if args.in_load:
            for kind in kinds:
                _wrap_steps(site / "tools" / kind / "worker.js")
        with sync_playwright() as pw, StaticServer(site) as server:
            for visit in range(args.visits):
                for kind in kinds if visit % 2 == 0 else kinds[::-1]:
                    runs[kind].append(_visit(pw, server, site, kind, args))
                    got = runs[kind][-1]
                    print(kind, f"load {got['load']['ms']:.0f} ms, predict "
                          f"{got['predict']['ms']:.0f} ms (1-min load {got['load_1min']:.1f})",
                          flush=True)
    write_results(Path(args.out), {"benchmark": "embed_model_profile",
                                   "against": args.against, "settle_s": args.settle,
                                   "in_load": args.in_load, "repeat": args.repeat,
                                   "pause_ms": args.pause,
                                   "visits": runs})


def _wrap_steps(worker: Path) -> None:
    """The bundle's worker.js, profiling the steps right after it imports the page module."""
    text = worker.read_text()
    if text.count(IMPORTED) != 1:
        raise SystemExit(f"{worker}: the line that imports the page module has changed; "
                         "update IMPORTED")
    wrap = f"pyodide.runPython({json.dumps(WRAP)});\n"
    worker.write_text(text.replace(IMPORTED, IMPORTED + wrap))


def _visit(pw: Any, server: StaticServer, site: Path, kind: str,
           args: argparse.Namespace) -> dict[str, Any]:
    manifest = json.loads((site / "tools" / kind / "manifest.json").read_text())
    url = f"{server.url}/tools/{kind}/{manifest['models']['mnist']['path']}"
    with tempfile.TemporaryDirectory(prefix="profile-", ignore_cleanup_errors=True) as profile:
        if args.repeat:  # the first visit: it leaves the next visit's snapshot
            _open(pw, server, profile, kind, "async () => { await pyrite.load({device: "
                  "'webgpu', models: []}); return await pyrite.nextVisitReady(); }")
        timings: dict[str, Any] = {}
        if args.in_load:
            pixels = [0.0] * 784
            got = _open(pw, server, profile, kind, IN_LOAD, [pixels, args.pause], timings)
        else:
            got = _open(pw, server, profile, kind, "async (code) => { window.timings = "
                        "(await pyrite.load({device: 'webgpu', models: []})).timings; "
                        f"await new Promise((r) => setTimeout(r, {args.settle * 1000})); "
                        "return await pyrite.run(code); }", CODE.replace("URL", repr(url)),
                        timings)
    if args.repeat and not timings.get("snapshot"):
        raise SystemExit(f"{kind}: the repeat visit did not restore Python from a snapshot")
    return {**json.loads(got), "load_1min": os.getloadavg()[0],
            "load_timings": {k: v for k, v in timings.items() if isinstance(v, (int, float))}}


def _open(pw: Any, server: StaticServer, profile: str, kind: str, script: str,
          arg: Any = None, timings: dict[str, Any] | None = None) -> Any:
    """A visit to the bundle `kind` with the browser profile `profile`: `script(arg)`'s answer
    (and the worker's load timings, window.timings, into `timings`)."""
    context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM,
                                                    headless=True, args=CHROMIUM_ARGS)
    try:
        page = context.pages[0] if context.pages else context.new_page()
        page.goto(f"{server.url}/p.html?bundle={kind}")
        page.wait_for_function("window.ready === true", timeout=120_000)
        got = page.evaluate(script, arg)
        if timings is not None:
            timings.update(page.evaluate("() => window.timings"))
        return got
    finally:
        context.close()
        server.take()


if __name__ == "__main__":
    main()
