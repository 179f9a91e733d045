"""wasm/next_visit.js under Node: when the page starts the second worker that makes the next
visit's Python snapshot (after a load that booted Python, once the page's worker has been idle
for IDLE_MS: no request in flight, none answered meanwhile; started on the first answer, it ran
under the MNIST page's following predictions and doubled them), what it sends it, that it ends
it, and what `done` says in each case. The worker is a fake that records what it was sent and
answers as told; `inFlight` is the page's requests in flight."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "wasm" / "next_visit.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")

# `scenario(n, log)` drives a NextVisitSnapshot `n` whose spawn() makes a fake worker and whose
# page is busy while `inFlight` > 0; `at(ms)` waits until `ms` after t0 (the scenario's start);
# the printed JSON is {log, done, spawned, terminated, sent}
HARNESS = """
const m = await import(%(module)s);
const log = [];
const workers = [];
let spawnedAt = null;
function spawn() {
  const w = { sent: [], terminated: false, onmessage: null, onerror: null,
    postMessage(msg) { this.sent.push(msg); log.push("sent " + msg.type); },
    terminate() { this.terminated = true; log.push("terminated"); } };
  workers.push(w);
  spawnedAt = performance.now();
  log.push("spawned");
  return w;
}
let inFlight = 0;
const n = new m.NextVisitSnapshot(spawn, () => inFlight > 0);
const t0 = Date.now();
const at = (ms) => new Promise((r) => setTimeout(r, Math.max(0, t0 + ms - Date.now())));
const done = await (async () => { %(scenario)s })();
console.log(JSON.stringify({ log, done, idle: m.IDLE_MS, spawned: workers.length, spawnedAt,
  terminated: workers.map((w) => w.terminated), sent: workers.map((w) => w.sent) }));
"""
WANTED = "{ base: 'http://x/b/', manifest: { wheels: [] }, key: 'http://x/b/k' }"


def _run(scenario: str) -> Any:
    code = HARNESS % {"module": json.dumps(SCRIPT.as_uri()), "scenario": scenario}
    done = subprocess.run(["node", "--input-type=module", "-e", code], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_it_starts_once_the_page_is_idle_after_its_answers_and_ends_the_worker() -> None:
    got = _run(f"""
      n.answered();  // the load's own answer: before expect(), nothing starts
      n.expect({WANTED});
      log.push("expected");
      await at(600);
      n.answered();  // a prediction's answer: the idle time starts again
      await at(1300);  // IDLE_MS after the load, not after that answer
      log.push("idle " + workers.length);
      while (workers.length === 0) await new Promise((r) => setTimeout(r, 10));
      log.push(Date.now() - t0 >= 600 + m.IDLE_MS - 20 ? "late enough" : "too early");
      n.answered();  // later answers start nothing more
      workers[0].onmessage({{ data: {{ type: "progress" }} }});  // not the answer: ignored
      workers[0].onmessage({{ data: {{ id: 1, ok: true,
        value: {{ stored: true, reason: null, ms: 5, bytes: 7 }} }} }});
      return n.done;""")
    assert got["idle"] == 1000
    assert got["log"] == ["expected", "idle 0", "spawned", "sent snapshot", "late enough",
                          "terminated"]
    assert got["sent"] == [[{"id": 1, "type": "snapshot", "config": {
        "base": "http://x/b/", "manifest": {"wheels": []}, "key": "http://x/b/k"}}]]
    started = got["done"].pop("startedAt")  # the page's clock when it was started
    assert got["done"] == {"stored": True, "reason": None, "ms": 5, "bytes": 7}
    assert started >= got["spawnedAt"] - 1 and got["terminated"] == [True]


def test_a_request_in_flight_holds_it_back_until_idle_after_its_answer() -> None:
    got = _run(f"""
      n.expect({WANTED});
      inFlight = 1;  // a long request (a training run, a SqueezeNet prediction)
      await at(m.IDLE_MS + 300);
      log.push("busy " + workers.length);
      inFlight = 0;
      const answered = Date.now() - t0;
      n.answered();
      while (workers.length === 0) await new Promise((r) => setTimeout(r, 10));
      log.push(Date.now() - t0 >= answered + m.IDLE_MS - 20 ? "late enough" : "too early");
      workers[0].onmessage({{ data: {{ id: 1, ok: true, value: {{ stored: true }} }} }});
      return n.done;""")
    assert got["log"] == ["busy 0", "spawned", "sent snapshot", "late enough", "terminated"]
    assert set(got["done"]) == {"stored", "startedAt"} and got["done"]["stored"] is True


def test_without_an_answer_it_starts_after_the_idle_time() -> None:
    got = _run(f"""
      n.expect({WANTED});
      while (workers.length === 0) await new Promise((r) => setTimeout(r, 10));
      log.push(Date.now() - t0 >= m.IDLE_MS - 20 ? "late enough" : "too early");
      workers[0].onmessage({{ data: {{ id: 1, ok: false, error: {{ message: "quota" }} }} }});
      return n.done;""")
    assert got["log"] == ["spawned", "sent snapshot", "late enough", "terminated"]
    assert got["done"].pop("startedAt") > 0
    assert got["done"] == {"stored": False, "reason": "quota"}


def test_nothing_is_made_after_a_restore_and_a_failing_worker_is_reported() -> None:
    got = _run("""
      n.expect(null);  // Python was restored: no second worker
      n.answered();
      return n.done;""")
    assert got["spawned"] == 0 and got["done"]["stored"] is False
    assert "startedAt" not in got["done"]  # never started
    assert "not needed" in got["done"]["reason"]
    got = _run(f"""
      n.expect({WANTED});
      while (workers.length === 0) await new Promise((r) => setTimeout(r, 10));
      workers[0].onmessage({{ data: {{ type: "fatal", message: "no wasm" }} }});
      return n.done;""")
    got["done"].pop("startedAt")
    assert got["done"] == {"stored": False, "reason": "no wasm"} and got["terminated"] == [True]
    got = _run(f"""
      const failing = new m.NextVisitSnapshot(() => {{ throw new Error("CSP"); }});
      failing.expect({WANTED});
      return failing.done;""")
    got["done"].pop("startedAt")
    assert got["done"] == {"stored": False, "reason": "no second worker: CSP"}
