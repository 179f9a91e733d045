// Types of pyrite.js, the JS API of pyrite's web bundle (see docs/web-embeds.md).
//
//   import * as pyrite from "<bundle>/pyrite.js";

export type Device = "auto" | "webgpu" | "numpy";

export interface ProgressEvent {
  type: "progress";
  /** manifest, pyodide, wheels, device, model, ready (numpy-unavailable when it could not load) */
  stage: string;
  [detail: string]: unknown;
}

export interface LoadOptions {
  /** "auto": WebGPU, else numpy when the page can load it (default "auto") */
  device?: Device;
  /** the bundle's models to load (names in manifest.json) */
  models?: string[];
  /** URL of a full Pyodide distribution's packages, where numpy can be loaded from */
  pyodidePackages?: string | null;
  /** kernel variants: "on" times them on first use and keeps the fastest in this page's
   * browser storage; "cached" (default) uses what a former visit kept; "off": heuristics */
  autotune?: "on" | "cached" | "off";
  onProgress?: (event: ProgressEvent) => void;
}

export interface Adapter {
  "in use": string;
  vendor: string;
  description: string;
  features: string[];
  limits: Record<string, number>;
}

export interface Loaded {
  device: "webgpu" | "numpy";
  /** why the devices that were tried first could not be used */
  unavailable: Record<string, string>;
  adapter?: Adapter;
  python: string;
  pyrite: string;
  pyodide: string;
  /** each model's build and record load in Python; on webgpu also what the runtime counted
   * during it (dispatches, pipelines, pipeline_ms: the wait for compiled pipelines, ...) */
  models: Record<string, { model: string; device: string; params: number; ms: number }
    & Record<string, number | string>>;
  timings: Record<"pyodideMs" | "wheelsMs" | "installMs" | "importMs" | "deviceMs" | "recordsWaitMs"
    | "modelsMs" | "totalMs", number>
    & { /** Python was restored from a snapshot: the bundle's, or a former visit's */ snapshot: boolean;
      snapshotFrom: "bundle" | "cache" | null;
      /** the files written from the wheels into site-packages (wheels.js) */ wheelFiles: number;
      /** when Python was restored: ms from the load's start until the snapshot's bytes were
       * read, and until Pyodide's WebAssembly module was made (the restore follows) */
      snapshotReadMs?: number; moduleMs?: number;
      /** a repeat visit: Pyodide's WebAssembly was compiled, and Python restored, from what the
       * former visit kept, started before the manifest arrived (restore.js) */
      compiledAhead?: boolean; restoredAhead?: boolean;
      /** the GPU (device, kernels' compiles) was started from the manifest the former visit
       * kept, before the manifest arrived, and taken (worker.js, gpu_start.js sameGpu) */
      gpuAhead?: boolean;
      /** when Python booted: ms from the load's start until Pyodide's script was imported, and
       * until its module was made (WebAssembly instantiated, CPython initialised) */
      bootScriptMs?: number; bootModuleMs?: number;
      /** the worker's requests under the bundle: [path, start, end (ms since the load's
       * start), bytes transferred (0 from a cache)] */
      fetches: [string, number, number, number][] };
}

export interface Prediction {
  /** e.g. "webgpu (page)" */
  backend: string;
  /** the prediction in Python, milliseconds */
  ms: number;
  /** the call as the page saw it (worker bridge included) */
  roundTripMs: number;
  dispatches?: number;
  submits?: number;
  readbacks?: number;
  readback_ms?: number;
  /** set when the GPU device was lost and pyrite restored it before answering */
  recovered?: string;
  [output: string]: unknown;
}

export interface MnistPrediction extends Prediction {
  label: number;
  probabilities: number[];
}

export type Output =
  | { type: "text"; text: string }
  | { type: "table"; rows: unknown[][]; caption: string }
  | { type: "image"; width: number; height: number; rgba: number[] };

/** A rejected call: `message` is the Python message. */
export interface PythonError extends Error {
  name: "PythonError" | "Error";
  pythonType: string;
  traceback: string | null;
}

export interface CallInfo {
  op: string;
  ms: number;
  workerMs: number;
  backend: string | null;
}

export const events: EventTarget;
export let lastCall: CallInfo | null;

/** Start Python in the shared worker and get the device (and models) ready. */
export function load(options?: LoadOptions): Promise<Loaded>;
/** Run Python; resolves to the value of its last expression, converted to JS. */
export function run(code: string): Promise<unknown>;
/** Run Python as <pyrite-script> does: what it printed and display()ed, and its error. */
export function runScript(code: string): Promise<{ outputs: Output[]; error: { type: string; message: string; traceback?: string } | null }>;
/** Load one more of the bundle's models after load(). */
export function loadModel(name: string): Promise<{ model: string; device: string; params: number; ms: number }>;
/** Call a Python function by dotted name with JSON-able arguments. */
export function call(name: string, ...args: unknown[]): Promise<unknown>;
export function predict(model: "mnist", inputs: { pixels: number[] }): Promise<MnistPrediction>;
export function predict(model: string, inputs: Record<string, unknown>): Promise<Prediction>;
/** The device in use: adapter, features, limits. */
/** Raise a flag running Python polls (`"stop"` ends a training run after its step). */
export function signal(name: string): Promise<boolean>;
export function info(): Promise<Record<string, unknown>>;
/** The bundle's manifest.json. */
export function manifest(): Promise<Record<string, unknown>>;
/** Delete the cached bundle files; resolves to whether a cache existed. */
export function clearCache(): Promise<boolean>;

/** What a load that booted Python leaves for the next visit (see nextVisitReady). */
export interface NextVisit {
  /** the next visit's Python snapshot is in Cache Storage */
  stored: boolean;
  /** why it was not made or stored (null when stored) */
  reason: string | null;
  /** the second worker's time, from its start to the snapshot stored */
  ms?: number;
  /** the snapshot's size */
  bytes?: number;
  /** when the second worker was started (the page's performance.now()) */
  startedAt?: number;
}

/** Resolves once the second worker that makes the next visit's Python snapshot is done (at
 * once after a load that restored one). */
export function nextVisitReady(): Promise<NextVisit>;
/** Register the bundle's service worker so pages in its folder work offline. */
export function enableOffline(options?: { scope?: string }): Promise<ServiceWorkerRegistration>;
/** Whether this browser gives a WebGPU adapter at all. */
export function hasWebGPU(): Promise<{ ok: boolean; reason?: string }>;

declare global {
  interface HTMLElementTagNameMap {
    "pyrite-script": HTMLElement & { done: Promise<void> };
    "pyrite-mnist": HTMLElement & {
      ready: Promise<void>;
      lastResult: MnistPrediction | null;
      predictions: number;
      clear(): void;
      predictPixels(pixels: number[]): Promise<MnistPrediction | null>;
    };
  }
}
