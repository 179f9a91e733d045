// Load Pyodide from the local npm package, unpack a pyrite wheel into it, run Python code and
// print what the code prints. Usage: node pyodide_run.mjs <pyodide dir> <wheel> <code file>
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [indexDir, wheelPath, codePath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${indexDir}/pyodide.mjs`).href);
const py = await loadPyodide({ indexURL: `${indexDir}/` });
py.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");  // a typed array, not a Buffer
py.setStdout({ batched: (line) => console.log(line) });
py.runPython(readFileSync(codePath, "utf8"));
