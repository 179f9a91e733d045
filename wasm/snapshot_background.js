// The next visit's Python snapshot, made in the background after a first visit.
//
// A visit that booted Python (a first visit, or one whose stored snapshot no longer fits the
// bundle) leaves a memory snapshot in IndexedDB (snapshot_store.js), so that the next visit restores Python with
// pyrite imported instead of booting it and importing pyrite. Pyodide's `makeMemorySnapshot`
// needs a clean interpreter: it refuses one whose Python holds JavaScript objects other than
// `js` globals (the page's GPU device, its buffers, a model's callbacks), it only works in a
// Pyodide loaded with `_makeSnapshot` (which wraps every global the page reaches from Python in
// a recording proxy), and whatever the page's Python did (a model on the GPU, the autotune
// store's folder) would be restored with it. So the page's own Python, once it has served a
// prediction, cannot be snapshotted, and doing it before (importing all of pyrite first: 0.8 s
// of a 3.2 s first visit) delays the first prediction for the sake of the next visit.
//
// Instead, a second worker (worker.js again, asked {type: "snapshot"}) boots its own Pyodide
// with `_makeSnapshot`, installs the bundle (python_setup.js, as the page's worker does),
// imports `pyrite.wasm.preload`, freezes the collector and stores the snapshot (snapshot_store.js:
// the memory first, its record last, so a visit closed meanwhile leaves nothing a later
// visit would restore). It starts once the page's worker has been idle for IDLE_MS after its
// load or its last answer (next_visit.js: not under the page's predictions), and reads the
// runtime and the wheels from the cache the first visit filled: no download. The next visit restores what the
// page's worker used to snapshot, and what the export-time snapshot (snapshot.mjs) holds:
// Python booted, the wheels installed, pyrite.wasm.preload imported (and, as the page's worker
// had it, the standard library's fallback finder installed).
//
// This module is that worker's half; next_visit.js is the page's (it starts and ends the
// second worker, and says when it is done: pyrite.nextVisitReady()).

import { cacheAvailable, cacheFetchesOf, runtimeOf } from "./cache.js";
import { snapshotStoreAvailable, storeSnapshot } from "./snapshot_store.js";
import { installBundle } from "./python_setup.js";

/** Room the snapshot needs in the origin's storage quota (it is 31-38 MB). */
const ROOM = 64 * 1024 * 1024;

/**
 * The second worker's side: boot Pyodide for a snapshot, install the bundle (`base`, its
 * `manifest`), import pyrite and store the snapshot under `key`. `fetchChecked(url, sha256,
 * label)` is the worker's checked, cached fetch. Resolves to {stored, reason, ms, bytes}.
 */
export async function makeNextVisitSnapshot({ base, manifest, key }, fetchChecked) {
  const t0 = performance.now();
  if (!await cacheAvailable()) return { stored: false, reason: "this page has no Cache Storage" };
  if (!await snapshotStoreAvailable()) return { stored: false, reason: "this page has no IndexedDB" };
  const estimate = await navigator.storage?.estimate?.().catch(() => null);
  if (estimate && estimate.quota - estimate.usage < ROOM) {
    return { stored: false, reason: `${Math.round((estimate.quota - estimate.usage) / 2 ** 20)} MiB left in this origin's storage quota` };
  }
  base = new URL(base);
  cacheFetchesOf(runtimeOf(manifest, base)); // the first visit cached them: read, not downloaded
  const wheels = manifest.wheels.map((w) => fetchChecked(new URL(w.path, base), w.sha256, `wheel ${w.name}`));
  wheels.forEach((w) => w.catch(() => {})); // awaited (and reported) by installBundle
  const indexURL = new URL(manifest.pyodide.url, base).href;
  const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
  const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true, stdout: () => {}, stderr: () => {} });
  await installBundle(pyodide, manifest, base, wheels);
  pyodide.runPython("import pyrite.wasm.preload; pyrite.wasm.preload.freeze()");
  const bytes = pyodide.makeMemorySnapshot();
  const stored = await storeSnapshot(key, bytes);
  return { stored, reason: stored ? null : "IndexedDB refused it (quota?)",
    bytes: bytes.byteLength, ms: performance.now() - t0 };
}
