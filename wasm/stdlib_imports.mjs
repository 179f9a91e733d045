// The standard library modules pyrite imports in a page, found under Node (run by
// pyrite/wasm/stdlib.py at build time; not shipped: the bundle takes only *.js):
//
//   node stdlib_imports.mjs PYODIDE_DIR WHEEL...
//
// boots the Pyodide of PYODIDE_DIR, unpacks the wheels, imports what a page imports
// (pyrite.wasm.preload and the page's other modules, the training page's Learner and its
// `autodiff<webgpu>` device), builds and runs every demo model whose
// files are in the wheel on a GPU-less recording runtime, and prints the names of the
// modules that came from the standard library's zip, as JSON.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [pyodideDir, ...wheels] = process.argv.slice(2);
const CODE = `
import json, sys
import tempfile
import pyrite, pyrite.wasm.preload, pyrite.wasm.remote, pyrite.wasm.training
import pyrite.train, pyrite.demos.train.run  # the training page's (/train) Learner
from pyrite.demos import registry
from pyrite.webgpu import WebGpu, registration
from pyrite.webgpu.recorder import RecordingRuntime
backend = registration.default(WebGpu(runtime=RecordingRuntime(), seed=0))
pyrite.register_backend("webgpu", lambda: backend)  # as pyrite/wasm/page.py does
pyrite.device("autodiff<webgpu>")  # the training page's device
pyrite.demos.train.run.saved_run(tempfile.mkdtemp())  # what /train asks on load
for name in registry.names():
    demo = registry.get(name)
    if demo.missing() is None:
        try:
            demo.predict(demo.load(backend), demo.example)
        except Exception:  # the record is not in the wheel (served apart): imports are what count
            pass
zips = tuple(p + "/" for p in sys.path if p.endswith(".zip"))  # the standard library's
json.dumps(sorted(m for m, v in list(sys.modules.items())
                  if (getattr(v, "__file__", None) or "").startswith(zips)))
`;
try {
  const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
  const pyodide = await loadPyodide({ stdout: () => {}, stderr: () => {} });
  for (const wheel of wheels) pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel");
  pyodide.runPython("import importlib; importlib.invalidate_caches()");
  console.log(pyodide.runPython(CODE));
} catch (err) {
  console.error(String(err && err.message ? err.message : err).trim().split("\n").slice(-3).join("\n"));
  process.exit(1);
}
