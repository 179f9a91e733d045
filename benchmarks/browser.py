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
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from browser_assets import noise_image, reference, test_digits
from browser_embed import EMBED_PEERS, run_embeds
from browser_peers import PEERS, PYRITE_PEERS, measure_all, npm_versions, prepare
from browser_report import embed_table, table
from browser_servers import CHROMIUM_ARGS, HERE, Server, combined_app, pyrite_app
from common import cpu_name, write_results


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
