// Precompile the page's standard library zip under Node (run by pyrite/wasm/bytecode.py at
// build time; not shipped: the bundle takes only *.js):
//
//   node bytecode.mjs PYODIDE_DIR ZIP_IN ZIP_OUT MODULES_JSON [WHERE [OPTIMIZE]]
//
// boots the Pyodide of PYODIDE_DIR (the page's own Python, so the bytecode is its version's)
// and writes ZIP_IN again as ZIP_OUT: each entry of a module named in MODULES_JSON (a JSON
// list of dotted names) becomes its bytecode (NAME.pyc: unchecked-hash, optimize OPTIMIZE,
// default 2, no column ranges, named for where the page imports it from: the standard library's zip on
// sys.path, or with WHERE "site-packages" Pyodide's site-packages folder, where the page
// installs a wheel), every other entry stays as it is; every entry is stored, not deflated
// (the host's .gz/.br copy compresses the whole zip better than entry by entry). Prints
// {"compiled": N, "entries": M} as JSON.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [pyodideDir, zipIn, zipOut, modulesJson, where = "", optimize = "2"] = process.argv.slice(2);
if (!pyodideDir || !zipIn || !zipOut || !modulesJson) {
  console.error("usage: node bytecode.mjs PYODIDE_DIR ZIP_IN ZIP_OUT MODULES_JSON");
  process.exit(2);
}
const CODE = `
import importlib._bootstrap_external as external
import importlib.util
import io
import json
import sys
import zipfile

# where the page imports them from
where = next(p for p in sys.path if p.endswith(WHERE or ".zip"))
wanted = set(json.loads(MODULES))
out = io.BytesIO()
compiled = 0
with zipfile.ZipFile("/tmp/in.zip") as source, zipfile.ZipFile(out, "w") as target:
    entries = source.infolist()
    for info in entries:
        data = source.read(info)
        name = info.filename
        module = name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        if name.endswith(".py") and module in wanted:
            code = compile(data, f"{where}/{name}", "exec", dont_inherit=True, optimize=OPTIMIZE)
            data = bytes(external._code_to_hash_pyc(code, importlib.util.source_hash(data),
                                                    checked=False))
            info = zipfile.ZipInfo(name + "c", info.date_time)
            compiled += 1
        else:
            info = zipfile.ZipInfo(name, info.date_time)
        info.compress_type = zipfile.ZIP_STORED
        target.writestr(info, data)
with open("/tmp/out.zip", "wb") as f:
    f.write(out.getvalue())
json.dumps({"compiled": compiled, "entries": len(entries)})
`;
try {
  const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
  // no column ranges in the bytecode (as `python -X no_debug_ranges`): tracebacks keep their
  // lines, and the bytecode is smaller (pyrite's by a third, gzipped)
  const pyodide = await loadPyodide({ stdout: () => {}, stderr: (t) => console.error(t),
    env: { PYTHONNODEBUGRANGES: "1" } });
  pyodide.FS.writeFile("/tmp/in.zip", new Uint8Array(readFileSync(zipIn)));
  pyodide.globals.set("MODULES", readFileSync(modulesJson, "utf8"));
  pyodide.globals.set("WHERE", where);
  pyodide.globals.set("OPTIMIZE", Number(optimize));
  const said = pyodide.runPython(CODE);
  writeFileSync(zipOut, pyodide.FS.readFile("/tmp/out.zip"));
  console.log(said);
} catch (err) {
  // one message, not Node's dump of the minified line it came from
  console.error(String(err && err.message ? err.message : err).trim().split("\n").slice(-3).join("\n"));
  process.exit(1);
}
