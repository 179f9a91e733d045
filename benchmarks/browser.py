"""The MNIST guide CNN in a web page, batch 1, in headless Chromium (WebGPU through SwiftShader
where there is no GPU): pyrite against TensorFlow.js (webgpu, wasm) and ONNX Runtime Web
(webgpu, wasm), all with the weights of pyrite's shipped record `demos/mnist/mnist.bin`.

Per peer: cold start (a new browser with a fresh profile, from navigation to the first
prediction read back to JS: the page's `performance.now()` and the wall clock from `page.goto`,
`--cold` times, median), warm latency (one prediction with the probabilities read back to JS,
`--runs` times after `--warmup`, in `--rounds` rounds: median and p90 of the round with the
lowest median) and the largest difference of the probabilities from pyrite's numpy backend on
the first `--verify` MNIST test digits and a noise image.

Every page follows one contract (`browser/bench.js`): `window.bench = {ready, predict, info}`;
a peer is a `Peer` record (name, page URL, the JS that awaits its first prediction and the JS
that runs warm predictions). The pages are served at `/bench/` by a Starlette app on 127.0.0.1,
next to pyrite's own app (`pyrite.server.app.create_app()`) at `/` when it imports; without it
(or with `--peers-only`) only the peers run.

Embeds (also alone with `--embed-only`): first-visit and repeat-visit cold start and the bytes
each transfers, for pyrite's exported bundle (`python -m pyrite.wasm export-web`) embedded in a
page (`pyrite-embed`) and for the peers, all served by a plain `python -m http.server`. A first
visit is a new browser profile, a repeat visit the same profile in a new browser process (its
HTTP cache and Cache Storage kept); `--cold` pairs, each with a fresh profile, medians.

    python benchmarks/browser.py [--peers tfjs-webgpu,ort-wasm] [--cold 3] [--runs 50]
                                 [--embed-only]

Set-up (benchmark-only): `pip install -r benchmarks/browser/requirements.txt` (onnx, to build
the ONNX peer's model); the npm packages are installed by this script (`npm ci` in
`benchmarks/browser/`) when `node_modules` is missing.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import itertools
import json
import os
import platform
import queue
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
from browser_assets import (
    load_weights,
    noise_image,
    reference,
    test_digits,
    write_onnx,
    write_tfjs_weights,
)
from common import cpu_name, write_results

HERE = Path(__file__).resolve().parent
WEB = HERE / "browser"
BUILD = WEB / "build"  # generated weights (ignored by git)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--enable-unsafe-webgpu", "--no-sandbox", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
NPM_PACKAGES = ["@tensorflow/tfjs", "@tensorflow/tfjs-backend-webgpu",
                "@tensorflow/tfjs-backend-wasm", "onnxruntime-web"]

# The contract's defaults: await the first prediction; run warm predictions, timed in the page.
READY_JS = """async (timeoutMs) => {
  const deadline = performance.now() + timeoutMs;
  while (!window.bench) {
    if (performance.now() > deadline) throw new Error("the page set no window.bench");
    await new Promise((r) => setTimeout(r, 2));
  }
  const timeout = new Promise((_, reject) => setTimeout(
    () => reject(new Error(`no first prediction in ${timeoutMs} ms`)), timeoutMs));
  return await Promise.race([window.bench.ready, timeout]);
}"""
PREDICT_JS = "(pixels) => window.bench.predict(pixels)"
WARM_JS = """async ({pixels, warmup, runs}) => {
  for (let i = 0; i < warmup; i++) await window.bench.predict(pixels);
  const ms = [];
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) ms.push((await window.bench.predict(pixels)).ms);
  return {ms, totalMs: performance.now() - t0};
}"""
PAGE_INFO_JS = """async () => {
  let adapter = null;
  const a = navigator.gpu ? await navigator.gpu.requestAdapter() : null;
  if (a) {
    const i = a.info;
    adapter = {vendor: i.vendor, architecture: i.architecture, device: i.device,
               description: i.description, isFallbackAdapter: i.isFallbackAdapter ?? null};
  }
  return {userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated,
          hardwareConcurrency: navigator.hardwareConcurrency, adapter,
          bench: window.bench ? window.bench.info : null};
}"""


@dataclass(frozen=True)
class Peer:
    """One framework + backend: its page (a path on the server) and how to drive it."""

    name: str
    url: str
    ready_js: str = READY_JS  # (timeoutMs) -> Promise<{coldMs}>: the first prediction is done
    predict_js: str = PREDICT_JS  # (pixels) -> Promise<{probabilities, ms}>
    warm_js: str = WARM_JS  # ({pixels, warmup, runs}) -> Promise<{ms: [], totalMs}>
    timeout_s: float = 120.0
    needs: str = ""  # a file under WEB the page fetches; the peer is skipped without it


PEERS = [
    Peer("tfjs-webgpu", "/bench/tfjs.html?backend=webgpu", needs="build/tfjs.bin"),
    Peer("tfjs-wasm", "/bench/tfjs.html?backend=wasm", needs="build/tfjs.bin"),
    Peer("ort-webgpu", "/bench/ort.html?ep=webgpu", needs="build/mnist.onnx"),
    Peer("ort-wasm", "/bench/ort.html?ep=wasm", needs="build/mnist.onnx"),
    # the package's default entry (`import "onnxruntime-web"`): WebGPU through JSEP, not the
    # WebGPU EP compiled into the wasm that `onnxruntime-web/webgpu` loads
    Peer("ort-webgpu-jsep", "/bench/ort.html?ep=webgpu&bundle=ort.min.mjs",
         needs="build/mnist.onnx"),
]
# Run when pyrite's app is mounted at `/` and the page exists (written by the lead).
PYRITE_PEERS = [Peer("pyrite-webgpu", "/bench/pyrite.html?device=webgpu", timeout_s=300.0,
                     needs="pyrite.html")]
# Embeds: the static site's bench pages are WEB at /bench/, pyrite's exported bundle is at
# /tools/pyrite/; the peers' pages are the same as above.
EMBED_PEERS = [Peer("pyrite-embed", "/bench/embed.html", timeout_s=300.0, needs="embed.html"),
               Peer("pyrite-embed-snapshot", "/bench/embed.html?bundle=/tools/pyrite-snapshot/",
                    timeout_s=300.0, needs="embed.html"),
               *PEERS]
BUNDLE = "tools/pyrite"
SNAPSHOT_BUNDLE = "tools/pyrite-snapshot"  # the same export with --snapshot
#: --throttle's network: Chromium's emulation, 20 Mbit/s both ways and 40 ms of latency
THROTTLE = {"offline": False, "latency": 40, "downloadThroughput": 20e6 / 8,
            "uploadThroughput": 20e6 / 8}
# the runtime, libraries and weights: pyrite's Pyodide, wheels, records and kernel lists; the
# peers' npm packages and weight files
BUNDLE_DIRS = ("/pyodide/", "/wheels/", "/models/", "/kernels/", "/node_modules/", "/build/")


def breakdown(calls: list[dict[str, float]]) -> dict[str, float]:
    """Where a pyrite prediction's time goes (medians over the warm calls): Python and its
    calls into WebGPU, the readback (submit, the GPU's work, the mapped result), the bridge
    between the page and the worker (postMessage both ways), and dispatches per prediction."""
    med = statistics.median
    return {"python_ms": med(c["ms"] - c["readbackMs"] for c in calls),
            "readback_ms": med(c["readbackMs"] for c in calls),
            "bridge_ms": med(c["roundTripMs"] - c["ms"] for c in calls),
            "dispatches": med(c["dispatches"] for c in calls),
            "submits": med(c["submits"] for c in calls),
            "readbacks": med(c["readbacks"] for c in calls)}


# ---- assets and server ----------------------------------------------------------------------
def prepare() -> list[str]:
    """npm packages and the weight files; the notes say what could not be made."""
    if not (WEB / "node_modules").is_dir():
        print("installing the peers' npm packages (npm ci in benchmarks/browser) ...")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True)
    BUILD.mkdir(parents=True, exist_ok=True)
    weights = load_weights()
    write_tfjs_weights(weights, BUILD)
    try:
        write_onnx(weights, BUILD / "mnist.onnx")
    except ImportError:
        (BUILD / "mnist.onnx").unlink(missing_ok=True)
        return ["onnx is not installed (pip install -r benchmarks/browser/requirements.txt): "
                "the ONNX Runtime peers are skipped"]
    return []


def pyrite_app() -> tuple[Any, str]:
    """pyrite's Starlette app, or None and why not."""
    try:
        from pyrite.server.app import create_app

        return create_app(), ""
    except Exception as e:  # noqa: BLE001 - any failure: run the peers alone, say why
        return None, f"{type(e).__name__}: {e}"


def combined_app(main: Any, isolate: bool) -> Any:
    """`/bench/...` from WEB's files, everything else (lifespan included) to `main`; with
    `isolate`, every response carries COOP/COEP (cross-origin isolation: SharedArrayBuffer,
    wasm threads, 5 us timers)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    bench = Starlette(routes=[Mount("/bench", StaticFiles(directory=WEB, html=True))])
    main = main or bench
    headers = [(b"cross-origin-opener-policy", b"same-origin"),
               (b"cross-origin-embedder-policy", b"require-corp")]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        async def send_isolated(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *headers]}
            await send(message)

        path = scope.get("path", "")
        target = bench if path == "/bench" or path.startswith("/bench/") else main
        await target(scope, receive, send_isolated if isolate else send)

    return app


class Server:
    """uvicorn on 127.0.0.1 (a free port) in a thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the benchmark's server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


class StaticServer:
    """`python -m http.server` serving `root` on 127.0.0.1 (a free port), in a subprocess;
    `take()` lists the requests it answered since the last call, from its log."""

    LOG = re.compile(r'"GET (\S+) HTTP/[\d.]+" (\d{3})')

    def __init__(self, root: Path) -> None:
        self.root = root
        self.marks = itertools.count()
        self.log: queue.Queue[tuple[str, int]] = queue.Queue()

    def __enter__(self) -> StaticServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
             "--directory", str(self.root)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...) ..."
        port = re.search(r" port (\d+)", line)
        if not port:
            self.proc.kill()
            raise RuntimeError(f"python -m http.server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{port[1]}"
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self.proc.stderr:
            if found := self.LOG.search(line):
                self.log.put((found[1], int(found[2])))

    def take(self) -> list[tuple[str, int]]:
        """(path, status) of each request answered since the last call: everything logged
        before a marker request made now."""
        mark = f"/?mark={next(self.marks)}"
        urllib.request.urlopen(self.url + mark, timeout=30).read()
        out = []
        while (entry := self.log.get(timeout=30))[0] != mark:
            out.append(entry)
        return out

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


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


# ---- measurement ----------------------------------------------------------------------------
def launch(pw: Any) -> Any:
    """A new Chromium with a fresh temporary profile (nothing cached)."""
    return pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def measure(pw: Any, base: str, peer: Peer, args: argparse.Namespace,
            digits: list[list[int]], refs: np.ndarray) -> dict[str, Any]:
    cold, wall = [], []
    out: dict[str, Any] = {"url": peer.url}
    for rep in range(args.cold):
        browser = launch(pw)
        try:
            page = browser.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda e, p=problems: p.append(str(e)))
            page.on("console", lambda m, p=problems: p.append(m.text) if m.type == "error"
                    else None)
            t0 = time.perf_counter()
            page.goto(base + peer.url, wait_until="commit", timeout=peer.timeout_s * 1000)
            try:
                ready = page.evaluate(peer.ready_js, peer.timeout_s * 1000)
            except Exception as e:
                raise RuntimeError(f"{e}; page errors: {problems[-3:]}") from e
            wall.append((time.perf_counter() - t0) * 1000)
            cold.append(float(ready["coldMs"]))
            if rep < args.cold - 1:
                continue
            got = np.array([page.evaluate(peer.predict_js, d)["probabilities"] for d in digits])
            rounds = [page.evaluate(peer.warm_js, {"pixels": digits[0], "warmup": args.warmup,
                                                   "runs": args.runs})
                      for _ in range(args.rounds)]
            out["page"] = page.evaluate(PAGE_INFO_JS)
            calls = page.evaluate("() => window.pyriteCalls || null")
            if calls:
                out["breakdown"] = breakdown(calls[-args.runs:])
            out["chromium"] = browser.version
        finally:
            browser.close()
    # the 2-core machine is shared: the round with the lowest median counts
    warm = min(rounds, key=lambda r: statistics.median(r["ms"]))
    ms = warm["ms"]
    out.update({
        "cold_ms": cold, "cold_median_ms": statistics.median(cold),
        "cold_wall_ms": wall, "cold_wall_median_ms": statistics.median(wall),
        "warm_round_medians_ms": [statistics.median(r["ms"]) for r in rounds],
        "warm_ms": ms, "warm_median_ms": statistics.median(ms),
        "warm_p90_ms": float(np.percentile(ms, 90)), "warm_mean_ms": warm["totalMs"] / len(ms),
        "max_abs_diff": float(np.abs(got - refs).max()),
        "max_abs_diff_digits": float(np.abs(got - refs)[:-1].max()),
        "predicted": got[:-1].argmax(1).tolist(),
    })
    return out


def measure_all(pw: Any, server: Server, peers: list[Peer], args: argparse.Namespace,
                digits: list[list[int]], refs: np.ndarray,
                results: dict[str, dict[str, Any]]) -> None:
    """Cold start, warm latency and correctness of each peer into `results`."""
    for peer in peers:
        if peer.needs and not (WEB / peer.needs).exists():
            results[peer.name] = {"url": peer.url, "skipped": f"no {peer.needs}"}
            continue
        print(f"{peer.name}: {args.cold} cold starts, {args.runs} warm predictions ...",
              flush=True)
        try:
            results[peer.name] = measure(pw, server.url, peer, args, digits, refs)
        except Exception as e:  # noqa: BLE001 - record it, go on with the next peer
            results[peer.name] = {"url": peer.url, "error": f"{type(e).__name__}: {e}"}
        print("  ", {k: v for k, v in results[peer.name].items()
                     if k.endswith("median_ms") or k in ("max_abs_diff", "error")})


def visit(pw: Any, profile: str, server: StaticServer, peer: Peer,
          throttle: bool = False) -> dict[str, Any]:
    """One visit with the browser profile `profile` (a new browser process): ms from navigation
    to the first prediction, and every request the server answered: the file's size where it
    sent the file (200), 0 for a 304 or an error; beside it what the browser reports (headers +
    body, CDP's encodedDataLength: 0 from the HTTP cache; Cache Storage hits make no request).
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
        load = page.evaluate("() => window.bench.info.load || null")
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


def npm_versions() -> dict[str, str]:
    out = {}
    for name in NPM_PACKAGES:
        manifest = WEB / "node_modules" / name / "package.json"
        if manifest.exists():
            out[name] = json.loads(manifest.read_text())["version"]
    return out


def table(peers: dict[str, dict[str, Any]]) -> str:
    rows = [("peer", "cold (page)", "cold (wall)", "warm median", "warm p90", "warm mean",
             "max |diff|")]
    others: list[str] = []
    for name, r in peers.items():
        if "error" in r or "skipped" in r:
            why = f"error: {r['error'][:80]}" if "error" in r else f"skipped: {r['skipped']}"
            others.append(f"{name}  {why}")
            continue
        rows.append((name, f"{r['cold_median_ms']:.0f} ms", f"{r['cold_wall_median_ms']:.0f} ms",
                     f"{r['warm_median_ms']:.2f} ms", f"{r['warm_p90_ms']:.2f} ms",
                     f"{r['warm_mean_ms']:.3f} ms", f"{r['max_abs_diff']:.1e}"))
        if "breakdown" in r:
            b = r["breakdown"]
            others.append(f"{name} per prediction: Python {b['python_ms']:.1f} ms, readback "
                          f"{b['readback_ms']:.1f} ms (submit + GPU + map), worker bridge "
                          f"{b['bridge_ms']:.1f} ms; {b['dispatches']:.0f} dispatches, "
                          f"{b['submits']:.0f} submits, {b['readbacks']:.0f} readback")
            if "load" in (r.get("page", {}).get("bench") or {}):
                load = r["page"]["bench"]["load"]
                others.append(f"{name} load: " + ", ".join(
                    f"{k} {v:.0f} ms" for k, v in load.items()))
    return "\n".join(aligned(rows) + others)


def aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def size(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n:,.0f} B"


def embed_table(embed: dict[str, Any]) -> str:
    rows = [("peer", "first visit", "repeat visit", "first bytes", "(gzip host)", "repeat bytes",
             "repeat runtime+weights", "repeat 304s", "first, 20 Mbit/s")]
    others = []
    if "export" in embed:
        x = embed["export"]
        others.append(f"export-web: {x['error']}" if "error" in x else
                      f"export-web says: {size(x['disk_bytes'])} on disk, a first visit "
                      f"{size(x['first_visit_bytes'])} ({size(x['first_visit_gz_bytes'])} "
                      "with the .gz copies)")
    for name, r in embed["peers"].items():
        if "error" in r or "skipped" in r:
            why = f"error: {r['error'][:80]}" if "error" in r else f"skipped: {r['skipped']}"
            others.append(f"{name}  {why}")
            continue
        rows.append((name, f"{r['first_median_ms']:.0f} ms", f"{r['repeat_median_ms']:.0f} ms",
                     size(r["first_bytes"]), size(r["first_bytes_if_gzip"]),
                     size(r["repeat_bytes"]), size(r["repeat_bundle_bytes"]),
                     f"{r['repeat_not_modified']:.0f}",
                     f"{r['throttled_first_median_ms']:.0f} ms"
                     if "throttled_first_median_ms" in r else "-"))
    for name, ratios in embed.get("ratios", {}).items():
        others.append(f"{name} / peer: " + ", ".join(f"{k} {v['first']:.2f}x first, "
                                                     f"{v['repeat']:.2f}x repeat"
                                                     for k, v in ratios.items()))
    return "\n".join(aligned(rows) + others)


def embed_ratios(peers: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Each pyrite embed's median visit time over each peer's, from the same run."""
    done = {k: v for k, v in peers.items() if "first_median_ms" in v}
    return {name: {peer: {kind: mine[f"{kind}_median_ms"] / theirs[f"{kind}_median_ms"]
                          for kind in ("first", "repeat", "throttled_first")
                          if f"{kind}_median_ms" in mine and f"{kind}_median_ms" in theirs}
                   for peer, theirs in done.items() if not peer.startswith("pyrite")}
            for name, mine in done.items() if name.startswith("pyrite")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", default="", help="comma-separated peer names (default: all)")
    parser.add_argument("--cold", type=int, default=3,
                        help="cold starts per peer, and first + repeat visit pairs per embed")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--runs", type=int, default=50, help="warm predictions per round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="warm rounds (each after --warmup); the best round's median counts")
    parser.add_argument("--verify", type=int, default=5,
                        help="MNIST test digits compared (and one noise image)")
    parser.add_argument("--peers-only", action="store_true", help="do not mount pyrite's app")
    parser.add_argument("--isolate", action="store_true",
                        help="serve with COOP/COEP (cross-origin isolated pages)")
    parser.add_argument("--embed-only", action="store_true",
                        help="only the first and repeat visits under a static server (the "
                        "other results in --out are kept)")
    parser.add_argument("--throttle", action="store_true",
                        help="embeds: also first visits on a 20 Mbit/s, 40 ms network "
                        "(Chromium's emulation)")
    parser.add_argument("--out", default=str(HERE / "results" / "browser.json"))
    args = parser.parse_args()
    if min(args.cold, args.runs, args.rounds) < 1:
        parser.error("--cold, --runs and --rounds must be at least 1")
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="xdg-")

    notes = prepare()
    main_app, why = (None, "--peers-only") if args.peers_only or args.embed_only \
        else pyrite_app()
    peers = [] if args.embed_only else list(PEERS)
    embeds = list(EMBED_PEERS)
    if main_app is None:
        if not args.embed_only:
            notes.append(f"pyrite's app is not mounted ({why}): measuring the peers only")
    else:
        peers += PYRITE_PEERS
    if args.peers:
        wanted = set(args.peers.split(","))
        known = {p.name for p in peers + embeds}
        if wanted - known:
            parser.error(f"unknown peers {sorted(wanted - known)}; known: {sorted(known)}")
        peers = [p for p in peers if p.name in wanted]
        embeds = [p for p in embeds if p.name in wanted]
    for note in notes:
        print("note:", note)
    load_before = os.getloadavg()
    digits = [*test_digits(args.verify), noise_image()]
    refs = np.array(reference(digits))

    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, Any]] = {}
    path = Path(args.out)
    with sync_playwright() as pw:
        if not args.embed_only:
            with Server(combined_app(main_app, args.isolate)) as server:
                measure_all(pw, server, peers, args, digits, refs, results)
        embed = run_embeds(pw, embeds, args.cold, args.throttle) if embeds else None

    if args.embed_only:  # the other results stay as the last full run left them
        result = json.loads(path.read_text()) if path.exists() else {"benchmark": "browser"}
    else:
        first = next((r for r in results.values() if "page" in r), {})
        result = {
            "benchmark": "browser", "cpu": cpu_name(), "cores": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_1min": {"start": load_before[0], "end": os.getloadavg()[0]},
            "chromium": first.get("chromium"),
            "chromium_args": CHROMIUM_ARGS, "adapter": first.get("page", {}).get("adapter"),
            "cross_origin_isolated": first.get("page", {}).get("crossOriginIsolated"),
            "npm": npm_versions(), "pyrite_app": main_app is not None, "notes": notes,
            "settings": {"cold": args.cold, "warmup": args.warmup, "runs": args.runs,
                         "rounds": args.rounds,
                         "verify_digits": list(range(args.verify)),
                         "verify_noise": "uniform 0..255, numpy default_rng(0)", "batch": 1},
            "peers": results,
        }
        print(table(results))
    if embed is not None:
        result["embed"] = embed
        print(embed_table(embed))
    write_results(path, result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
