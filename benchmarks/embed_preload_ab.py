"""What moving the preload import off the first visit's path is worth, measured side by side:
pyrite's bundle exported once, served twice from one static server: as exported (`a`), and
with its worker patched to import `pyrite.wasm.preload` right after the wheels (`b`, the first
visit as it was until session 6, without the snapshot's making). First visits alternate a, b
(a fresh browser profile each, the embed page of browser.py), so both see the same load.

    python benchmarks/embed_preload_ab.py [--pairs 4] [--out results/embed_preload_ab.json]
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

#: the line of worker.js after which `b` imports the preload (the wheels are installed)
ANCHOR = "  timings.wheelsMs = performance.now() - t1;\n"
PATCH = ("  { const tp = performance.now(); pyodide.runPython('import pyrite.wasm.preload');"
         " timings.preloadMs = performance.now() - tp; }\n")
PHASES = ("pyodideMs", "wheelsMs", "preloadMs", "importMs", "deviceMs", "modelsMs",
          "workerLoadStartMs", "firstPredictMs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--out", default=str(HERE / "results" / "embed_preload_ab.json"))
    args = parser.parse_args()
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
        worker = site / "tools/b/worker.js"
        text = worker.read_text()
        if ANCHOR not in text:
            raise SystemExit("worker.js has changed: the line this script patches after is gone")
        worker.write_text(text.replace(ANCHOR, ANCHOR + PATCH))
        with sync_playwright() as pw, StaticServer(site) as server:
            for _ in range(args.pairs):
                for kind in runs:
                    peer = replace(EMBED_PEERS[0], url=f"/bench/embed.html?bundle=/tools/{kind}/",
                                   settle_js="")  # the next visit's snapshot is not waited for
                    with tempfile.TemporaryDirectory(prefix="profile-",
                                                     ignore_cleanup_errors=True) as profile:
                        got = visit(pw, profile, server, peer)
                    load = got["load"] or {}
                    runs[kind].append({"ms": got["ms"], "load_1min": os.getloadavg()[0],
                                       **{k: load[k] for k in PHASES if k in load}})
                    print(kind, f"{got['ms']:.0f} ms", flush=True)
    result = {"benchmark": "embed_preload_ab", "pairs": args.pairs,
              "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
              "a": "as exported", "b": "worker patched: preload imported after the wheels",
              "median_ms": {k: statistics.median(r["ms"] for r in v) for k, v in runs.items()},
              "visits": runs}
    print(result["median_ms"])
    write_results(Path(args.out), result)


if __name__ == "__main__":
    main()
