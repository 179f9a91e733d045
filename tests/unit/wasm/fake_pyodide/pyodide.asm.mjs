// A stand-in for Pyodide's Emscripten module factory (restore_run.mjs).
export default async function createModule(settings) {
  return { HEAP8: new Int8Array(settings.INITIAL_MEMORY), growMemory() {} };
}
