// Run wasm/wheels.js under Node on a zip file with a file system that records what is written.
// Usage: node wheels_run.mjs <wheels.js> <zip>; prints {"files": {path: text}, "dirs": [...],
// "count": n} or {"error": message}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [script, zip] = process.argv.slice(2);
const { installWheel } = await import(pathToFileURL(script).href);
const files = {};
const dirs = [];
const fs = {
  mkdirTree: (path) => dirs.push(path),
  writeFile: (path, data) => { files[path] = new TextDecoder().decode(data); },
};
try {
  const count = await installWheel(fs, new Uint8Array(readFileSync(zip)), "/site", "wheel w");
  console.log(JSON.stringify({ files, dirs, count }));
} catch (err) {
  console.log(JSON.stringify({ error: err.message }));
}
