// The order of a first visit's downloads: Pyodide's runtime first, then the wheels and the
// records. Started together, all of them share the network: on a 20 Mbit/s link (Chromium's
// emulation, benchmarks/browser.py --throttle) Pyodide's WebAssembly, the file the boot needs
// first and the largest (9.6 MB from a host that does not compress), arrived last, 8.7 s after
// the load began, and the boot waited for it while the wheels (2.1 MB) and the record (1.1 MB)
// took their share of the link. They are needed only after Python has booted (the wheels) or
// later (the records): fetched from when the WebAssembly is all here, they download while
// Pyodide compiles it and starts Python. On localhost the WebAssembly is there long before
// Python needs the wheels; on a repeat visit it comes from the cache at once. The kernel lists
// are not held back: the GPU compiles them while Python starts.

/**
 * A promise that resolves when the wheels and records may be fetched: once Pyodide's
 * WebAssembly has arrived (`arrived(url)`, cache.js, for a file that cacheFetchesOf answers),
 * or at once when the manifest does not list it among the runtime files the worker fetches
 * through the cache (nothing would say when it arrived).
 */
export function runtimeFirst(manifest, base, arrived) {
  const wasm = new URL("pyodide.asm.wasm", new URL(manifest.pyodide.url, base)).href;
  const listed = (manifest.pyodide.files || []).some((f) => new URL(f.path, base).href === wasm);
  return listed ? arrived(wasm) : Promise.resolve();
}
