// The embed peer of benchmarks/browser.py: pyrite's exported bundle (`pyrite export-web`) served
// by a plain static server at a sub-path (?bundle=/tools/pyrite/, the default, or the export
// made with --snapshot at /tools/pyrite-snapshot/), used the way a host page would, timed by
// bench.js like every peer.
import { param, publish } from "./bench.js";

const bundle = param("bundle", "/tools/pyrite/");
const pyrite = await import(`${bundle}pyrite.js`);

publish(
  { framework: "pyrite", backend: "webgpu", bundle },
  async () => {
    const loaded = await pyrite.load({ device: "webgpu", models: ["mnist"] });
    // the worker's phases, and the model's build + record load as Python timed it
    Object.assign(window.bench.info, { version: loaded.pyrite,
      load: { ...loaded.timings, modelPythonMs: loaded.models.mnist.ms } });
  },
  async (pixels) => (await pyrite.predict("mnist", { pixels })).probabilities,
);
