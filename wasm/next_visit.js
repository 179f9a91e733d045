// The page's half of the next visit's Python snapshot (snapshot_background.js says why and how
// a second worker makes it): pyrite.js tells it about its worker's load and answers; it starts
// the second worker (worker.js again, asked {type: "snapshot"}), ends it when it is done, and
// `done` says how it went (pyrite.nextVisitReady()). It imports nothing, so a page's import of
// pyrite.js loads no more than this file for it.
//
// The second worker starts once the page has left its own worker idle for IDLE_MS: no request
// in flight, none answered meanwhile. Booting Python for the snapshot takes seconds of CPU
// (2.6 s in headless Chromium on a busy 2-core machine), and the page's predictions share the
// CPU with it: where WebGPU is software (SwiftShader), their GPU work too. Started on the first
// answer, it ran under the MNIST page's following predictions: steady 8-9 ms -> 14-19 ms in
// alternating runs (benchmarks/README.md, page_predict.py); a page that keeps asking keeps it
// waiting.

/** ms the page's worker must stay idle (after the load's answer or its last) before starting. */
export const IDLE_MS = 1000;

/**
 * The page's side: `spawn()` starts a worker running worker.js; `busy()` says whether the
 * page's worker has a request in flight. `done` resolves to {stored, reason, ms, bytes,
 * startedAt} once the snapshot is stored, or was not needed or not made (`startedAt`: when the
 * second worker was started, on the page's clock, performance.now(); absent if it was not).
 */
export class NextVisitSnapshot {
  constructor(spawn, busy = () => false) {
    this.spawn = spawn;
    this.busy = busy;
    this.wanted = null;
    this.timer = null;
    this.startedAt = undefined;
    this.state = "waiting"; // -> "scheduled" -> "running" -> "done"
    this.done = new Promise((resolve) => { this.finish = resolve; });
  }

  /** After the page's load answered: `wanted` ({base, manifest, key}) or null (restored). */
  expect(wanted) {
    if (this.state !== "waiting") return;
    if (!wanted) {
      this.end({ stored: false, reason: "not needed: Python was restored from a snapshot" });
      return;
    }
    this.wanted = wanted;
    this.state = "scheduled";
    this.later();
  }

  /** The page's worker answered a request after its load: the idle time starts again. */
  answered() {
    if (this.state === "scheduled") this.later();
  }

  /** Start IDLE_MS from now, unless the page's worker is busy then (its answer reschedules). */
  later() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.busy()) this.start();
    }, IDLE_MS);
  }

  end(result) {
    clearTimeout(this.timer);
    this.state = "done";
    this.finish(this.startedAt === undefined ? result : { ...result, startedAt: this.startedAt });
  }

  start() {
    if (this.state !== "scheduled") return;
    clearTimeout(this.timer);
    this.state = "running";
    this.startedAt = performance.now();
    let worker;
    try {
      worker = this.spawn();
    } catch (err) {
      this.end({ stored: false, reason: `no second worker: ${err.message}` });
      return;
    }
    const stop = (result) => {
      if (this.state === "done") return; // a second message after the first ended it
      worker.terminate(); // its Pyodide's memory goes with it
      if (!result.stored) console.warn(`pyrite: no Python snapshot for the next visit (${result.reason}): it boots Python again`);
      this.end(result);
    };
    worker.onmessage = (event) => {
      const msg = event.data;
      if (msg.type === "fatal") stop({ stored: false, reason: msg.message });
      if (msg.id !== 1) return; // its progress and output are not the page's business
      stop(msg.ok ? msg.value : { stored: false, reason: msg.error.message });
    };
    worker.onerror = (event) => stop({ stored: false, reason: event.message || "the worker failed" });
    worker.postMessage({ id: 1, type: "snapshot", config: this.wanted });
  }
}

