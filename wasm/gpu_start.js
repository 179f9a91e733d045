// The page's GPU, started by the worker while Python restores or boots (worker.js): the
// adapter is requested before anything else, the device as soon as the manifest says which
// features and limits pyrite asks for, and the models' kernels (the lists the bundle
// recorded, pyrite/webgpu/recorder.py) start compiling at once; Python then takes this device
// and these pipelines (BrowserRuntime.from_js), waiting for a pipeline only when it first
// dispatches it. Any failure here leaves it to Python, which reports it.
//
// `kernelsToCompile` is the one place that decides which kernels compile ahead and in which
// order: work on pipeline compile time (a software adapter compiles slowly: SwiftShader
// took 1.0-1.6 s for one tiled matmul) changes the order or the choice there, and nowhere
// else in the loader.

/** The adapter's type as BrowserRuntime names it: "CPU" for SwiftShader, else "GPU". */
export function adapterType(adapter) {
  const name = `${adapter.info?.vendor ?? ""} ${adapter.info?.architecture ?? ""}`;
  return name.toLowerCase().includes("swiftshader") ? "CPU" : "GPU";
}

/**
 * The kernels to compile ahead, in the order their compiles start: from each model's list
 * (entries {entry, source, adapters}), those recorded for this adapter `type` (kernels
 * recorded for the other type only are choices this adapter does not make:
 * webgpu/software.py), each once, in the recorded order, which is the order the model first
 * dispatches them (its record's upload, then its first prediction).
 */
export function kernelsToCompile(lists, type) {
  const seen = new Set();
  const out = [];
  for (const kernels of lists) {
    for (const kernel of kernels) {
      const key = `${kernel.entry}\n${kernel.source}`;
      if (seen.has(key) || (kernel.adapters && !kernel.adapters.includes(type))) continue;
      seen.add(key);
      out.push(kernel);
    }
  }
  return out;
}

/**
 * What the page's `pyrite info` says of `adapter` beside its name: {features (sorted), limits
 * (every max* and min* limit it reports)}, read here while Python restores or boots (in
 * Python, through a proxy per property, it took 8-9 ms of the device step in a profile).
 */
export function describeAdapter(adapter) {
  const limits = {};
  for (const name in adapter.limits) {
    if (name.startsWith("max") || name.startsWith("min")) limits[name] = Number(adapter.limits[name]);
  }
  return { features: [...adapter.features].map(String).sort(), limits };
}

/**
 * `{adapter, device, pipelines, described}` (pipelines: "entry\nsource" -> the promise of its
 * compiled pipeline; described: describeAdapter's answer), or null without WebGPU. `adapter`: the promise of the adapter (requested early);
 * `spec`: the manifest's "gpu" ({features, limits}); `kernelFiles`: promises of the models'
 * kernel lists (JSON bytes).
 */
export async function startGpu(adapter, spec, kernelFiles) {
  const found = await adapter;
  if (!found) return null;
  const device = await found.requestDevice({
    label: "pyrite",
    requiredFeatures: spec.features.filter((f) => found.features.has(f)),
    requiredLimits: Object.fromEntries(spec.limits.map((name) => [name, found.limits[name]])),
  });
  const lists = await Promise.all(kernelFiles.map(
    async (file) => JSON.parse(new TextDecoder().decode(await file))));
  const pipelines = new Map();
  for (const { entry, source } of kernelsToCompile(lists, adapterType(found))) {
    const pending = device.createComputePipelineAsync({
      layout: "auto", compute: { module: device.createShaderModule({ code: source }), entryPoint: entry },
    });
    pending.catch(() => {}); // a failure is raised in Python when the kernel is used
    pipelines.set(`${entry}\n${source}`, pending);
  }
  return { adapter: found, device, pipelines, described: describeAdapter(found) };
}

/**
 * Whether the GPU started from `kept` (the manifest a former visit kept: worker.js starts it
 * before the manifest arrives) is the one `manifest` (the one that arrived) asks for: the same
 * features and limits, and the same kernel list for each of `models`.
 */
export function sameGpu(kept, manifest, models) {
  const kernels = (m, name) => m.models?.[name]?.kernels?.sha256;
  return Boolean(kept?.gpu && manifest?.gpu) && JSON.stringify(kept.gpu) === JSON.stringify(manifest.gpu)
    && models.every((name) => kernels(kept, name) !== undefined && kernels(kept, name) === kernels(manifest, name));
}

/** The adapter, requested now (null without WebGPU or an adapter; never a rejection). */
export function requestAdapter() {
  if (!self.navigator.gpu) return Promise.resolve(null);
  return navigator.gpu.requestAdapter().catch(() => null);
}
