// Installing the bundle's wheels into Pyodide's site-packages, in JavaScript: by the worker on
// every visit, and by snapshot.mjs at export time (a snapshot's imported modules remember
// where their files were, so both must put them in the same place).
//
// The wheels are pure Python without dependencies, so installing one is writing its files.
// Pyodide's own `unpackArchive` does that in Python (the bytes copied into a temporary file,
// then `shutil.unpack_archive`): 0.25-0.4 s of every visit on SwiftShader, and a repeat visit
// pays it too, because a Python snapshot holds Python's memory, not its files. Here the zip's
// central directory is read in JavaScript and each file made in the file system (writeNew):
// stored entries are slices of the wheel's bytes, kept as the files' contents without a copy;
// deflated ones go through the browser's own `DecompressionStream("deflate-raw")`, all side
// by side.
//
// The caller has checked the wheel's sha256 (the manifest names it), so the CRCs are not
// checked again; a member's size is. Names that would leave the target folder, zip64 archives
// and other compression methods are refused with an Error naming the wheel.

const EOCD = 0x06054b50; // end of central directory
const CENTRAL = 0x02014b50; // central directory file header
const LOCAL = 0x04034b50; // local file header
const STORED = 0;
const DEFLATED = 8;

async function inflated(data) {
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The members of zip `bytes`: [{name, method, size, data}] (data: the stored bytes). */
export function members(bytes, label = "zip") {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = (why) => new Error(`${label}: ${why}; export the bundle again`);
  let end = bytes.length - 22; // the record's size without a comment
  while (end >= 0 && view.getUint32(end, true) !== EOCD) end--;
  if (end < 0) throw bad("not a zip archive");
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  if (count === 0xffff || at === 0xffffffff) throw bad("a zip64 archive, which is not read here");
  const names = new TextDecoder();
  const out = [];
  for (let i = 0; i < count; i++) {
    if (at + 46 > bytes.length || view.getUint32(at, true) !== CENTRAL) throw bad("a broken central directory");
    const method = view.getUint16(at + 10, true);
    const packed = view.getUint32(at + 20, true);
    const size = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const skip = nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    const name = names.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    at += 46 + skip;
    if (name.startsWith("/") || name.includes("\\") || name.split("/").some((p) => p === "..")) {
      throw bad(`member ${JSON.stringify(name)} would be written outside site-packages`);
    }
    if (method !== STORED && method !== DEFLATED) throw bad(`member ${name} uses compression method ${method}`);
    if (local + 30 > bytes.length || view.getUint32(local, true) !== LOCAL) throw bad(`member ${name} has no local header`);
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    if (start + packed > bytes.length) throw bad(`member ${name} runs past the archive's end`);
    out.push({ name, method, size, data: bytes.subarray(start, start + packed) });
  }
  return out;
}

/** Where Pyodide's Python finds installed packages (its site-packages folder). Not the working
 * directory, where Pyodide's `unpackArchive` puts them by default: code may change that. */
export function sitePackages(pyodide) {
  return pyodide.runPython("import sys; next(p for p in sys.path if p.endswith('site-packages'))");
}

/**
 * Write `data` to file `path` of Emscripten's file system `fs`, `parent` being its folder's
 * node. In a MEMFS folder (Pyodide's site-packages), a new name's node is made by the
 * folder's own `mknod` and given `data` as its contents, without a copy: `fs.writeFile` looks
 * the path up again, checks it, opens a stream, writes and closes it, which in a fresh Pyodide
 * (every visit's, its JavaScript not yet optimised) took 20-50 ms for pyrite's 366 files under
 * Node, against about 1 ms (benchmarks/wheels_restored.py). MEMFS keeps a file's bytes in
 * `contents` (the first `usedBytes` of them) and copies them only when the file grows, as with
 * a buffer writeFile may own. Anywhere else, or where the name exists, `fs.writeFile`.
 */
function writeNew(fs, parent, path, data) {
  const name = path.slice(path.lastIndexOf("/") + 1);
  if (parent && fs.filesystems?.MEMFS && parent.mount?.type === fs.filesystems.MEMFS
      && parent.contents && !Object.hasOwn(parent.contents, name)) {
    const node = parent.node_ops.mknod(parent, name, 0o100644, 0); // a regular file, rw-r--r--
    node.contents = data;
    node.usedBytes = data.length;
    return;
  }
  fs.writeFile(path, data, { canOwn: true });
}

/**
 * Write wheel `bytes` (already checked against its sha256) into `folder` of Emscripten's file
 * system `fs` (Pyodide's `FS`); resolves to the number of files written. Python's import
 * caches must be invalidated afterwards (the worker does, once for all wheels).
 */
export async function installWheel(fs, bytes, folder, label = "wheel") {
  const files = members(bytes, label).filter((m) => !m.name.endsWith("/"));
  const contents = await Promise.all(files.map((m) => (m.method === STORED ? m.data : inflated(m.data))));
  const made = new Map(); // folder -> its node (null where fs cannot look it up)
  for (const [i, m] of files.entries()) {
    const data = contents[i];
    if (data.length !== m.size) throw new Error(`${label}: member ${m.name} is ${data.length} bytes, not ${m.size}; export the bundle again`);
    const path = `${folder}/${m.name}`;
    const parent = path.slice(0, path.lastIndexOf("/"));
    if (!made.has(parent)) {
      fs.mkdirTree(parent);
      made.set(parent, fs.lookupPath ? fs.lookupPath(parent).node : null);
    }
    writeNew(fs, made.get(parent), path, data);
  }
  return files.length;
}
