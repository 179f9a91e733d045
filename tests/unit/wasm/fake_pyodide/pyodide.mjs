// A stand-in for Pyodide's loader (restore_run.mjs): as loadPyodide does, it awaits the
// snapshot (only to size the memory), makes the module with createPyodideModule, then
// "restores" the snapshot, here by answering what the memory held then.
export async function loadPyodide(options) {
  const memory = await options._loadSnapshot;
  const module = await options.createPyodideModule({ INITIAL_MEMORY: memory.length });
  return { restored: Array.from(memory), heap: module.HEAP8.length, indexURL: options.indexURL,
    stdout: typeof options.stdout };
}
