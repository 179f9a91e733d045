"""The peers' pages of browser.py: the page contract (`browser/bench.js`), the `Peer` record,
the peers (TF.js, ONNX Runtime Web, pyrite's own page) and their measurement: cold starts, warm
latency and the largest difference from pyrite's numpy backend."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from dataclasses import dataclass
from typing import Any

import common
import numpy as np
from browser_assets import load_weights, write_onnx, write_tfjs_weights
from browser_servers import PAGE_INFO_JS, WEB, Server, launch

BUILD = WEB / "build"  # generated weights (ignored by git)
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
@dataclass(frozen=True)
class Peer:
    """One framework + backend: its page (a path on the server) and how to drive it."""

    name: str
    url: str
    ready_js: str = READY_JS  # (timeoutMs) -> Promise<{coldMs}>: the first prediction is done
    predict_js: str = PREDICT_JS  # (pixels) -> Promise<{probabilities, ms}>
    warm_js: str = WARM_JS  # ({pixels, warmup, runs}) -> Promise<{ms: [], totalMs}>
    timeout_s: float = 120.0
    #: (timeoutMs) -> Promise: awaited after the first prediction, before an embed's visit
    #: closes the page (the work a visit does for the next one); "" for none
    settle_js: str = ""
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


def npm_versions() -> dict[str, str]:
    """The peers' npm packages as installed for the pages (common.npm_versions)."""
    return common.npm_versions(WEB / "node_modules", NPM_PACKAGES)

