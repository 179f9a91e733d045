"""What one change to a visit is worth, measured side by side: pyrite's bundle exported once and
served twice from one static server, as exported (`a`) and with one line of its JavaScript
changed back to how it was (`b`, `--undo NAME`, below), or `b` exported from the sources of a
git ref (`--against main`: the whole export of that commit, Python and JavaScript). First
visits alternate a, b, b, a, ... (a fresh browser profile each, the embed page of
browser.py; with `--throttle` on browser.py's 20 Mbit/s network), so both see the same
machine load; with `--repeat`, each first visit is followed by a repeat visit with its
profile.

    python benchmarks/embed_ab.py --undo preload|put|memfs|tune [--pairs 4] [--throttle]
        [--repeat] [--out FILE]
    python benchmarks/embed_ab.py --against main --repeat [--pairs 4] [--out FILE]

- `preload`: the first visit imports `pyrite.wasm.preload` right after the wheels, as it did
  until session 6 for the next visit's snapshot (without making the snapshot).
- `memfs`: the wheels' files written with `FS.writeFile` each, as until session 8 (wheels.js
  makes each file's MEMFS node and gives it the wheel's bytes).
- `tune`: a restored visit mounts the autotune store's folder after the wheels are written,
  as until session 8 (now while they are).
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
from typing import Any

from browser_embed import EMBED_PEERS, visit
from browser_servers import HERE, WEB, StaticServer
from common import write_results

WHEELS_DONE = "  timings.wheelsMs = performance.now() - t1;\n"
#: name -> (the bundle's file, a line of it, what `b` has instead)
UNDO = {
    "preload": ("worker.js", WHEELS_DONE,
                WHEELS_DONE + "  { const tp = performance.now(); pyodide.runPython("
                "'import pyrite.wasm.preload'); timings.preloadMs = performance.now() - tp; }\n"),
    "memfs": ("worker.js", "if (parent && fs.filesystems?.MEMFS",
              "if (false && parent && fs.filesystems?.MEMFS"),
    "tune": ("worker.js", "const tuneStore = timings.snapshot ? mountTuneStore() : null;",
             "const tuneStore = null;"),
    "put": ("cache.js",
            "    cache.put(key, response.clone()).catch(() => { /* quota exceeded: the network"
            " copy */ });\n",
            "    await cache.put(key, response.clone()).catch(() => {});\n"),
}
PHASES = ("pyodideMs", "bootModuleMs", "wheelsMs", "preloadMs", "importMs", "deviceMs",
          "modelsMs", "modelPythonMs", "workerLoadStartMs", "firstPredictMs", "manifestMs",
          "snapshotReadMs", "moduleMs", "pythonAtMs")
#: what the model step's Python counted (page.load_model's answer)
MODEL = ("submits", "dispatches", "pipelines", "precompiled", "pipeline_ms")
#: what the first prediction's Python counted (page.predict's answer): the wait for the
#: pipelines compiled ahead, the readback
PREDICT = ("pipeline_ms", "readback_ms", "submits")


def export(out: Path, ref: str | None) -> None:
    """The mnist bundle into `out`: by this checkout, or by the sources of git ref `ref`
    (copied into the `pyrite` package layout that the wheel is built from)."""
    env = dict(os.environ)
    if ref is not None:
        repo = Path(__file__).resolve().parents[1]
        src, pkg = out.parent / f"src-{out.name}", out.parent / f"pp-{out.name}" / "pyrite"
        src.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(repo), "archive", ref], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        shutil.copytree(src / "core", pkg)
        for folder in ("webgpu", "shaders", "demos", "wasm", "server"):
            shutil.copytree(src / folder, pkg / folder)
        (pkg / "wasm" / "node_modules").symlink_to(repo / "wasm" / "node_modules")
        env["PYTHONPATH"] = str(pkg.parent)
    subprocess.run([sys.executable, "-m", "pyrite.wasm", "export-web", "--out", str(out),
                    "--model", "mnist"], check=True, capture_output=True, env=env,
                   cwd=out.parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--undo", choices=sorted(UNDO))
    which.add_argument("--against", metavar="REF", help="b: the export of git ref REF")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--throttle", action="store_true")
    parser.add_argument("--repeat", action="store_true",
                        help="a repeat visit after each first visit, with its profile")
    parser.add_argument("--out", default=None,
                        help="default: results/embed_ab_NAME.json")
    args = parser.parse_args()
    label = args.undo or f"against_{args.against}"
    out = Path(args.out or HERE / "results" / f"embed_ab_{label}.json")
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="xdg-")
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
    if args.repeat:
        runs.update({"a_repeat": [], "b_repeat": []})
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site = Path(tmp)
        (site / "bench").symlink_to(WEB, target_is_directory=True)
        (site / "tools").mkdir()
        export(site / "tools/a", None)
        if args.against:
            export(site / "tools/b", args.against)
        else:
            shutil.copytree(site / "tools/a", site / "tools/b")
            name, line, instead = UNDO[args.undo]
            changed = site / "tools/b" / name
            if changed.read_text().count(line) != 1:
                raise SystemExit(f"{name} has changed: the line --undo {args.undo} replaces "
                                 "is gone; update UNDO")
            changed.write_text(changed.read_text().replace(line, instead))
        with sync_playwright() as pw, StaticServer(site) as server:
            for pair in range(args.pairs):
                # a, b, then b, a: neither bundle always takes the slot after the other's
                for kind in ("a", "b") if pair % 2 == 0 else ("b", "a"):
                    # the page closes once the next visit's snapshot is stored (settle_js), not
                    # while the second worker still fetches; the time is to the first prediction
                    peer = replace(EMBED_PEERS[0], url=f"/bench/embed.html?bundle=/tools/{kind}/")
                    with tempfile.TemporaryDirectory(prefix="profile-",
                                                     ignore_cleanup_errors=True) as profile:
                        visits = [kind] + ([f"{kind}_repeat"] if args.repeat else [])
                        for name in visits:
                            got = visit(pw, profile, server, peer, throttle=args.throttle)
                            runs[name].append(_row(got))
                            print(name, f"{got['ms']:.0f} ms", flush=True)
    result = {"benchmark": "embed_ab", "undo": args.undo, "against": args.against,
              "doc": UNDO[args.undo][2].strip() if args.undo else f"b: git ref {args.against}",
              "pairs": args.pairs, "throttled": args.throttle,
              "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
              "median_ms": {k: statistics.median(r["ms"] for r in v) for k, v in runs.items()},
              "median_phases_ms": {k: _medians(v) for k, v in runs.items()},
              "visits": runs}
    print(result["median_ms"])
    write_results(out, result)


def _medians(rows: list[dict[str, float]]) -> dict[str, float]:
    """The median of each phase every visit has."""
    return {p: statistics.median(r[p] for r in rows)
            for p in (*PHASES, *(f"model_{k}" for k in MODEL),
                      *(f"predict_{k}" for k in PREDICT)) if all(p in r for r in rows)}


def _row(got: dict[str, Any]) -> dict[str, float]:
    """A visit's time, the machine's load and the worker's phases."""
    load = got["load"] or {}
    model = load.get("model") or {}
    predict = load.get("firstPredict") or {}
    if "pyodideMs" in load and "workerLoadStartMs" in load:
        # Python restored (or booted), in ms since navigation
        load = {**load, "pythonAtMs": load["workerLoadStartMs"] + load["pyodideMs"]}
    return {"ms": got["ms"], "load_1min": os.getloadavg()[0],
            **{k: load[k] for k in PHASES if k in load},
            **{f"model_{k}": model[k] for k in MODEL if k in model},
            **{f"predict_{k}": predict[k] for k in PREDICT if k in predict}}


if __name__ == "__main__":
    main()
