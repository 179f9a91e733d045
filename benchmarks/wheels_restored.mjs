// The repeat visit's wheel step under Node (run by wheels_restored.py): the bundle's wheels
// installed into a Python restored from a snapshot of the page's Python (booted, the wheels
// installed, pyrite.wasm.preload imported: what the next visit's snapshot holds), by wheels.js
// as it is (each file's MEMFS node made and given its bytes) against the same code writing
// every file with FS.writeFile (as until session 8). Each round restores the snapshot twice,
// once for each, in turns (a, b, then b, a).
//
//   node --experimental-wasm-stack-switching wheels_restored.mjs BUNDLE_DIR ROUNDS
//
// BUNDLE_DIR: an export-web folder (its manifest.json and wheels/); prints one JSON line.
import { readFileSync } from "node:fs";

const [bundle, rounds = "5"] = process.argv.slice(2);
const wasm = new URL("../wasm/", import.meta.url);
const { loadPyodide } = await import(new URL("node_modules/pyodide/pyodide.mjs", wasm).href);
const { installWheel, sitePackages } = await import(new URL("wheels.js", wasm).href);

const manifest = JSON.parse(readFileSync(`${bundle}/manifest.json`, "utf8"));
const wheels = manifest.wheels.map((w) => new Uint8Array(readFileSync(`${bundle}/${w.path}`)));
const quiet = { stdout: () => {}, stderr: () => {} };

async function install(py, fs) {
  const folder = sitePackages(py);
  let files = 0;
  for (const [i, w] of manifest.wheels.entries()) files += await installWheel(fs, wheels[i], folder, w.name);
  py.runPython("import importlib; importlib.invalidate_caches()");
  return files;
}

const first = await loadPyodide({ ...quiet, _makeSnapshot: true });
await install(first, first.FS);
first.runPython("import pyrite.wasm.preload; pyrite.wasm.preload.freeze()");
const memory = first.makeMemorySnapshot();

const runs = { nodes: [], write_file: [] };
let files = 0;
for (let i = 0; i < Number(rounds); i++) {
  for (const kind of i % 2 ? ["write_file", "nodes"] : ["nodes", "write_file"]) {
    const py = await loadPyodide({ ...quiet, _loadSnapshot: memory });
    // FS.writeFile for every file: a file system that offers nothing else
    const fs = kind === "nodes" ? py.FS
      : { mkdirTree: (p) => py.FS.mkdirTree(p), writeFile: (p, d) => py.FS.writeFile(p, d) };
    const t = performance.now();
    files = await install(py, fs);
    runs[kind].push(performance.now() - t);
    py.runPython("import pyrite.wasm.page, pyrite.nn.transformer"); // both work afterwards
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(JSON.stringify({ files, runs_ms: runs,
  median_ms: { nodes: median(runs.nodes), write_file: median(runs.write_file) } }));
