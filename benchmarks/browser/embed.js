// The embed peer of benchmarks/browser.py: pyrite's exported bundle (`pyrite export-web`) served
// by a plain static server at the sub-path /tools/pyrite/, used the way a host page would,
// timed by bench.js like every peer.
import { publish } from "./bench.js";
import * as pyrite from "/tools/pyrite/pyrite.js";

publish(
  { framework: "pyrite", backend: "webgpu", bundle: "/tools/pyrite/" },
  async () => {
    const loaded = await pyrite.load({ device: "webgpu", models: ["mnist"] });
    Object.assign(window.bench.info, { version: loaded.pyrite, load: loaded.timings });
  },
  async (pixels) => (await pyrite.predict("mnist", { pixels })).probabilities,
);
