// wasm/restore.js under Node, with an in-memory Cache Storage and IndexedDB (fake_idb.mjs): what a repeat visit takes from
// the work restoreAhead started before the manifest arrived (tests/unit/wasm/test_restore_js.py).
// Usage: node restore_run.mjs RESTORE_JS_URL CASE  (prints one JSON line)
import { fakeIndexedDB } from "./fake_idb.mjs";

const [restoreUrl, which] = process.argv.slice(2);

// the smallest module with one export: (func (export "f") (result i32) i32.const 7)
const WASM = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0,
  7, 5, 1, 1, 102, 0, 0, 10, 6, 1, 4, 0, 65, 7, 11]);
const BASE = "https://host.example/tools/pyrite/";

const entries = new Map(); // key -> [body, content type]
globalThis.self = globalThis;
const idb = fakeIndexedDB();
globalThis.indexedDB = idb;
globalThis.caches = {
  open: async () => ({
    match: async (key) => {
      const hit = entries.get(String(key));
      return hit ? new Response(hit[0], { headers: { "Content-Type": hit[1] } }) : undefined;
    },
  }),
};

// "early-*" cases: Pyodide is a stand-in (fake_pyodide/), and the restore starts ahead
const early = which.startsWith("early-");
const pyodideFolder = early ? new URL("./fake_pyodide/", import.meta.url).href : "pyodide/";
const manifest = (wheel, wasmSha) => ({
  pyodide: { version: "314.0.7", url: pyodideFolder,
    files: [{ path: "pyodide/pyodide.asm.wasm", sha256: wasmSha }] },
  wheels: [{ name: "pyrite", path: "wheels/x/pyrite.whl", sha256: wheel }],
});

// the browser's own function, counted: a call means the file was compiled again
let ownCalls = 0;
const own = WebAssembly.instantiateStreaming;
const counted = async (source, imports) => { ownCalls++; return own.call(WebAssembly, await source, imports); };
WebAssembly.instantiateStreaming = counted;

const restore = await import(restoreUrl);
const { snapshotKey, storeSnapshot } = await import(new URL("./snapshot_store.js", restoreUrl).href);
const kept = manifest("aaaa", "w1"); // what the former visit kept
entries.set(`${BASE}manifest.json`, [JSON.stringify(kept), "application/json"]);
// a stored snapshot (snapshot_store.js: its memory, and the record of it)
await storeSnapshot(snapshotKey(new URL(BASE), kept), new Uint8Array([1, 2, 3]));
// the snapshot store's reads from here on (each get of a record, each of a memory)
const reads = [];
const parts = idb.stores.get("parts");
const get = parts.get.bind(parts);
parts.get = (key) => { reads.push(String(key)); return get(key); };
entries.set(`${BASE}pyodide/pyodide.asm.wasm?pyrite-sha256=w1`, [WASM, "application/wasm"]);

const arrived = { same: kept, newWheels: manifest("bbbb", "w1"), newWasm: manifest("aaaa", "w2"),
  none: kept }[which.replace("early-", "")];
if (which.endsWith("none")) entries.delete(`${BASE}manifest.json`);
const marks = {};
const ahead = early ? restore.restoreAhead(new URL(BASE), { stdout: () => {} }, marks)
  : restore.restoreAhead(new URL(BASE));
const started = (await ahead)?.restored ?? null; // the restore begun before the manifest
const hookedEarly = WebAssembly.instantiateStreaming !== counted;
const taken = await restore.take(ahead, arrived, new URL(BASE));
const earlyPyodide = started ? await started : null;
const restored = taken.restored ? await taken.restored : null;
const found = await taken.snapshot;
const snapshot = found ? Array.from(await found.bytes) : null;
// Pyodide's own call, on its fetch of the file (a Response whose url is the file's)
const theirs = new Response(WASM, { headers: { "Content-Type": "application/wasm" } });
Object.defineProperty(theirs, "url", { value: `${BASE}pyodide/pyodide.asm.wasm` });
const hooked = WebAssembly.instantiateStreaming !== counted;
const got = await WebAssembly.instantiateStreaming(Promise.resolve(theirs), {});
console.log(JSON.stringify({
  compiledAhead: taken.compiledAhead, hooked, snapshot, answer: got.instance.exports.f(),
  ownCalls,
  // once: the browser's own function is back after the call
  restored: WebAssembly.instantiateStreaming === counted,
  // lookups of a snapshot's record (each is read with its memory's entry)
  snapshotReads: reads.filter((k) => k.includes("pyrite-python.snapshot")
    && !k.includes("pyrite-part")).length,
  key: taken.key === snapshotKey(new URL(BASE), arrived),
  startedEarly: Boolean(started), hookedEarly, earlyPyodide, restoredPyodide: restored,
  marks: Object.keys(marks).sort(),
}));
