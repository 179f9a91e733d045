"""Where a first visit's model step goes, in the page: cProfile around `page.load_model`.

The bundle is exported (`a`, this checkout; with `--against REF` also `b`, the export of a git
ref's sources, as embed_ab.py makes it) and served by a static server. Each visit is a fresh
browser profile that loads pyrite without a model (`pyrite.load({models: []})`: Pyodide boots,
the wheels are installed, the device starts), waits `--settle` seconds (the GPU's start-up
work that a model load would otherwise run beside), fetches the MNIST record with `pyfetch`
and times the first `page.load_model` under cProfile. Visits alternate a, b, b, a, ...

    python benchmarks/embed_model_profile.py [--against main] [--visits 2] [--out FILE]

Writes, per visit: the load's ms, the modules the model step imported, the top functions by
cumulative and by own time (cProfile's text), and the machine's 1-minute load.
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
#: run in the page's Python (pyrite.run): URL is the record's address
CODE = r"""
import cProfile, io, json, pstats, sys, time
from pyodide.http import pyfetch
import pyrite.wasm.page as page
data = await (await pyfetch(URL)).bytes()
before = set(sys.modules)
profile = cProfile.Profile()
start = time.perf_counter()
profile.enable()
answer = page.load_model("mnist", data)
profile.disable()
ms = (time.perf_counter() - start) * 1000
texts = []
for key in ("cumulative", "tottime"):
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(key).print_stats(25)
    texts.append(out.getvalue())
json.dumps({"ms": ms, "imported": sorted(set(sys.modules) - before), "answer": answer,
            "by_cumulative": texts[0], "by_own_time": texts[1]})
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REF", help="b: the export of git ref REF")
    parser.add_argument("--visits", type=int, default=2, help="visits per bundle")
    parser.add_argument("--settle", type=float, default=3.0)
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
        with sync_playwright() as pw, StaticServer(site) as server:
            for visit in range(args.visits):
                for kind in kinds if visit % 2 == 0 else kinds[::-1]:
                    runs[kind].append(_visit(pw, server, site, kind, args.settle))
                    print(kind, f"{runs[kind][-1]['ms']:.0f} ms", flush=True)
    write_results(Path(args.out), {"benchmark": "embed_model_profile",
                                   "against": args.against, "settle_s": args.settle,
                                   "visits": runs})


def _visit(pw: Any, server: StaticServer, site: Path, kind: str,
           settle: float) -> dict[str, Any]:
    manifest = json.loads((site / "tools" / kind / "manifest.json").read_text())
    url = f"{server.url}/tools/{kind}/{manifest['models']['mnist']['path']}"
    with tempfile.TemporaryDirectory(prefix="profile-", ignore_cleanup_errors=True) as profile:
        context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM,
                                                        headless=True, args=CHROMIUM_ARGS)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.goto(f"{server.url}/p.html?bundle={kind}")
            page.wait_for_function("window.ready === true", timeout=120_000)
            timings = page.evaluate("async () => (await pyrite.load({device: 'webgpu', "
                                    "models: []})).timings")
            page.wait_for_timeout(settle * 1000)
            got = json.loads(page.evaluate("(code) => pyrite.run(code)",
                                           CODE.replace("URL", repr(url))))
        finally:
            context.close()
            server.take()
    return {**got, "load_1min": os.getloadavg()[0],
            "load_timings": {k: v for k, v in timings.items() if isinstance(v, (int, float))}}


if __name__ == "__main__":
    main()
