"""What one change to the first visit is worth, measured side by side: pyrite's bundle
exported once and served twice from one static server, as exported (`a`) and with one line of
its JavaScript changed back to how it was (`b`, `--undo NAME`, below). First visits alternate
a, b (a fresh browser profile each, the embed page of browser.py; with `--throttle` on
browser.py's 20 Mbit/s network), so both see the same machine load.

    python benchmarks/embed_ab.py --undo preload|put [--pairs 4] [--throttle] [--out FILE]
    python benchmarks/embed_ab.py --against main [--repeat] [--pairs 4] [--out FILE]

- `preload`: the first visit imports `pyrite.wasm.preload` right after the wheels, as it did
  until session 6 for the next visit's snapshot (without making the snapshot).
- `put`: the worker's cached fetch hands a downloaded file over only once its copy is in Cache
  Storage (Pyodide then compiles its WebAssembly after the whole file is cached), as until
  session 6.
- `--against REF` instead of `--undo`: `b` has the bundle's JavaScript files as they are in the
  git revision REF (`git show REF:wasm/NAME`; the wheels and the rest stay this export's), so
  this branch's worker is timed against REF's on the same machine.

With `--repeat`, each visit of a pair is a repeat visit: a first visit with a fresh profile
(closed once the next visit's snapshot is stored), then the visit that is timed, with that
profile.
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
          "modelsMs", "workerLoadStartMs", "firstPredictMs", "manifestMs", "snapshotReadMs",
          "moduleMs", "snapshot")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--undo", choices=sorted(UNDO))
    which.add_argument("--against", metavar="REF",
                       help="b: the bundle's JavaScript as in this git revision")
    parser.add_argument("--repeat", action="store_true", help="time repeat visits")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--throttle", action="store_true")
    parser.add_argument("--out", default=None,
                        help="default: results/embed_ab_NAME.json")
    args = parser.parse_args()
    label = args.undo or f"against_{args.against}"
    out = Path(args.out or HERE / "results" / f"embed_ab_{label}.json")
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
        if args.against:
            doc = f"the bundle's JavaScript from {args.against}: " + ", ".join(
                js_from(args.against, site / "tools/b"))
        else:
            name, line, instead = UNDO[args.undo]
            doc = instead.strip()
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
                        if args.repeat:
                            visit(pw, profile, server, peer)
                        got = visit(pw, profile, server, peer, throttle=args.throttle)
                    load = got["load"] or {}
                    phases = {k: load[k] for k in PHASES if k in load}
                    if "pyodideMs" in load and "workerLoadStartMs" in load:
                        # Python restored (or booted), in ms since navigation
                        phases["pythonAtMs"] = load["workerLoadStartMs"] + load["pyodideMs"]
                    runs[kind].append({"ms": got["ms"], "load_1min": os.getloadavg()[0],
                                       **phases})
                    print(kind, f"{got['ms']:.0f} ms", flush=True)
    result = {"benchmark": "embed_ab", "undo": args.undo, "against": args.against,
              "doc": doc, "repeat": args.repeat, "pairs": args.pairs, "throttled": args.throttle,
              "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
              "median_ms": {k: statistics.median(r["ms"] for r in v) for k, v in runs.items()},
              "median_phases_ms": {k: medians(v) for k, v in runs.items()},
              "visits": runs}
    print(result["median_ms"])
    print({k: v.get("pythonAtMs") for k, v in result["median_phases_ms"].items()},
          "(Python restored, ms since navigation)")
    write_results(out, result)


def medians(visits: list[dict[str, float]]) -> dict[str, float]:
    """The median of each numeric phase over the visits that have it."""
    names = {k for v in visits for k, x in v.items() if isinstance(x, float | int)
             and not isinstance(x, bool)}
    return {k: statistics.median(v[k] for v in visits if k in v) for k in sorted(names)}


def js_from(ref: str, bundle: Path) -> list[str]:
    """Replace the bundle's own JavaScript files (at its root) by their text in the git revision
    `ref`; the names replaced (a file `ref` does not have stays, unused by its worker)."""
    replaced = []
    for path in sorted(bundle.glob("*.js")):
        done = subprocess.run(["git", "show", f"{ref}:wasm/{path.name}"], cwd=HERE.parent,
                              capture_output=True)
        if done.returncode == 0:
            path.write_bytes(done.stdout)
            replaced.append(path.name)
    if "worker.js" not in replaced:
        raise SystemExit(f"git show {ref}:wasm/worker.js failed: is {ref} a revision of this "
                         "repository?")
    return replaced


if __name__ == "__main__":
    main()
