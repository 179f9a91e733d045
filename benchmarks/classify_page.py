"""The SqueezeNet page (`/classify`): load to first prediction, first and repeat visits.

pyrite's Starlette app (what `pyrite serve` runs; `pyrite.server.app.create_app()`) on
127.0.0.1, headless Chromium with WebGPU (SwiftShader without a GPU). Each pair of visits uses
a fresh browser profile: a first visit (nothing cached), then a repeat visit with the same
profile (the worker's cache and its Python snapshot from the first). A visit's time is from
navigation to the page's `classifyDemo.ready` (pyrite loaded, the model loaded and its first
prediction, the warm-up, done), on the page's clock (`performance.now()`, which starts at
navigation); the page's own phases (`timings`: Python, pyrite, model, first run) are kept
beside it. The SqueezeNet record must be installed (`pyrite demos fetch squeezenet`, or
`$PYRITE_MODELS`).

    python benchmarks/classify_page.py [--pairs 3] [--out results/classify_page.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
from pathlib import Path
from typing import Any

from browser_servers import CHROMIUM, CHROMIUM_ARGS, Server, pyrite_app
from common import write_results

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 300.0
READY_JS = """async () => {
  while (!window.classifyDemo) await new Promise((r) => setTimeout(r, 20));
  const ready = await window.classifyDemo.ready;
  return {ms: performance.now(), ...ready};
}"""


def visit(pw: Any, profile: str, url: str) -> dict[str, Any]:
    """One visit with the browser profile `profile` (a new browser process)."""
    context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM,
                                                    headless=True, args=CHROMIUM_ARGS)
    try:
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(TIMEOUT_S * 1000)
        page.goto(url + "/classify", wait_until="commit")
        got: dict[str, Any] = page.evaluate(READY_JS)
    finally:
        context.close()
    if got.get("state") != "ready":
        raise RuntimeError(f"the page did not get ready: {got}")
    return {"ms": got["ms"], "device": got.get("device"), "timings": got.get("timings")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3, help="first + repeat visit pairs")
    parser.add_argument("--out", default=str(HERE / "results" / "classify_page.json"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from pyrite.demos import registry

    missing = registry.get("squeezenet").missing()
    if missing is not None:
        raise SystemExit(f"classify_page: {missing}")
    app, why = pyrite_app()
    if app is None:
        raise SystemExit(f"classify_page: pyrite's app cannot start: {why}")
    load_before = os.getloadavg()
    visits: dict[str, list[dict[str, Any]]] = {"first": [], "repeat": []}
    with Server(app) as server, sync_playwright() as pw:
        for _ in range(args.pairs):
            with tempfile.TemporaryDirectory(prefix="profile-",
                                             ignore_cleanup_errors=True) as profile:
                for kind in ("first", "repeat"):
                    visits[kind].append(visit(pw, profile, server.url))
                    print(f"{kind} visit: {visits[kind][-1]['ms']:.0f} ms", flush=True)
    out: dict[str, Any] = {
        "what": "SqueezeNet page (/classify): navigation to the first prediction",
        "machine": platform.node(), "cpus": os.cpu_count(),
        "load_before": load_before, "load_after": os.getloadavg(), "pairs": args.pairs}
    for kind, runs in visits.items():
        out[f"{kind}_ms"] = [v["ms"] for v in runs]
        out[f"{kind}_median_ms"] = statistics.median(out[f"{kind}_ms"])
        out[f"{kind}_timings"] = [v["timings"] for v in runs]
        out["device"] = runs[-1]["device"]
    write_results(Path(args.out), out)
    print(f"first visit median {out['first_median_ms']:.0f} ms, repeat visit median "
          f"{out['repeat_median_ms']:.0f} ms (load {load_before[0]:.1f} -> "
          f"{out['load_after'][0]:.1f}); wrote {args.out}")


if __name__ == "__main__":
    main()
