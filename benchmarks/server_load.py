"""The prediction API under a burst: N concurrent SqueezeNet and N concurrent MNIST requests.

    python benchmarks/server_load.py [--requests 200] [--queue-size 64] [--out FILE]

Starts `pyrite serve` in a forked process (over a stand-in web bundle: only the API is measured),
loads each model with one request, then sends `--requests` predictions of each model at once
(SqueezeNet's burst first, then MNIST's). A client here behaves as a well-written one: a 503 is
retried after its Retry-After. Reported per model: answers, errors (anything but a 200 in the
end), how many requests met a full queue (503) at least once, latency p50/p99 from first send to
answer (retries included), the largest batch the server ran; and the server's resident memory
before the bursts, at their peak (sampled every 20 ms) and 3 s after. Needs the SqueezeNet model
in $PYRITE_MODELS. Results go to benchmarks/results/server_load.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cpu_name, write_results  # noqa: E402

from pyrite.server.bundle import ENTRY, PYODIDE_ENTRY  # noqa: E402


def _rss_mb(pid: int) -> float:
    """The process's resident memory in MB (0 once it has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler:
    """The server's peak resident memory, sampled in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_mb(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def _serve(web: Path, port: int, queue_size: int) -> None:
    """The server, in a forked child (so that its command line is this benchmark's)."""
    from pyrite.server.cli import main as serve

    sys.exit(serve(["--web", str(web), "--port", str(port), "--log-level", "warning",
                    "--queue-size", str(queue_size)]))


def _start(web: Path, queue_size: int) -> tuple[multiprocessing.Process, str]:
    for name in (ENTRY, PYODIDE_ENTRY):
        (web / name).parent.mkdir(parents=True, exist_ok=True)
        (web / name).write_text("// stand-in\n")
    with socket.socket() as probe:  # a free port for the server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = multiprocessing.get_context("fork").Process(target=_serve,
                                                          args=(web, port, queue_size))
    process.start()
    base = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "healthz", timeout=5).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"the server did not start (exit code {process.exitcode})")


async def _one(client: httpx.AsyncClient, url: str, body: bytes
               ) -> tuple[int, float, bool, int, float]:
    """(final status, seconds from first send to answer, met a full queue, batch size, the
    batch's compute time in ms as the server measured it)."""
    start, queued = time.perf_counter(), False
    while True:
        r = await client.post(url, content=body, headers={"content-type": "application/json"})
        if r.status_code != 503 or "retry-after" not in r.headers:
            answer = r.json() if r.status_code == 200 else {}
            return (r.status_code, time.perf_counter() - start, queued,
                    answer.get("batch", 0), answer.get("ms", 0.0))
        queued = True
        await asyncio.sleep(float(r.headers["retry-after"]) * random.uniform(0.5, 1.5))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _burst(base: str, model: str, body: bytes, n: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        url = f"{base}api/predict/{model}"
        first = await client.post(url, content=body,
                                  headers={"content-type": "application/json"})
        if first.status_code != 200:
            raise SystemExit(f"{model}: the warm-up request got {first.status_code}: "
                             f"{first.text[:300]}")
        start = time.perf_counter()
        done = await asyncio.gather(*(_one(client, url, body) for _ in range(n)))
        took = time.perf_counter() - start
    latencies = [t for status, t, _, _, _ in done if status == 200]
    batches = {(ms, b) for _, _, _, b, ms in done if b}  # each batch's answers share its ms
    return {"requests": n, "answered": len(latencies),
            "errors": sum(status != 200 for status, _, _, _, _ in done),
            "met_full_queue": sum(q for _, _, q, _, _ in done),
            "p50_s": round(_percentile(latencies, 0.50), 3),
            "p99_s": round(_percentile(latencies, 0.99), 3),
            "burst_s": round(took, 3), "batches": len(batches),
            "largest_batch": max(b for _, _, _, b, _ in done),
            "model_compute_s": round(sum(ms for ms, _ in batches) / 1000, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--queue-size", type=int, default=64)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).parent / "results" / "server_load.json")
    args = parser.parse_args()
    rng = random.Random(0)
    bodies = {"squeezenet": ('{"pixels": [' + ",".join(str(rng.randrange(256))
                                                       for _ in range(227 * 227 * 3)) + "]}"),
              "mnist": '{"pixels": [' + ",".join(str(rng.randrange(256))
                                                 for _ in range(784)) + "]}"}
    with tempfile.TemporaryDirectory() as tmp:
        process, base = _start(Path(tmp), args.queue_size)
        assert process.pid is not None
        try:
            for model, body in bodies.items():  # load both models before measuring
                asyncio.run(_burst(base, model, body.encode(), 1))
            time.sleep(1.0)
            before = _rss_mb(process.pid)
            sampler = Sampler(process.pid)
            results = {model: asyncio.run(_burst(base, model, body.encode(), args.requests))
                       for model, body in bodies.items()}
            peak = sampler.stop()
            time.sleep(3.0)
            after = _rss_mb(process.pid)
        finally:
            process.terminate()
            process.join(30)
    result = {"cpu": cpu_name(), "cores": os.cpu_count(), "queue_size": args.queue_size,
              "models": results, "server_rss_mb": {"before": round(before, 1),
                                                   "peak": round(peak, 1),
                                                   "after": round(after, 1)}}
    write_results(args.out, result)
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
