// pyrite's Web Worker: owns Pyodide and runs all of the page's Python, so the page's main
// thread never blocks. pyrite.js starts it and talks to it with messages:
//   {id, type: "load", config}  boot Pyodide, install the wheels, start the device, load models
//   {id, type: "run", code}     run Python (runPythonAsync: the sync tensor API works via JSPI);
//                               with capture: true, answer {outputs} (see pyrite/wasm/display.py)
//   {id, type: "predict", model, inputs}, {id, type: "info"}
//   {id, type: "call", name: "module.function", args}  call a Python function (JSPI enabled)
//   {id, type: "loadModel", model}  load one more model of the bundle
//   {id, type: "signal", name}  set self.pyriteSignals[name] at once, even while Python runs
//                               (a training run polls `stop`: see pyrite/wasm/training.py)
// and it answers {id, ok: true, value, ms} or {id, ok: false, error: {type, message, traceback}}.
// Unprompted it posts {type: "progress", stage, detail} while loading, {type: "stdout"|"stderr",
// text} for what Python prints, and {type: "train", event} for a training run's events. Every URL comes from the manifest, relative to the bundle root.

import { cacheFetchesOf, cachedFetch, cachedManifest, fetchManifest, prune, runtimeOf } from "./cache.js";
import { requestAdapter, sameGpu, startGpu } from "./gpu_start.js";
import { installBundle, timedBoot } from "./python_setup.js";
import { restoreAhead, take } from "./restore.js";
import { fixTrampoline, shippedSnapshot, snapshotFits } from "./snapshot.js";
import { makeNextVisitSnapshot } from "./snapshot_background.js";
import { pruneSnapshots, storeSnapshot } from "./snapshot_store.js";

let pyodide = null;
let page = null; // the Python module pyrite.wasm.page
let manifest = null;
let base = null;
// what the page needs for the next visit's snapshot ({base, manifest, key}) after a load that
// booted Python: made by a second worker (snapshot_background.js), null after a restore
let nextVisit = null;

const post = (msg) => self.postMessage(msg);

// Requests that reach Python while it is busy: a "signal" message sets a flag here at once
// (Python waits on the GPU at every readback, and this worker's messages run meanwhile);
// Python reads and clears it.
self.pyriteSignals = {};

// Browser storage for Python's files: a folder of Pyodide's file system kept in IndexedDB
// (Emscripten's IDBFS). Python mounts it (which loads what a former visit stored) and
// flushes it after writing (pyrite/wasm/training.py: checkpoints survive a reload).
self.pyriteStorage = {
  mounted: new Set(),
  syncfs(populate) {
    return new Promise((resolve, reject) => pyodide.FS.syncfs(populate,
      (err) => (err ? reject(new Error(`browser storage: ${err.message || err}`)) : resolve())));
  },
  async mount(path) {
    if (this.mounted.has(path)) return;
    pyodide.FS.mkdirTree(path);
    pyodide.FS.mount(pyodide.FS.filesystems.IDBFS, {}, path);
    this.mounted.add(path);
    await this.syncfs(true);
  },
  sync() { return this.syncfs(false); },
  // a flush nobody waits for (the autotune store's, pyrite/wasm/page_autotune.py): a failure
  // only means the data lasts this visit
  syncSoon() {
    this.sync().catch((err) => console.warn(`pyrite: could not keep data in browser storage: ${err.message}`));
  },
};

// The page's autotune store lives in a folder kept in IndexedDB: mounted (loading what a
// former visit stored) before Python starts the device.
async function mountTuneStore() {
  try {
    await self.pyriteStorage.mount(pyodide.runPython("from pyrite.wasm.page_autotune import FOLDER; FOLDER"));
  } catch (err) {
    console.warn(`pyrite: no browser storage for autotune choices (${err.message}): they last this visit only`);
  }
}

// Failures outside any request (Pyodide's WebAssembly refused by a Content-Security-Policy
// without 'wasm-unsafe-eval', say) would leave the page waiting: they end every request.
function fatal(reason) {
  const message = String(reason && reason.message ? reason.message : reason);
  const hint = /WebAssembly|wasm/i.test(message)
    ? " (a Content-Security-Policy needs 'wasm-unsafe-eval' in script-src for pyrite)" : "";
  post({ type: "fatal", message: `pyrite's worker failed: ${message}${hint}` });
}
self.addEventListener("unhandledrejection", (event) => fatal(event.reason));
self.addEventListener("error", (event) => fatal(event.error || event.message));
const progress = (stage, detail = {}) => post({ type: "progress", stage, ...detail });

async function fetchChecked(url, sha256, label, fetcher = cachedFetch) {
  const response = await fetcher(url, sha256);
  if (!response.ok) throw new Error(`${label}: ${url} answered ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (sha256) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    if (hex !== sha256) throw new Error(`${label}: ${url} does not match its sha256 in the manifest (a stale or corrupt copy; reload the page)`);
  }
  return bytes;
}

function modelEntry(name) {
  const entry = manifest.models[name];
  const missing = manifest.unavailable?.[name];
  if (!entry && missing) throw new Error(`this bundle has no ${name} model: ${missing}`);
  if (!entry) throw new Error(`unknown model ${JSON.stringify(name)}; this bundle has: ${Object.keys(manifest.models).join(", ") || "no models"} (export it with pyrite export-web --model NAME)`);
  return entry;
}

// A model's record and the other files it loads (its labels, say), fetched side by side:
// {record, files: {name: bytes}}.
async function fetchRecord(name) {
  const m = modelEntry(name);
  const extra = Object.entries(m.files || {});
  const [record, ...files] = await Promise.all([
    fetchChecked(new URL(m.path, base), m.sha256, `model ${name}`),
    ...extra.map(([key, f]) => fetchChecked(new URL(f.path, base), f.sha256, `${key} of ${name}`)),
  ]);
  return { record, files: Object.fromEntries(extra.map(([key], i) => [key, files[i]])) };
}

const loadedModels = {};

async function loadModel(name, fetched = null) {
  if (!loadedModels[name]) {
    loadedModels[name] = (async () => {
      progress("model", { model: name });
      const { record, files } = fetched || await fetchRecord(name);
      const pyFiles = pyodide.toPy(files, { depth: 1 });
      try {
        return toJs(await page.load_model.callPromising(name, record, pyFiles));
      } finally {
        pyFiles.destroy();
      }
    })();
    loadedModels[name].catch(() => { delete loadedModels[name]; });
  }
  return loadedModels[name];
}

// A second load (after a failed one, say WebGPU missing and then "numpy") reuses Python as it
// is and only starts the device and the models.
async function restart(config) {
  const t0 = performance.now();
  const started = toJs(await page.start.callPromising(config.device, undefined, config.autotune ?? "cached"));
  const models = {};
  for (const name of config.models || []) models[name] = await loadModel(name);
  return { ...started, models, timings: { totalMs: performance.now() - t0 },
    pyodide: manifest.pyodide.version, nextVisit };
}

// Pyodide's WebAssembly starts with 30 MiB of memory and restores a snapshot into it without
// growing it: a larger snapshot is refused ("offset is out of bounds"; pyrite's imports make
// one of about 38 MB). So Pyodide's module is made here, its memory grown to the snapshot's
// size before the restore (Pyodide awaits the snapshot's bytes before making the module).
// `marks` gets when the snapshot's bytes arrived and when the module was made (ms since t0).
// `script`: the import of Pyodide's pyodide.asm.mjs (restore.js).
function grownFor(script, bytes, marks, t0) {
  Promise.resolve(bytes).then(() => { marks.snapshotReadMs = performance.now() - t0; }, () => {});
  return async (settings) => {
    const module = await (await script).default(settings);
    const size = (await bytes).length;
    if (module.HEAP8.length < size) module.growMemory(size);
    marks.moduleMs = performance.now() - t0;
    return module;
  };
}

// The GPU for manifest `m`'s features and limits, compiling the kernels of `models`
// (gpu_start.js); null where anything fails (Python then says why, starting the GPU itself).
async function gpuFor(adapter, m, models) {
  try {
    const kernels = models.map((name) => {
      const k = m.models[name].kernels;
      const bytes = fetchChecked(new URL(k.path, base), k.sha256, `kernels of ${name}`);
      bytes.catch(() => {}); // seen by startGpu, which awaits them after the device
      return bytes;
    });
    return await startGpu(adapter, m.gpu, kernels);
  } catch {
    return null;
  }
}

// Pyodide only logs a refused WebAssembly compile and then never finishes: find out first.
async function checkWasmAllowed() {
  try {
    await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); // an empty module
  } catch (err) {
    throw new Error(`this page may not run WebAssembly (${err.message}): a Content-Security-Policy must allow it with 'wasm-unsafe-eval' in script-src`);
  }
}

async function load(config) {
  if (page) return restart(config);
  const t0 = performance.now();
  // the adapter first: the GPU's start-up overlaps everything below (gpu_start.js)
  const adapter = config.device === "numpy" ? Promise.resolve(null) : requestAdapter();
  base = new URL(config.base);
  const timings = {};
  const output = { stdout: (text) => post({ type: "stdout", text }), stderr: (text) => post({ type: "stderr", text }) };
  if (config.pyodidePackages) output.packageBaseUrl = new URL(config.pyodidePackages, base).href;
  const wanted = config.models || [];
  // A repeat visit's GPU starts from the manifest the last visit kept, as its restore does: the
  // device, and the compiles of the models' kernels in the GPU process (which the model's load
  // and first prediction wait for: on SwiftShader they, not the worker, ended a repeat visit),
  // begin before the manifest's round trip. Used where the manifest that arrives asks for the
  // same GPU (sameGpu); else another adapter and device are requested for it.
  const kept = config.device === "numpy" ? Promise.resolve(null)
    : cachedManifest(new URL("manifest.json", base).href).catch(() => null);
  const gpuAhead = kept.then((m) => (m?.gpu ? gpuFor(adapter, m, wanted) : null));
  // a repeat visit's snapshot read, Pyodide's imports and its restore start now, not after the
  // manifest (restore.js: used only where they fit the manifest that arrives)
  const ahead = restoreAhead(base, output, timings, t0);
  // the manifest is asked for before WebAssembly's check (an asynchronous compile), not after
  const asked = fetchManifest(new URL("manifest.json", base).href);
  asked.catch(() => {}); // awaited below, unless WebAssembly is refused first
  await checkWasmAllowed();
  progress("manifest");
  manifest = await asked;
  timings.manifestMs = performance.now() - t0;
  for (const name of wanted) modelEntry(name);
  // the wheels and records download while Pyodide boots
  const wheels = manifest.wheels.map((w) => fetchChecked(new URL(w.path, base), w.sha256, `wheel ${w.name}`));
  const records = wanted.map(fetchRecord);
  const keptManifest = await kept;
  timings.gpuAhead = Boolean(keptManifest?.gpu) && sameGpu(keptManifest, manifest, wanted);
  let gpu;
  if (config.device === "numpy") gpu = Promise.resolve(null);
  else if (timings.gpuAhead) {
    gpu = gpuAhead.then((got) => {
      if (got) return got;
      timings.gpuAhead = false; // it failed: once more, with an adapter of its own
      return gpuFor(requestAdapter(), manifest, wanted);
    });
  } else if (keptManifest?.gpu) {
    gpuAhead.then((got) => got?.device.destroy()).catch(() => {}); // its adapter is used up
    gpu = gpuFor(requestAdapter(), manifest, wanted);
  } else gpu = gpuFor(adapter, manifest, wanted); // a first visit
  // A repeat visit starts Python from a memory snapshot of the first visit's Python (keyed by
  // Pyodide's version and the wheels' hashes); a first visit from the bundle's own snapshot,
  // when it ships one (export-web --snapshot), downloaded while the runtime is. Either holds
  // Python with the wheels installed and pyrite.wasm.preload imported: Pyodide's boot and the
  // imports (about 3.4 s here) become a restore (about 0.7 s, compiling the wasm included).
  // One that cannot be restored is only warned about, and Python boots.
  // Which one is known at once; its bytes (31 MB read from the cache, or the bundle's
  // download) are handed to Pyodide as a promise, which it awaits only after fetching its
  // WebAssembly and importing its JavaScript: the two proceed side by side. On a repeat
  // visit the read, the imports and the WebAssembly's compile began before the manifest
  // arrived, from the one the last visit kept (restore.js; used only where they fit this one).
  const taken = await take(ahead, manifest, base);
  timings.compiledAhead = taken.compiledAhead;
  timings.restoredAhead = Boolean(taken.restored);
  const snapshot = taken.key;
  const unusable = new Error("no usable snapshot"); // shippedSnapshot has said why
  const restorable = taken.snapshot.then((cached) => {
    if (cached) return { bytes: cached.bytes, from: "cache", early: taken.restored };
    if (!manifest.snapshot) return null;
    // from the network, not the cache: the restored Python is kept as this origin's own
    const bytes = shippedSnapshot(manifest, base, (url, sha, label) => fetchChecked(url, sha, label, (u) => fetch(u)));
    // one made for other files is refused at once (with its warning), before Pyodide starts
    if (!snapshotFits(manifest.snapshot.for, manifest)) return null;
    const checked = bytes.then((got) => got || Promise.reject(unusable));
    checked.catch(() => {}); // handled below, through Pyodide: never an unhandled rejection
    return { bytes: checked, from: "bundle" };
  });
  const { indexURL } = taken.pyodide;
  // Pyodide fetches its runtime files itself: through the cache, keyed by their hashes
  const runtime = runtimeOf(manifest, base);
  cacheFetchesOf(runtime);
  const { loadPyodide } = await taken.pyodide.loader;
  const options = { indexURL, ...output };
  const saved = await restorable;
  if (saved) {
    try {
      pyodide = await (saved.early || loadPyodide({ ...options, _loadSnapshot: saved.bytes,
        createPyodideModule: grownFor(taken.pyodide.script, saved.bytes, timings, t0) }));
      if (saved.from === "bundle") {
        const bytes = await saved.bytes;
        fixTrampoline(pyodide, manifest.snapshot.trampoline, bytes);
        storeSnapshot(snapshot, bytes); // the next visit's, as a booted visit keeps one
      }
    } catch (err) {
      const which = saved.from === "cache" ? "cached" : "bundle's";
      if (err !== unusable) console.warn(`pyrite: the ${which} Python snapshot was refused, booting instead: ${err}`);
      pyodide = null;
    }
  }
  timings.snapshot = Boolean(pyodide);
  timings.snapshotFrom = pyodide ? saved.from : null;
  if (!pyodide) pyodide = await loadPyodide({ ...options, createPyodideModule: timedBoot(indexURL, timings, t0) });
  timings.pyodideMs = performance.now() - t0;

  // a restored Python has imported pyrite.wasm.page_autotune already: its store's folder is
  // mounted (read from IndexedDB) while the wheels are written; a booted one needs them first
  const tuneStore = timings.snapshot ? mountTuneStore() : null;
  progress("wheels", { wheels: manifest.wheels.map((w) => w.name) });
  const t1 = performance.now();
  // after a snapshot too: it holds Python's memory (the imported modules), not the files
  timings.wheelFiles = await installBundle(pyodide, manifest, base, wheels);
  timings.wheelsMs = performance.now() - t1;
  // a booted Python is not snapshotted here (it would import all of pyrite first): the page
  // has a second worker make the next visit's snapshot after this load (snapshot_background.js)
  nextVisit = timings.snapshot ? null : { base: base.href, manifest, key: snapshot };
  if (config.device === "numpy" || (config.device === "auto" && config.pyodidePackages)) {
    try { await pyodide.loadPackage("numpy", { messageCallback: () => {} }); } catch (e) { progress("numpy-unavailable", { message: String(e) }); }
  }
  timings.installMs = performance.now() - t1;
  const tImport = performance.now();
  page = pyodide.pyimport("pyrite.wasm.page");
  timings.importMs = performance.now() - tImport;

  progress("device", { device: config.device });
  const t2 = performance.now();
  await (tuneStore || mountTuneStore());
  const started = toJs(await page.start.callPromising(config.device, (await gpu) ?? undefined,
    config.autotune ?? "cached"));
  timings.deviceMs = performance.now() - t2;

  const t3 = performance.now();
  const models = {};
  const fetched = await Promise.all(records); // downloaded (or read from the cache) and checked
  timings.recordsWaitMs = performance.now() - t3;
  for (const [i, name] of wanted.entries()) models[name] = await loadModel(name, fetched[i]);
  timings.modelsMs = performance.now() - t3;
  timings.totalMs = performance.now() - t0;
  // what the worker fetched, when (ms since the load's start): waiting vs working
  timings.fetches = performance.getEntriesByType("resource").filter((e) => e.name.startsWith(base.href))
    .map((e) => [e.name.slice(base.href.length).split("?")[0], Math.round(e.startTime - t0),
      Math.round(e.responseEnd - t0), e.transferSize]);
  progress("ready");
  // what an older bundle left in the cache goes (after the load: it never delays it)
  const keep = [...Object.entries(runtime),
    ...manifest.wheels.map((w) => [new URL(w.path, base).href, w.sha256]),
    ...Object.values(manifest.models).flatMap((m) => [[new URL(m.path, base).href, m.sha256],
      [new URL(m.kernels.path, base).href, m.kernels.sha256],
      ...Object.values(m.files || {}).map((f) => [new URL(f.path, base).href, f.sha256])])];
  prune(base.href, keep); // a snapshot an older version kept in Cache Storage goes too
  pruneSnapshots(base, snapshot);
  return { ...started, models, timings, pyodide: manifest.pyodide.version, nextVisit };
}

function toJs(value) {
  if (value && typeof value.toJs === "function") {
    const out = value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
    value.destroy?.();
    return out;
  }
  return value;
}

function describeError(err) {
  // a Python exception arrives as a PythonError whose message is the whole traceback
  const text = String(err && err.message ? err.message : err);
  if (err && err.type) {
    // the message starts at the traceback's last line naming the exception (it may span lines)
    const lines = text.trim().split("\n");
    const prefix = new RegExp(`^([\\w.]+\\.)?${err.type}:\\s*`);
    let at = lines.length - 1;
    while (at > 0 && !prefix.test(lines[at])) at--;
    const message = prefix.test(lines[at]) ? lines.slice(at).join("\n").replace(prefix, "") : text;
    return { type: err.type, message: message.trim(), traceback: text };
  }
  return { type: err && err.name ? err.name : "Error", message: text };
}

// Python runs one request at a time: two embeds' scripts never interleave at an await, and a
// script's captured output is its own.
let queue = Promise.resolve();
function serial(task) {
  const run = queue.then(task, task);
  queue = run.catch(() => {});
  return run;
}

async function runCaptured(code) {
  // a <pyrite-script>: printed text and display() calls become its outputs, in order; a
  // Python error comes back beside what was shown before it
  const display = pyodide.pyimport("pyrite.wasm.display");
  const globals = display.namespace();
  display.begin();
  let error = null;
  try {
    const value = await pyodide.runPythonAsync(code, { globals });
    display.show(value);
    value?.destroy?.();
  } catch (err) {
    error = describeError(err);
  }
  const outputs = toJs(display.end());
  globals.destroy();
  display.destroy();
  return { outputs, error };
}

const handlers = {
  load: (msg) => load(msg.config),
  snapshot: (msg) => makeNextVisitSnapshot(msg.config, fetchChecked), // a second worker's only request
  run: async (msg) => {
    if (!pyodide) throw new Error("pyrite is not loaded: call pyrite.load() first");
    if (msg.capture) return runCaptured(msg.code);
    return toJs(await pyodide.runPythonAsync(msg.code));
  },
  predict: async (msg) => {
    if (!page) throw new Error("pyrite is not loaded: call pyrite.load() first");
    const inputs = pyodide.toPy(msg.inputs);
    try {
      return toJs(await page.predict.callPromising(msg.model, inputs));
    } finally {
      inputs.destroy();
    }
  },
  loadModel: async (msg) => {
    if (!page) throw new Error("pyrite is not loaded: call pyrite.load() first");
    return loadModel(msg.model);
  },
  call: async (msg) => {
    if (!pyodide) throw new Error("pyrite is not loaded: call pyrite.load() first");
    const dot = msg.name.lastIndexOf(".");
    if (dot < 1) throw new Error(`call: ${JSON.stringify(msg.name)} is not "module.function"`);
    const module = pyodide.pyimport(msg.name.slice(0, dot));
    const fn = module[msg.name.slice(dot + 1)];
    if (!fn) throw new Error(`call: ${msg.name.slice(0, dot)} has no ${msg.name.slice(dot + 1)}`);
    const args = msg.args.map((a) => pyodide.toPy(a));
    try {
      return toJs(await fn.callPromising(...args));
    } finally {
      for (const a of args) a?.destroy?.();
      module.destroy();
    }
  },
  signal: async (msg) => {
    self.pyriteSignals[msg.name] = true;
    return true;
  },
  info: async () => {
    if (!page) throw new Error("pyrite is not loaded: call pyrite.load() first");
    return toJs(await page.info.callPromising());
  },
};

self.onmessage = async (event) => {
  const msg = event.data;
  const handler = handlers[msg.type];
  const start = performance.now();
  try {
    if (!handler) throw new Error(`unknown request ${msg.type}`);
    const now = msg.type === "load" || msg.type === "signal"; // not queued behind Python
    const value = now ? await handler(msg) : await serial(() => handler(msg));
    post({ id: msg.id, ok: true, value, ms: performance.now() - start });
  } catch (err) {
    post({ id: msg.id, ok: false, error: describeError(err), ms: performance.now() - start });
  }
};
