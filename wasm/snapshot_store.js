// Where the worker keeps the next visit's Python memory snapshot: IndexedDB (database
// "pyrite-snapshots"), the memory as a Blob. The rest of the bundle stays in Cache Storage
// (cache.js).
//
// A repeat visit reads the 31-38 MB memory before anything else it does, so the read is on its
// critical path. Chromium reads a Blob kept in IndexedDB in 58-138 ms where Cache Storage took
// 168-232 ms for the same bytes (session 6, this machine); an OPFS sync access handle was as
// fast but only exists in dedicated workers, and the snapshot is written by a second worker and
// read before the first one's module graph is settled: IndexedDB serves both.
//
// A snapshot is kept as two entries of the one object store, as it was in Cache Storage: its
// memory (under the key with pyrite-part=memory) and, written last in its own transaction, a
// small record of it under the key itself ({format, size}). Storing deletes the old record
// first. A visit closed while the memory was being written leaves no record (or the former one
// deleted), and a record whose memory is missing or of another size is not used: the next visit
// boots instead of restoring half a snapshot. Any failure of the store (no IndexedDB, quota
// exceeded, a database another version made) only means no snapshot: Python boots.

const DB_NAME = "pyrite-snapshots";
const STORE = "parts";
const SNAPSHOT_FORMAT = 1;

let opened = null;

function done(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

function committed(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error || new Error("the snapshot store's transaction was aborted"));
    tx.onerror = () => reject(tx.error || new Error("the snapshot store's transaction failed"));
  });
}

/** The database, or null where this page has no IndexedDB (or may not use it). */
function open() {
  if (opened === null) {
    opened = (async () => {
      try {
        if (!self.indexedDB) return null;
        const request = self.indexedDB.open(DB_NAME, 1);
        request.onupgradeneeded = () => request.result.createObjectStore(STORE);
        const db = await done(request);
        db.onversionchange = () => { db.close(); opened = null; }; // clearCache deletes it
        return db;
      } catch {
        return null;
      }
    })();
  }
  return opened;
}

/** Whether this page can keep a snapshot (it has IndexedDB and may open it). */
export async function snapshotStoreAvailable() {
  return Boolean(await open());
}

/** The key of a Python snapshot made for these wheels and this Pyodide (see worker.js). */
export function snapshotKey(base, manifest) {
  const parts = [manifest.pyodide.version, ...manifest.wheels.map((w) => w.sha256)];
  const key = new URL("pyrite-python.snapshot", base);
  key.searchParams.set("for", parts.join("-").slice(0, 400));
  return key.href;
}

function memoryKey(key) {
  const url = new URL(key);
  url.searchParams.set("pyrite-part", "memory");
  return url.href;
}

/** The store's keys a snapshot stored under `key` occupies: [record, memory]. */
export function snapshotEntries(key) {
  return [key, memoryKey(key)];
}

/** A stored snapshot: {bytes, size}, the promise of its bytes and the size its record gives, or
 * null (none, or no record of it).
 * Known before its 31-38 MB are read, so the caller goes on meanwhile (wrapped: an async
 * function that returned the promise itself would resolve only once the bytes were read);
 * `bytes` rejects, after a console warning, when the memory is not the size its record says
 * (the caller then boots Python instead of restoring half a snapshot). */
export async function findSnapshot(key) {
  const db = await open();
  if (!db) return null;
  try {
    const store = db.transaction(STORE, "readonly").objectStore(STORE);
    const [record, memory] = await Promise.all([done(store.get(key)), done(store.get(memoryKey(key)))]);
    if (!record || !(memory instanceof Blob)) return null;
    if (record.format !== SNAPSHOT_FORMAT || !Number.isInteger(record.size)) return null;
    const bytes = memory.arrayBuffer().then((b) => {
      if (b.byteLength !== record.size) {
        const why = `the stored Python snapshot is ${b.byteLength} bytes, not ${record.size} (a visit closed while storing it?)`;
        console.warn(`pyrite: ${why}: booting Python instead`);
        throw new Error(why);
      }
      return new Uint8Array(b);
    });
    bytes.catch(() => {}); // the caller sees a failure where it awaits them: never unhandled
    return { bytes, size: record.size };
  } catch {
    return null; // a store that is not ours, or one that went away
  }
}

async function write(change) {
  const db = await open();
  if (!db) throw new Error("no IndexedDB");
  const tx = db.transaction(STORE, "readwrite");
  const finished = committed(tx);
  change(tx.objectStore(STORE));
  await finished;
}

/** Keep a snapshot for the next visit: a former record is deleted first, then the memory is
 * written, then the new record (three transactions, in that order). Resolves to whether it was
 * stored: a quota error only means the next visit boots (the partial memory is removed). */
export async function storeSnapshot(key, bytes) {
  if (!await open()) return false;
  try {
    await write((store) => store.delete(key));
    await write((store) => store.put(new Blob([bytes], { type: "application/octet-stream" }), memoryKey(key)));
    await write((store) => store.put({ format: SNAPSHOT_FORMAT, size: bytes.byteLength }, key));
    return true;
  } catch {
    await write((store) => store.delete(memoryKey(key))).catch(() => {});
    return false;
  }
}

/** Delete the snapshots kept for the bundle at `base` (a URL of its root) other than the one
 * under `key`: what an older version of the bundle (other wheels) left. Resolves to how many
 * entries went. */
export async function pruneSnapshots(base, key) {
  const db = await open();
  if (!db) return 0;
  const prefix = new URL("pyrite-python.snapshot", base).href;
  const keep = new Set(snapshotEntries(key));
  try {
    const keys = await done(db.transaction(STORE, "readonly").objectStore(STORE).getAllKeys());
    const stale = keys.filter((k) => typeof k === "string" && k.startsWith(prefix) && !keep.has(k));
    if (stale.length) await write((store) => stale.forEach((k) => store.delete(k)));
    return stale.length;
  } catch {
    return 0; // the store went away meanwhile: nothing to prune
  }
}
