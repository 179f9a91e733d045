// A repeat visit's restore, started before the manifest's answer (worker.js).
//
// A repeat visit restores Python from the snapshot a former visit kept in IndexedDB
// (snapshot_store.js), keyed by Pyodide's version and the wheels' hashes, which only the manifest
// says. The manifest is fetched from the network on every visit (a new export is seen at
// once), and waiting for it put its round trip in front of everything else: reading the
// 31-38 MB snapshot, importing Pyodide's two JavaScript modules and compiling its
// WebAssembly. Pyodide itself awaits the snapshot's bytes before it makes its module
// (loadPyodide: prepareSnapshot, then the module, whose instantiateWasm calls
// WebAssembly.instantiateStreaming on its fetch of pyodide.asm.wasm), so its compile began
// only once the snapshot was read.
//
// `restoreAhead(base)` starts all of it at once, with the manifest the former visit kept:
// the snapshot's read, the imports of `pyodide.mjs` and `pyodide.asm.mjs`, and the compile of
// `pyodide.asm.wasm` from its copy in Cache Storage (the streaming compile, which uses the
// browser's cache of compiled code as Pyodide's own call would). `take` then hands the worker
// what fits the manifest that arrived: the snapshot only under the key that manifest gives (a
// new export has other wheels, so another key: the early read is dropped and the normal path
// runs), the modules only from the same Pyodide URL, the compiled WebAssembly only for the
// same sha256. Nothing here decides whether a snapshot is used, and a wrong guess costs work,
// never a wrong restore.

import { cacheFetchesOf, cachedManifest, cachedResponse, runtimeOf } from "./cache.js";
import { findSnapshot, snapshotKey } from "./snapshot_store.js";

/** Pyodide's folder (its indexURL) for `manifest`, relative to the bundle root `base`. */
export function pyodideURL(manifest, base) {
  return new URL(manifest.pyodide.url, base).href;
}

/** {url, sha256} of `manifest`'s pyodide.asm.wasm (absolute URL), or null. */
export function wasmFile(manifest, base) {
  const file = (manifest.pyodide.files || []).find((f) => f.path.endsWith("/pyodide.asm.wasm")
    || f.path === "pyodide.asm.wasm");
  return file ? { url: new URL(file.path, base).href, sha256: file.sha256 } : null;
}

/** Import Pyodide's loader and its Emscripten module (as Pyodide itself would import them:
 * the same URLs, so the module map gives Pyodide these instances). */
export function importPyodide(indexURL) {
  const loader = import(new URL("pyodide.mjs", indexURL).href);
  const script = import(new URL("pyodide.asm.mjs", indexURL).href);
  loader.catch(() => {}); // a failure is seen where the worker awaits them
  script.catch(() => {});
  return { indexURL, loader, script };
}

/** Compile `file` ({url, sha256}) from its copy in Cache Storage: {...file, module}, module
 * the promise of the WebAssembly.Module, or of null when the cache has no copy or the
 * compile failed (nothing is ever downloaded here). */
function compileCached(file) {
  const module = cachedResponse(file.url, file.sha256)
    .then((response) => (response ? WebAssembly.compileStreaming(response) : null))
    .catch(() => null);
  return { ...file, module };
}

/**
 * Restore Python from `found` (findSnapshot's answer: {bytes, size}) with the Pyodide that
 * `pyodide` (importPyodide's answer) imports, without waiting for the bytes: Pyodide sizes its
 * memory by the snapshot before it makes its module, and restores it once the module is made,
 * so it is handed a memory of the record's size at once and the module is made while the bytes
 * are read (compiling aside, making it is 0.1-0.3 s of Emscripten's own start: instantiating,
 * linking its thousands of exports, installing the standard library's zip). The bytes are
 * copied into that memory before Pyodide restores it. Rejects when they never come whole (a
 * memory cut short): the worker then boots. `options`: loadPyodide's (stdout, stderr, ...);
 * `marks` gets snapshotReadMs and moduleMs (ms since `t0`).
 */
async function restoreFrom(found, pyodide, options, marks, t0) {
  found.bytes.then(() => { marks.snapshotReadMs = performance.now() - t0; }, () => {});
  const { loadPyodide } = await pyodide.loader;
  const memory = new Uint8Array(found.size);
  return loadPyodide({ ...options, indexURL: pyodide.indexURL, _loadSnapshot: memory,
    createPyodideModule: async (settings) => {
      const module = await (await pyodide.script).default(settings);
      if (module.HEAP8.length < memory.length) module.growMemory(memory.length);
      marks.moduleMs = performance.now() - t0;
      memory.set(await found.bytes);
      return module;
    } });
}

/**
 * Start reading the last visit's snapshot, importing its Pyodide and compiling its
 * WebAssembly, from the manifest the cache holds for `base` (a URL of the bundle root); with
 * `options` (loadPyodide's, without indexURL) and a snapshot on record, also restore Python from
 * it (restoreFrom: `marks` and `t0` are its timings). Resolves, once the snapshot's record has
 * been looked up, to null when the cache has no manifest, else {key, snapshot, pyodide, wasm,
 * restored, cancelHook}: `snapshot` the promise findSnapshot gives, `pyodide` importPyodide's
 * answer, `wasm` compileCached's (or null), `restored` the promise of the restored Pyodide (or
 * null), `cancelHook` what takes useCompiled's hook back while the restore has not used it.
 * Never rejects.
 */
export async function restoreAhead(base, options = null, marks = {}, t0 = performance.now()) {
  try {
    const manifest = await cachedManifest(new URL("manifest.json", base).href);
    if (!manifest?.pyodide?.url || !Array.isArray(manifest.wheels)) return null;
    const key = snapshotKey(base, manifest);
    const snapshot = findSnapshot(key);
    snapshot.catch(() => {});
    const file = wasmFile(manifest, base);
    const pyodide = importPyodide(pyodideURL(manifest, base));
    const wasm = file ? compileCached(file) : null;
    const early = { key, snapshot, pyodide, wasm, restored: null, cancelHook: null };
    const found = options ? await snapshot : null; // its record: the bytes come later
    if (found) {
      cacheFetchesOf(runtimeOf(manifest, base)); // Pyodide's runtime files, from the cache
      if (wasm) early.cancelHook = useCompiled(wasm);
      early.restored = restoreFrom(found, pyodide, options, marks, t0);
      early.restored.catch(() => {}); // seen where the worker awaits it
    }
    return early;
  } catch {
    return null; // any surprise (a damaged copy): the worker goes the normal way
  }
}

/**
 * Make Pyodide's WebAssembly.instantiateStreaming of `wasm.url` (the first call the worker
 * makes after this) instantiate `wasm.module` instead of compiling the file again; with no
 * module, or another URL, the browser's own function runs. Once: the hook removes itself.
 * Returns a function that removes it if it is still there.
 */
export function useCompiled(wasm) {
  const original = WebAssembly.instantiateStreaming;
  const hook = async function instantiateStreaming(source, imports) {
    WebAssembly.instantiateStreaming = original;
    const theirs = await source;
    const same = new URL(theirs.url || "data:,").pathname === new URL(wasm.url).pathname;
    const module = same ? await wasm.module : null;
    if (!module) return original.call(WebAssembly, theirs, imports);
    theirs.body?.cancel().catch(() => {}); // its own copy of the file is not read
    return { module, instance: await WebAssembly.instantiate(module, imports) };
  };
  WebAssembly.instantiateStreaming = hook;
  return () => {
    if (WebAssembly.instantiateStreaming === hook) WebAssembly.instantiateStreaming = original;
  };
}

/**
 * What of `ahead` (restoreAhead's promise) fits `manifest`, the one that arrived:
 * {key, snapshot, pyodide, compiledAhead, restored}. `snapshot` is the promise findSnapshot(key)
 * gives for its key (the early read when the keys agree, else a new read), `pyodide`
 * importPyodide's answer for its Pyodide (the early imports when the URL agrees);
 * `compiledAhead` says whether Pyodide gets the early compile (same URL and sha256: useCompiled
 * is set, or the early restore has it); `restored` the early restore's promise where all of it
 * fits (same key, Pyodide and WebAssembly), else null (a restore that does not fit is left to
 * finish unused, its hook taken back first, so this manifest's Pyodide compiles its own).
 */
export async function take(ahead, manifest, base) {
  const early = await ahead;
  const key = snapshotKey(base, manifest);
  const indexURL = pyodideURL(manifest, base);
  const file = wasmFile(manifest, base);
  const compiledAhead = Boolean(early?.wasm && file && early.wasm.url === file.url
    && early.wasm.sha256 === file.sha256 && early.pyodide.indexURL === indexURL);
  const fits = Boolean(early?.restored && early.key === key && early.pyodide.indexURL === indexURL
    && (early.wasm ? compiledAhead : !file));
  if (early?.restored && !fits) early.cancelHook?.();
  if (compiledAhead && !fits) useCompiled(early.wasm);
  return {
    key,
    snapshot: early && early.key === key ? early.snapshot : findSnapshot(key),
    pyodide: early && early.pyodide.indexURL === indexURL ? early.pyodide : importPyodide(indexURL),
    compiledAhead,
    restored: fits ? early.restored : null,
  };
}
