// pyrite.js: pyrite in a web page. An ES module, no bundler needed:
//
//   import * as pyrite from "/pyrite.js";
//   const got = await pyrite.load({ device: "webgpu", models: ["mnist"], onProgress: console.log });
//   const out = await pyrite.predict("mnist", { pixels });   // {label, probabilities, ms, backend}
//   const value = await pyrite.run("import pyrite\npyrite.tensor([1.0, 2.0]).sum().into_scalar()");
//
// Python runs in one Web Worker (worker.js) that owns Pyodide, so the page never blocks. Every
// URL (Pyodide, wheels, records) is read from manifest.json, relative to this file, so the same
// folder works wherever it is served. Python exceptions reject the promise with an Error whose
// message is the Python message (`error.pythonType`, `error.traceback` hold the rest).
// `events` reports "progress" while loading, "stdout"/"stderr" for what Python prints, "train"
// for a training run's events (pyrite/train/events.py) and "call" after each call
// ({op, ms, backend}); `lastCall` holds the latest of those. Importing this
// module also defines the <pyrite-script> and <pyrite-mnist> elements (elements.js). Every
// embed of a page shares one worker, one Pyodide and one device. Types: pyrite.d.ts.

import { defineElements } from "./elements.js";

const BASE = new URL(".", import.meta.url);
export const events = new EventTarget();
export let lastCall = null;

let worker = null;
let loading = null;
let loaded = null;
let nextId = 1;
const pending = new Map();

function emit(type, detail) {
  events.dispatchEvent(new CustomEvent(type, { detail }));
}

function spawnWorker() {
  // A page may load pyrite.js from another origin, and browsers refuse a cross-origin
  // `new Worker(url)`: the worker then starts from a same-origin blob that imports the
  // bundle's worker.js (the host page's CSP needs `worker-src blob:` for that).
  const url = new URL("worker.js", BASE);
  if (url.origin === location.origin) return new Worker(url, { type: "module" });
  const source = `import ${JSON.stringify(url.href)};`;
  return new Worker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })),
    { type: "module" });
}

// The next visit's Python snapshot, made by a second worker after a load that booted Python,
// once the page's worker has been idle a while (next_visit.js, imported once the load has
// answered: nothing more before the worker starts).
let nextVisit = null;
function nextVisitSnapshot() {
  nextVisit ??= import("./next_visit.js").then(
    (m) => new m.NextVisitSnapshot(spawnWorker, () => pending.size > 0),
    (err) => ({ expect() {}, answered() {},
      done: Promise.resolve({ stored: false, reason: `next_visit.js did not load: ${err.message}` }) }));
  return nextVisit;
}

function startWorker() {
  const w = spawnWorker();
  w.onmessage = (event) => {
    const msg = event.data;
    if (msg.type === "fatal") {
      failAll(new Error(msg.message));
      return;
    }
    if (msg.id === undefined) {
      emit(msg.type, msg);
      return;
    }
    const call = pending.get(msg.id);
    if (!call) return;
    pending.delete(msg.id);
    const roundTrip = performance.now() - call.start;
    nextVisit?.then((n) => n.answered());
    if (msg.ok) {
      call.resolve({ value: msg.value, workerMs: msg.ms, roundTripMs: roundTrip });
    } else {
      const err = new Error(msg.error.message);
      err.name = msg.error.type === "Error" ? "Error" : "PythonError";
      err.pythonType = msg.error.type;
      err.traceback = msg.error.traceback || null;
      call.reject(err);
    }
  };
  w.onerror = (event) => {
    failAll(new Error(`pyrite worker failed: ${event.message || "could not start (is worker.js served, and does a Content-Security-Policy allow it: worker-src blob: and the bundle's origin?)"}`));
  };
  return w;
}

function failAll(err) {
  console.error(err.message);
  for (const call of pending.values()) call.reject(err);
  pending.clear();
}

function request(type, payload = {}) {
  if (!worker) worker = startWorker();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, start: performance.now() });
    worker.postMessage({ id, type, ...payload });
  });
}

function record(op, answer, backend) {
  lastCall = { op, ms: answer.roundTripMs, workerMs: answer.workerMs, backend };
  emit("call", lastCall);
}

/**
 * Start Python in the worker and get the device ready.
 * @param {object} options
 * @param {"auto"|"webgpu"|"numpy"} [options.device="auto"]  "auto": WebGPU, else numpy if the
 *   page can load it; the answer says which ran and why the others did not.
 * @param {string[]} [options.models=[]]  demo models to load (names from manifest.json).
 * @param {string} [options.pyodidePackages]  URL of a full Pyodide distribution's packages
 *   (where numpy can be loaded from; the npm package has none).
 * @param {"on"|"cached"|"off"} [options.autotune="cached"]  kernel variants: "on" times them on
 *   first use and keeps the fastest in this page's browser storage (IndexedDB); "cached" uses
 *   what a former visit kept and times nothing; "off" uses the built-in heuristics.
 * @param {(event: object) => void} [options.onProgress]  called at each loading stage.
 * @returns {Promise<{device, adapter, models, timings, unavailable}>}
 */
export async function load(options = {}) {
  if (loaded) return loaded;
  if (loading) return loading;
  const { device = "auto", models = [], pyodidePackages = null, autotune = "cached",
    onProgress = null } = options;
  const listener = onProgress ? (e) => onProgress(e.detail) : null;
  if (listener) events.addEventListener("progress", listener);
  loading = request("load", { config: { base: BASE.href, device, models, pyodidePackages, autotune } })
    .then((answer) => {
      const { nextVisit: wanted, ...value } = answer.value;
      nextVisitSnapshot().then((n) => n.expect(wanted));
      answer.value = value;
      loaded = value;
      record("load", answer, loaded.device);
      return loaded;
    })
    .finally(() => {
      loading = null;
      if (listener) events.removeEventListener("progress", listener);
    });
  return loading;
}

function ready() {
  if (!loaded) throw new Error("pyrite is not loaded: await pyrite.load() first");
  return loaded;
}

/**
 * Resolves once what this visit leaves for the next one is done: after a load that booted
 * Python (a first visit), a second worker makes the next visit's Python snapshot once the
 * page has left its worker idle for a second (no request in flight or answered), and this
 * resolves to `{stored, reason, ms, bytes, startedAt}` when it is stored (or was not made: `reason`).
 * After a load that restored a snapshot it resolves at once. A page closed earlier leaves no
 * snapshot, and the next visit boots Python again.
 */
export async function nextVisitReady() {
  if (!loaded && !loading) return { stored: false, reason: "pyrite is not loaded: call pyrite.load() first" };
  try {
    await (loaded || loading);
  } catch (err) {
    return { stored: false, reason: `pyrite did not load: ${err.message}` };
  }
  return (await nextVisitSnapshot()).done;
}

/** Run Python code in the worker; resolves to the value of its last expression (as JS). */
export async function run(code) {
  const answer = await request("run", { code });
  record("run", answer, loaded ? loaded.device : null);
  return answer.value;
}

/**
 * Run Python as a <pyrite-script> does: resolves to `{outputs, error}`, the printed text and
 * display()ed objects in order (see pyrite/wasm/display.py) and the Python error, if any.
 */
export async function runScript(code) {
  const answer = await request("run", { code, capture: true });
  record("runScript", answer, loaded ? loaded.device : null);
  return answer.value;
}

/** Load one more of the bundle's models after `load()` (a no-op when it is loaded). */
export async function loadModel(name) {
  ready();
  return (await request("loadModel", { model: name })).value;
}

/**
 * Call a Python function by its dotted name with JSON-able arguments, e.g.
 * `await pyrite.call("pyrite.wasm.remote.call", request)`; resolves to its result (as JS).
 */
export async function call(name, ...args) {
  const answer = await request("call", { name, args });
  record("call", answer, loaded ? loaded.device : null);
  return answer.value;
}

/**
 * Predict with a loaded demo model: the same Python code as `pyrite serve`'s /api/predict.
 * Resolves to the model's output plus `backend`, `ms` (in Python) and `roundTripMs`.
 */
export async function predict(model, inputs) {
  ready();
  const answer = await request("predict", { model, inputs });
  const out = answer.value;
  out.roundTripMs = answer.roundTripMs;
  record("predict", answer, out.backend);
  return out;
}

/**
 * Raise a flag that running Python polls, without waiting for it to finish: `signal("stop")`
 * ends a training run after its current step (pyrite/wasm/training.py).
 */
export async function signal(name) {
  return (await request("signal", { name })).value;
}

/** The device in use: adapter, features and limits (the page's `pyrite info backends`). */
export async function info() {
  ready();
  return (await request("info")).value;
}

/** The manifest of the bundle this module was loaded from (versions, wheels, models). */
export async function manifest() {
  const response = await fetch(new URL("manifest.json", BASE), { cache: "no-cache" });
  if (!response.ok) throw new Error(`pyrite: manifest.json answered ${response.status}`);
  return response.json();
}

/**
 * Forget the cached bundle files (runtime, wheels, records, kernels, pages) and the kept Python
 * snapshot: the next visit downloads them again and boots Python. Resolves to whether there
 * was a cache to delete.
 */
export async function clearCache() {
  const snapshots = forgetSnapshots(); // the worker's Python snapshots (snapshot_store.js)
  if (!self.caches) return (await snapshots, false);
  const a = await caches.delete("pyrite");
  const b = await caches.delete("pyrite-pages");
  await snapshots;
  return a || b;
}

function forgetSnapshots() {
  return new Promise((resolve) => {
    try {
      const request = indexedDB.deleteDatabase("pyrite-snapshots");
      request.onsuccess = request.onerror = request.onblocked = () => resolve();
    } catch {
      resolve(); // no IndexedDB here: nothing kept
    }
  });
}

/**
 * Make this page work offline on later visits: registers the bundle's service worker
 * (pyrite-sw.js), which keeps the page and the bundle's entry files; the worker's own cache
 * keeps the rest. The page must be same-origin with the bundle and inside its folder (a
 * service worker's scope is its folder), or the server must send `Service-Worker-Allowed`.
 * Resolves to the registration once it is active.
 */
export async function enableOffline(options = {}) {
  if (!("serviceWorker" in navigator)) throw new Error("pyrite: this browser has no service workers (or the page is not in a secure context): offline visits are not available");
  const url = new URL("pyrite-sw.js", BASE);
  if (url.origin !== location.origin) throw new Error(`pyrite: offline visits need the bundle on this page's origin (it is on ${url.origin}); repeat visits still use the cache`);
  const registration = await navigator.serviceWorker.register(url, { scope: options.scope || BASE.pathname });
  await navigator.serviceWorker.ready;
  return registration;
}

/** Whether this browser exposes WebGPU at all (before loading anything). */
export async function hasWebGPU() {
  if (!("gpu" in navigator)) return { ok: false, reason: "this browser has no navigator.gpu (WebGPU)" };
  const adapter = await navigator.gpu.requestAdapter();
  return adapter ? { ok: true } : { ok: false, reason: "WebGPU is present but gave no adapter (GPU blocklisted or disabled)" };
}

defineElements({ call, load, loadModel, predict, run, runScript });
