"""What one change to the first visit is worth, measured side by side: pyrite's bundle
exported once and served twice from one static server, as exported (`a`) and with one line of
its JavaScript changed back to how it was (`b`, `--undo NAME`, below). First visits alternate
a, b (a fresh browser profile each, the embed page of browser.py; with `--throttle` on
browser.py's 20 Mbit/s network), so both see the same machine load.

    python benchmarks/embed_ab.py --undo preload|put [--pairs 4] [--throttle] [--out FILE]

- `preload`: the first visit imports `pyrite.wasm.preload` right after the wheels, as it did
  until session 6 for the next visit's snapshot (without making the snapshot).
- `put`: the worker's cached fetch hands a downloaded file over only once its copy is in Cache
  Storage (Pyodide then compiles its WebAssembly after the whole file is cached), as until
  session 6.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from browser_embed import EMBED_PEERS, visit
from browser_servers import HERE, WEB, StaticServer
from common import write_results

WHEELS_DONE = "  timings.wheelsMs = performance.now() - t1;\n"
#: name -> (the bundle's file, a line of it, what `b` has instead)
UNDO = {
    "preload": ("worker.js", WHEELS_DONE,
                WHEELS_DONE + "  { const tp = performance.now(); pyodide.runPython("
                "'import pyrite.wasm.preload'); timings.preloadMs = performance.now() - tp; }\n"),
    "put": ("cache.js",
            "    cache.put(key, response.clone()).catch(() => { /* quota exceeded: the network"
            " copy */ });\n",
            "    await cache.put(key, response.clone()).catch(() => {});\n"),
}
PHASES = ("pyodideMs", "bootModuleMs", "wheelsMs", "preloadMs", "importMs", "deviceMs",
          "modelsMs", "workerLoadStartMs", "firstPredictMs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--undo", choices=sorted(UNDO), required=True)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--throttle", action="store_true")
    parser.add_argument("--out", default=None,
                        help="default: results/embed_ab_NAME.json")
    args = parser.parse_args()
    out = Path(args.out or HERE / "results" / f"embed_ab_{args.undo}.json")
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="xdg-")
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site = Path(tmp)
        (site / "bench").symlink_to(WEB, target_is_directory=True)
        subprocess.run([sys.executable, "-m", "pyrite.wasm", "export-web", "--out",
                        str(site / "tools/a"), "--model", "mnist"], check=True,
                       capture_output=True)
        shutil.copytree(site / "tools/a", site / "tools/b")
        name, line, instead = UNDO[args.undo]
        changed = site / "tools/b" / name
        if changed.read_text().count(line) != 1:
            raise SystemExit(f"{name} has changed: the line --undo {args.undo} replaces is "
                             "gone; update UNDO")
        changed.write_text(changed.read_text().replace(line, instead))
        with sync_playwright() as pw, StaticServer(site) as server:
            for _ in range(args.pairs):
                for kind in runs:
                    # the page closes once the next visit's snapshot is stored (settle_js), not
                    # while the second worker still fetches; the time is to the first prediction
                    peer = replace(EMBED_PEERS[0], url=f"/bench/embed.html?bundle=/tools/{kind}/")
                    with tempfile.TemporaryDirectory(prefix="profile-",
                                                     ignore_cleanup_errors=True) as profile:
                        got = visit(pw, profile, server, peer, throttle=args.throttle)
                    load = got["load"] or {}
                    runs[kind].append({"ms": got["ms"], "load_1min": os.getloadavg()[0],
                                       **{k: load[k] for k in PHASES if k in load}})
                    print(kind, f"{got['ms']:.0f} ms", flush=True)
    result = {"benchmark": "embed_ab", "undo": args.undo, "doc": UNDO[args.undo][2].strip(),
              "pairs": args.pairs, "throttled": args.throttle,
              "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
              "median_ms": {k: statistics.median(r["ms"] for r in v) for k, v in runs.items()},
              "visits": runs}
    print(result["median_ms"])
    write_results(out, result)


if __name__ == "__main__":
    main()
