// wasm/snapshot_store.js under Node with an in-memory IndexedDB (fake_idb.mjs): a snapshot is
// stored as memory then record, found again, refused when torn, not kept on a quota error, and
// pruned when stale (tests/unit/wasm/test_snapshot_store_js.py). Prints one JSON line.
// Usage: node snapshot_store_run.mjs SNAPSHOT_STORE_JS_URL
import { fakeIndexedDB } from "./fake_idb.mjs";

const [storeUrl] = process.argv.slice(2);
const BASE = new URL("https://host.example/tools/pyrite/");
const OTHER = new URL("https://host.example/tools/other/");
let quota = false;
const idb = fakeIndexedDB({
  refuse: (key, value) => (quota && value instanceof Blob ? new Error("QuotaExceededError") : null),
});
globalThis.self = globalThis;
globalThis.indexedDB = idb;
const warnings = [];
console.warn = (text) => warnings.push(String(text));

const store = await import(storeUrl);
const manifest = (wheel) => ({ pyodide: { version: "314.0.7" }, wheels: [{ sha256: wheel }] });
const key = store.snapshotKey(BASE, manifest("aaaa"));
const [recordKey, memoryKey] = store.snapshotEntries(key);

async function read(k) {
  const found = await store.findSnapshot(k);
  if (!found) return null;
  try {
    return Array.from(await found.bytes);
  } catch (err) {
    return `rejected: ${err.message}`;
  }
}

const out = { available: await store.snapshotStoreAvailable(), before: await read(key) };
out.stored = await store.storeSnapshot(key, new Uint8Array([1, 2, 3, 4]));
out.order = idb.log.map(([op, k]) => [op, k === recordKey ? "record" : k === memoryKey ? "memory" : k]);
out.found = await read(key);
const parts = idb.stores.get("parts");
out.memoryIsBlob = parts.get(memoryKey) instanceof Blob;

// a visit closed after the memory, before the record: no record, nothing restored
parts.delete(recordKey);
out.noRecord = await read(key);
// a record whose memory was cut short: its bytes reject, with a warning
parts.set(recordKey, { format: 1, size: 4 });
parts.set(memoryKey, new Blob([new Uint8Array([1, 2])]));
out.cutShort = await read(key);
out.warned = warnings.some((w) => w.includes("2 bytes, not 4"));
// a record of another format is not ours
parts.set(recordKey, { format: 99, size: 2 });
out.otherFormat = await read(key);

// a new snapshot replaces it, whatever was there
out.restored = await store.storeSnapshot(key, new Uint8Array([5, 6, 7]));
out.replaced = await read(key);

// the quota refuses the memory: not stored, the old record is gone, no partial memory left
quota = true;
out.quotaStored = await store.storeSnapshot(key, new Uint8Array([8, 9]));
out.afterQuota = await read(key);
out.keysAfterQuota = [...parts.keys()].length;
quota = false;

// a new export (other wheels): its snapshot is kept, the old one and nothing else pruned
await store.storeSnapshot(key, new Uint8Array([1]));
const newKey = store.snapshotKey(BASE, manifest("bbbb"));
await store.storeSnapshot(newKey, new Uint8Array([2]));
const otherKey = store.snapshotKey(OTHER, manifest("aaaa"));
await store.storeSnapshot(otherKey, new Uint8Array([3]));
out.pruned = await store.pruneSnapshots(BASE, newKey);
out.oldAfterPrune = await read(key);
out.newAfterPrune = await read(newKey);
out.otherAfterPrune = await read(otherKey);
console.log(JSON.stringify(out));
