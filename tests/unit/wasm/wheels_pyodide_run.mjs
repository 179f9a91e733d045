// wasm/wheels.js under Node with the real Pyodide (wasm/node_modules/pyodide): a wheel's files
// made in its MEMFS site-packages, read back by Python, written over and appended to; then a
// Python that imported part of the wheel is snapshotted and restored, the wheel installed
// again as the page's worker does after a restore, and a module nobody imported before the
// snapshot imported. Usage: node wheels_pyodide_run.mjs <wasm dir> <wheel>; one JSON line.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [wasm, wheelPath] = process.argv.slice(2);
const url = (name) => pathToFileURL(`${wasm}/${name}`).href;
const { loadPyodide } = await import(url("node_modules/pyodide/pyodide.mjs"));
const { installWheel, sitePackages } = await import(url("wheels.js"));

const wheel = () => new Uint8Array(readFileSync(wheelPath));
const quiet = { stdout: () => {}, stderr: () => {} };
const out = {};

// the first visit's Python: the files made, then read, changed and imported by Python
const first = await loadPyodide({ ...quiet, _makeSnapshot: true });
const site = sitePackages(first);
first.FS.mkdirTree(`${site}/pkg`);
first.FS.writeFile(`${site}/pkg/data.txt`, "a stale copy"); // there before: written over
first.FS.writeFile(`${site}/pkg/old.txt`, "kept"); // not in the wheel: left as it is
out.count = await installWheel(first.FS, wheel(), site, "wheel pkg");
out.read = first.runPython(`
import importlib, os, sys
importlib.invalidate_caches()
import pkg.a
site = "${site}"
read = [open(f"{site}/pkg/{n}").read() for n in ("a.py", "b.py", "data.txt", "old.txt")]
sizes = [os.stat(f"{site}/pkg/{n}").st_size for n in ("a.py", "b.py", "data.txt")]
with open(f"{site}/pkg/data.txt", "a") as f:
    f.write("+more")
with open(f"{site}/pkg/a.py", "r+") as f:  # in place: its own bytes only
    f.write("VALUE = 7")
str([pkg.a.VALUE, read, sizes, open(f"{site}/pkg/data.txt").read(),
     open(f"{site}/pkg/a.py").read(), open(f"{site}/pkg/b.py").read(), sorted(os.listdir(f"{site}/pkg"))])
`);
const memory = first.makeMemorySnapshot();

// the repeat visit's: restored (the memory, not the files), the wheel installed again
const py = await loadPyodide({ ...quiet, _loadSnapshot: memory });
out.restoredCount = await installWheel(py.FS, wheel(), sitePackages(py), "wheel pkg");
out.restored = py.runPython(`
import importlib, sys
importlib.invalidate_caches()
fresh = "pkg.b" not in sys.modules
import pkg.b
str([fresh, pkg.a.VALUE, pkg.b.VALUE])
`);
console.log(JSON.stringify(out));
