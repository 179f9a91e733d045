// The embed peer of benchmarks/browser.py: pyrite's exported bundle (`pyrite export-web`) served
// by a plain static server at a sub-path (?bundle=/tools/pyrite/, the default, or the export
// made with --snapshot at /tools/pyrite-snapshot/), used the way a host page would, timed by
// bench.js like every peer.
import { param, publish } from "./bench.js";

const bundle = param("bundle", "/tools/pyrite/");
const pyrite = await import(`${bundle}pyrite.js`);
const importedMs = performance.now(); // ms since navigation: pyrite.js and its imports ran

let first = null; // the first prediction's ms, from the call to the probabilities in JS
const bench = publish(
  { framework: "pyrite", backend: "webgpu", bundle },
  async () => {
    const loaded = await pyrite.load({ device: "webgpu", models: ["mnist"] });
    const loadedMs = performance.now();
    // the worker's phases, the model's build + record load as Python timed it, and where the
    // page's time went: until pyrite.js ran, until the worker began loading (the load's
    // answer minus the worker's total), and the first prediction
    Object.assign(window.bench.info, { version: loaded.pyrite,
      load: { ...loaded.timings, modelPythonMs: loaded.models.mnist.ms,
        model: loaded.models.mnist, importedMs,
        workerLoadStartMs: loadedMs - loaded.timings.totalMs, loadedMs } });
  },
  async (pixels) => {
    const t0 = performance.now();
    const got = await pyrite.predict("mnist", { pixels });
    if (first === null) {
      first = performance.now() - t0;
      window.bench.info.load.firstPredictMs = first;
      // Python's counters of it: the wait for pipelines (pipeline_ms), dispatches, ...
      const { probabilities, ...stats } = got;
      window.bench.info.load.firstPredict = stats;
    }
    return got.probabilities;
  },
);
// What a visit leaves for the next one (after a first visit, the Python snapshot that a second
// worker makes once the first prediction is answered): browser.py waits for it before closing
// the page, and records when it was done (ms since navigation).
bench.settled = bench.ready.then(async () => {
  const got = await pyrite.nextVisitReady();
  bench.info.nextVisit = { ...got, doneMs: performance.now() };
  return got;
});
