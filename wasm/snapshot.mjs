// Make the web bundle's Python memory snapshot under Node (run by pyrite/wasm/snapshot.py at
// export time; not shipped: the bundle takes only *.js):
//
//   node --experimental-wasm-stack-switching snapshot.mjs PYODIDE_DIR OUT WHEEL...
//
// boots the Pyodide of PYODIDE_DIR, installs the wheels into site-packages as the worker does
// (wheels.js), imports pyrite.wasm.preload and writes Pyodide's memory snapshot to OUT,
// uncompressed.
// A page restores it instead of booting (worker.js); Pyodide refuses it unless the page's
// Pyodide is the same build.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { installWheel, sitePackages } from "./wheels.js";

const [pyodideDir, out, ...wheels] = process.argv.slice(2);
if (!pyodideDir || !out) {
  console.error("usage: node snapshot.mjs PYODIDE_DIR OUT WHEEL...");
  process.exit(2);
}
// Pyodide keeps whether it has JSPI (stack switching) in Python's memory, where the snapshot
// takes it to the page: without it there, run_sync (every GPU readback) would be refused.
if (!("Suspending" in WebAssembly) && !("Suspender" in WebAssembly)) {
  console.error("this Node has no JSPI: run it with --experimental-wasm-stack-switching (Node 20-22) or use Node 24+");
  process.exit(2);
}
try {
  const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
  const pyodide = await loadPyodide({ _makeSnapshot: true, stdout: () => {}, stderr: (t) => console.error(t) });
  // CPython calls function pointers through a trampoline that Pyodide builds at start-up
  // when the engine has WebAssembly GC, appending it to the function table, and keeps its
  // table index in Python's memory; 0 means "through JavaScript", whose frame JSPI cannot
  // suspend. Node before 22 lacks GC and stores 0; a browser that has it puts the trampoline
  // at the table's end, which is this length: write that, and the worker checks it
  // (snapshot.js, fixTrampoline) after restoring.
  const m = pyodide._module;
  const at = (m.__PyRuntime + m.HEAP32[m.__PyEM_EMSCRIPTEN_TRAMPOLINE_OFFSET / 4]) / 4;
  const table = m.HEAP32[at] === 0 ? m.wasmTable.length : m.HEAP32[at];
  const folder = sitePackages(pyodide);
  for (const wheel of wheels) await installWheel(pyodide.FS, new Uint8Array(readFileSync(wheel)), folder, wheel);
  // "_" would carry this script's path on the build machine into every page
  pyodide.runPython("import importlib, os; importlib.invalidate_caches(); os.environ.pop('_', None)");
  pyodide.runPython("import pyrite.wasm.preload; pyrite.wasm.preload.freeze()");
  m.HEAP32[at] = table; // last: Python here would call through it (no Python runs after this)
  writeFileSync(out, pyodide.makeMemorySnapshot());
  console.log(JSON.stringify({ trampoline: table }));
} catch (err) {
  // one message, not Node's dump of the minified line it came from
  console.error(String(err && err.message ? err.message : err).trim().split("\n").slice(-3).join("\n"));
  process.exit(1);
}
