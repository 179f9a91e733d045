"""The embed measurements of browser.py: first and repeat visits of pyrite's exported bundle
(`python -m pyrite.wasm export-web`) embedded in a page, and of the peers, all from a plain
static server: the time from navigation to the first prediction and the bytes each visit
transfers (and would with a compressing host), optionally on a throttled network."""

from __future__ import annotations

import functools
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from browser_peers import PEERS, Peer
from browser_servers import CHROMIUM, CHROMIUM_ARGS, WEB, StaticServer

# Embeds: the static site's bench pages are WEB at /bench/, pyrite's exported bundle is at
# /tools/pyrite/; the peers' pages are the same as above.
# pyrite's first visit makes the next visit's snapshot in the background (a second worker):
# the visit ends when it is stored, so that the repeat visit has it
SETTLE_JS = """async (timeoutMs) => {
  const timeout = new Promise((_, reject) => setTimeout(
    () => reject(new Error(`the next visit's snapshot took over ${timeoutMs} ms`)), timeoutMs));
  return await Promise.race([window.bench.settled, timeout]);
}"""
EMBED_PEERS = [Peer("pyrite-embed", "/bench/embed.html", timeout_s=300.0, needs="embed.html",
                    settle_js=SETTLE_JS),
               Peer("pyrite-embed-snapshot", "/bench/embed.html?bundle=/tools/pyrite-snapshot/",
                    timeout_s=300.0, needs="embed.html", settle_js=SETTLE_JS),
               *PEERS]
BUNDLE = "tools/pyrite"
SNAPSHOT_BUNDLE = "tools/pyrite-snapshot"  # the same export with --snapshot
#: --throttle's network: Chromium's emulation, 20 Mbit/s both ways and 40 ms of latency
THROTTLE = {"offline": False, "latency": 40, "downloadThroughput": 20e6 / 8,
            "uploadThroughput": 20e6 / 8}
# the runtime, libraries and weights: pyrite's Pyodide, wheels, records and kernel lists; the
# peers' npm packages and weight files
BUNDLE_DIRS = ("/pyodide/", "/wheels/", "/models/", "/kernels/", "/node_modules/", "/build/")


def export_site(site: Path) -> dict[str, Any]:
    """The static site: pyrite's bundle exported to `site/tools/pyrite/` by the command users
    run (and with --snapshot to `site/tools/pyrite-snapshot/`), the bench pages (WEB, a link)
    at `site/bench/`; returns what the exports printed."""
    (site / "bench").symlink_to(WEB, target_is_directory=True)
    out: dict[str, Any] = {}
    for folder, extra in ((BUNDLE, []), (SNAPSHOT_BUNDLE, ["--snapshot"])):
        command = [sys.executable, "-m", "pyrite.wasm", "export-web", "--out",
                   str(site / folder), "--model", "mnist", *extra]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"export-web failed: {(done.stderr or done.stdout).strip()[-500:]}")
        # "on disk: N bytes", "first visit: N bytes (.gz copies)", "N bytes (python -m
        # http.server)"
        disk, first_gz, first = (int(n.replace(",", ""))
                                 for n in re.findall(r"([\d,]+) bytes \(", done.stdout)[:3])
        numbers = {"command": " ".join(["python -m pyrite.wasm export-web --out", f"site/{folder}",
                                        "--model mnist", *extra]),
                   "disk_bytes": disk, "first_visit_bytes": first,
                   "first_visit_gz_bytes": first_gz}
        if extra:
            out["snapshot"] = numbers
        else:
            out.update(numbers)
    return out


@functools.cache
def gzip_size(file: Path) -> int:
    """What a host that compresses sends for `file`: its `.gz` copy where the bundle has one,
    else gzip -9 where that saves 10 % (the rule of pyrite's export), else the file."""
    if (gz := file.with_name(file.name + ".gz")).is_file():
        return gz.stat().st_size
    size = file.stat().st_size
    packed = len(gzip.compress(file.read_bytes(), compresslevel=9, mtime=0))
    return packed if packed <= 0.9 * size else size


def visit(pw: Any, profile: str, server: StaticServer, peer: Peer,
          throttle: bool = False) -> dict[str, Any]:
    """One visit with the browser profile `profile` (a new browser process): ms from navigation
    to the first prediction (the page closes once the peer's `settle_js` is done, if it has
    one: the requests made meanwhile count with the visit), and every request the server
    answered: the file's size where it sent the file (200), 0 for a 304 or an error; beside it
    what the browser reports (headers + body, CDP's encodedDataLength: 0 from the HTTP cache;
    Cache Storage hits make no request).
    With `throttle`, the page's network is Chromium's emulation of THROTTLE (its workers'
    requests go through the page's network and are throttled with it)."""
    seen: dict[str, int] = {}
    context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM,
                                                    headless=True, args=CHROMIUM_ARGS)

    def finished(request: Any) -> None:
        sizes = request.sizes()
        path = urlsplit(request.url).path
        seen[path] = seen.get(path, 0) + sizes["responseHeadersSize"] + sizes["responseBodySize"]

    context.on("requestfinished", finished)  # the page's, its workers' and service workers'
    try:
        page = context.pages[0] if context.pages else context.new_page()
        if throttle:
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            cdp.send("Network.emulateNetworkConditions", THROTTLE)
        page.goto(server.url + peer.url, wait_until="commit", timeout=peer.timeout_s * 1000)
        ready = page.evaluate(peer.ready_js, peer.timeout_s * 1000)
        if peer.settle_js:
            page.evaluate(peer.settle_js, peer.timeout_s * 1000)
        load = page.evaluate("() => window.bench.info.load || null")
        if load is not None and peer.settle_js:
            load["nextVisit"] = page.evaluate("() => window.bench.info.nextVisit || null")
    finally:
        context.close()
        answered = server.take()  # also after a failure: the next visit starts clean
    files = []
    for raw, status in answered:
        path = unquote(urlsplit(raw).path)
        file = server.root / path.lstrip("/")
        files.append({"path": path, "status": status, "browser_bytes": seen.pop(path, None),
                      "bytes": file.stat().st_size if status == 200 and file.is_file() else 0,
                      "gzip_bytes": gzip_size(file) if status == 200 and file.is_file() else 0})
    bundle = [f for f in files if any(d in f["path"] for d in BUNDLE_DIRS)]
    return {"ms": float(ready["coldMs"]), "load": load, "files": files,
            "bytes": sum(f["bytes"] for f in files),
            "bundle_bytes": sum(f["bytes"] for f in bundle),
            "bytes_if_gzip": sum(f["gzip_bytes"] for f in files),
            "browser_bytes": sum(f["browser_bytes"] or 0 for f in files),
            "requests": len(files), "not_modified": sum(f["status"] == 304 for f in files)}


def measure_embed(pw: Any, server: StaticServer, peer: Peer, pairs: int,
                  throttle: bool = False) -> dict[str, Any]:
    """`pairs` times: a first visit with a fresh profile, then a repeat visit with it; with
    `throttle`, also a first visit on THROTTLE's network with another fresh profile."""
    visits: dict[str, list[dict[str, Any]]] = {"first": [], "repeat": []}
    if throttle:
        visits["throttled_first"] = []
    for _ in range(pairs):
        with tempfile.TemporaryDirectory(prefix="profile-", ignore_cleanup_errors=True) as prof:
            for kind in ("first", "repeat"):
                visits[kind].append(visit(pw, prof, server, peer))
        if throttle:
            with tempfile.TemporaryDirectory(prefix="profile-",
                                             ignore_cleanup_errors=True) as prof:
                visits["throttled_first"].append(visit(pw, prof, server, peer, throttle=True))
    out: dict[str, Any] = {"url": peer.url}
    for kind, runs in visits.items():
        out[f"{kind}_ms"] = [v["ms"] for v in runs]
        out[f"{kind}_median_ms"] = statistics.median(out[f"{kind}_ms"])
        for key in ("bytes", "bundle_bytes", "bytes_if_gzip", "browser_bytes", "requests",
                    "not_modified"):
            out[f"{kind}_{key}"] = int(statistics.median(v[key] for v in runs))
        out[f"{kind}_bytes_each"] = [v["bytes"] for v in runs]  # a lost cache entry shows here
        out[f"{kind}_files"] = runs[-1]["files"]  # the last pair's, for inspection
        if runs[-1]["load"]:
            out[f"{kind}_load"] = runs[-1]["load"]
    return out


def run_embeds(pw: Any, peers: list[Peer], pairs: int, throttle: bool = False) -> dict[str, Any]:
    """The embed section: the export's own numbers and each peer's visits."""
    load_before = os.getloadavg()
    out: dict[str, Any] = {"server": "python -m http.server (no compression, Last-Modified: "
                                     "heuristic freshness or a 304 on repeat visits)",
                           "pairs": pairs, "peers": {},
                           "throttle": THROTTLE if throttle else None}
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site = Path(tmp)
        try:
            out["export"] = export_site(site)
        except Exception as e:  # noqa: BLE001 - the peers still run; the embed peer says why
            out["export"] = {"error": f"{type(e).__name__}: {e}"}
        with StaticServer(site) as server:
            for peer in peers:
                if peer.needs and not (WEB / peer.needs).exists():
                    out["peers"][peer.name] = {"url": peer.url, "skipped": f"no {peer.needs}"}
                    continue
                if peer.name.startswith("pyrite-embed") and "error" in out["export"]:
                    out["peers"][peer.name] = {"url": peer.url, "error": out["export"]["error"]}
                    continue
                print(f"{peer.name}: {pairs} first + repeat visits ...", flush=True)
                try:
                    out["peers"][peer.name] = measure_embed(pw, server, peer, pairs, throttle)
                except Exception as e:  # noqa: BLE001 - record it, go on with the next peer
                    out["peers"][peer.name] = {"url": peer.url, "error": f"{type(e).__name__}: {e}"}
    out["load_average_1min"] = {"start": load_before[0], "end": os.getloadavg()[0]}
    out["ratios"] = embed_ratios(out["peers"])
    return out


def embed_ratios(peers: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Each pyrite embed's median visit time over each peer's, from the same run."""
    done = {k: v for k, v in peers.items() if "first_median_ms" in v}
    return {name: {peer: {kind: mine[f"{kind}_median_ms"] / theirs[f"{kind}_median_ms"]
                          for kind in ("first", "repeat", "throttled_first")
                          if f"{kind}_median_ms" in mine and f"{kind}_median_ms" in theirs}
                   for peer, theirs in done.items() if not peer.startswith("pyrite")}
            for name, mine in done.items() if name.startswith("pyrite")}

