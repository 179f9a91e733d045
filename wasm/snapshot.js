// The bundle's own Python memory snapshot (`pyrite export-web --snapshot`, made under Node at
// export time: see pyrite/wasm/snapshot.py). A first visit restores it instead of booting
// Python and importing pyrite; the worker's cached snapshot of a former visit comes first.
//
// The manifest says what it was made for ("snapshot": {"for": {"pyodide", "wheels"}}); it is
// used only when that is this manifest's Pyodide version and its wheels' sha256, in order.
// Anything wrong with it (made for other files, a failed download, a wrong sha256, a file
// that is not a snapshot) is one console warning, and Python boots as without one.

/** Whether a snapshot made for `made` ({pyodide, wheels}) fits this manifest. */
export function snapshotFits(made, manifest) {
  const wheels = manifest.wheels.map((w) => w.sha256);
  return Boolean(made) && made.pyodide === manifest.pyodide.version
    && Array.isArray(made.wheels) && made.wheels.length === wheels.length
    && made.wheels.every((sha, i) => sha === wheels[i]);
}

async function gunzip(bytes) {
  // a host may have decoded it already (one that sends .gz files with Content-Encoding)
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * The bundle's snapshot, uncompressed, or null (with a console warning when it has one that
 * cannot be used). `fetchChecked(url, sha256, label)` fetches and checks a bundle file.
 */
export async function shippedSnapshot(manifest, base, fetchChecked) {
  const entry = manifest.snapshot;
  if (!entry) return null;
  if (!snapshotFits(entry.for, manifest)) {
    console.warn("pyrite: the bundle's Python snapshot was made for other files than its "
      + `manifest names (Pyodide ${entry.for?.pyodide}, not ${manifest.pyodide.version}, or `
      + "other wheels): booting Python instead; export the bundle again to refresh it");
    return null;
  }
  try {
    return await gunzip(await fetchChecked(new URL(entry.path, base), entry.sha256, "Python snapshot"));
  } catch (err) {
    console.warn(`pyrite: the bundle's Python snapshot could not be read, booting Python instead: ${err.message || err}`);
    return null;
  }
}

/**
 * After restoring the bundle's snapshot `bytes`: make CPython's call trampoline the one this
 * page has. Pyodide builds it at start-up (with WebAssembly GC) at the end of the function
 * table and keeps its index in Python's memory, which the restore has just replaced with the
 * export's (snapshot.mjs wrote the index a browser with GC gets: `table`). Where this engine
 * has none, the index becomes 0 (calls go through JavaScript, as its own boot would have
 * it), in Python's memory and in `bytes`, which the worker keeps for the next visit. Throws
 * when this page's table is laid out otherwise; the worker then boots instead.
 */
export function fixTrampoline(pyodide, table, bytes) {
  const m = pyodide._module;
  const at = (m.__PyRuntime + m.HEAP32[m.__PyEM_EMSCRIPTEN_TRAMPOLINE_OFFSET / 4]) / 4;
  if (m.wasmTable.length === table + 1) return; // it is where the snapshot says
  if (m.wasmTable.length !== table) {
    throw new Error(`its function table does not fit this page's (${m.wasmTable.length} entries, ${table} or ${table + 1} expected)`);
  }
  m.HEAP32[at] = 0;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  view.setInt32(view.getUint32(4, true) + at * 4, 0, true); // the memory starts after the header
}
