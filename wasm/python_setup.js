// The bundle's Python files put into a started Pyodide: the wheels written into site-packages
// (wheels.js) and the finder for the standard library's left-out modules installed. The page's
// worker does it on every visit (a restored snapshot holds Python's memory, not its files), and
// the background worker that makes the next visit's snapshot (snapshot_background.js) does the
// same before importing pyrite, so the two Pythons find their modules in the same places.

import { installWheel, sitePackages } from "./wheels.js";

/**
 * Install the bundle's wheels (`wheels`: their checked bytes, or promises of them, in the
 * manifest's order) into `pyodide`, then the standard-library fallback the manifest names.
 * Resolves to the number of files written.
 */
export async function installBundle(pyodide, manifest, base, wheels) {
  // the wheels are pure Python without dependencies: writing their files into site-packages
  // is what micropip would do, without its import and resolution (about 0.5 s of a cold
  // start); wheels.js writes them from JavaScript (Pyodide's unpackArchive unzips in Python)
  const folder = sitePackages(pyodide);
  const written = await Promise.all(manifest.wheels.map(async (w, i) => installWheel(
    pyodide.FS, await wheels[i], folder, `wheel ${w.name}`)));
  const python = ["import importlib; importlib.invalidate_caches()"];
  // the bundle's standard library is trimmed to what pyrite imports: the rest on demand (the
  // URL and the left-out names passed as Python literals: JSON strings and lists are ones)
  const stdlib = manifest.pyodide.stdlib;
  if (stdlib) {
    const args = [new URL(stdlib.path, base).href, stdlib.modules].map((a) => JSON.stringify(a));
    python.push(`import pyrite.wasm.stdlib_fallback as s; s.install(${args.join(", ")})`);
  }
  pyodide.runPython(python.join("\n")); // one call into Python, not two
  return written.reduce((a, b) => a + b, 0);
}

/**
 * Pyodide's `createPyodideModule` for a boot, timed: `marks` gets when Pyodide's script was
 * imported (`bootScriptMs`) and when its module was made (`bootModuleMs`: the WebAssembly
 * compiled and instantiated, the standard library written, CPython initialised), in ms since
 * `t0`; what follows, until the load's `pyodideMs`, is Pyodide's own Python start-up.
 */
export function timedBoot(indexURL, marks, t0) {
  const script = import(new URL("pyodide.asm.mjs", indexURL).href); // as Pyodide would
  return async (settings) => {
    const factory = (await script).default;
    marks.bootScriptMs = performance.now() - t0;
    const module = await factory(settings);
    marks.bootModuleMs = performance.now() - t0;
    return module;
  };
}
