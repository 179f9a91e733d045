// pyrite's page for benchmarks/browser.py: the shipped MNIST guide model through pyrite.js (the
// same bundle and calls as the /mnist demo page), timed by bench.js like every peer. Besides
// the probabilities, each prediction's own breakdown (Python, readback, dispatches) is kept in
// window.pyriteCalls for the results.
import { param, publish } from "./bench.js";
import * as pyrite from "/pyrite.js";

const device = param("device", "webgpu");
window.pyriteCalls = [];
let loaded = null;

publish(
  { framework: "pyrite", backend: device },
  async () => {
    loaded = await pyrite.load({ device, models: ["mnist"] });
    window.bench.info.version = loaded.pyrite;
    window.bench.info.load = loaded.timings;
    window.bench.info.adapter = loaded.adapter ? loaded.adapter["in use"] : null;
  },
  async (pixels) => {
    const out = await pyrite.predict("mnist", { pixels });
    window.pyriteCalls.push({ ms: out.ms, roundTripMs: out.roundTripMs, dispatches: out.dispatches,
      submits: out.submits, readbacks: out.readbacks, readbackMs: out.readback_ms });
    return out.probabilities;
  },
);
