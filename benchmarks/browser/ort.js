// ONNX Runtime Web peer: build/mnist.onnx (normalisation and softmax inside the graph).
// ?ep=webgpu|wasm, &bundle=FILE: the dist file to import; by default the EP's own entry point
// (`onnxruntime-web/webgpu`: ort.webgpu.min.mjs, `onnxruntime-web/wasm`: ort.wasm.min.mjs);
// ort.min.mjs is the package's default entry (`onnxruntime-web`, WebGPU through JSEP).
import { param, publish } from "./bench.js";

const ep = param("ep", "webgpu");
const bundle = param("bundle", `ort.${ep === "webgpu" ? "webgpu" : "wasm"}.min.mjs`);
const DIST = new URL("node_modules/onnxruntime-web/dist/", location.href).href;
let ort;
let session;

async function load() {
  ort = await import(`${DIST}${bundle}`);
  ort.env.wasm.wasmPaths = DIST;
  session = await ort.InferenceSession.create("build/mnist.onnx", { executionProviders: [ep] });
}

async function run(pixels) {
  const input = new ort.Tensor("float32", Float32Array.from(pixels), [1, 1, 28, 28]);
  const { probabilities } = await session.run({ pixels: input });
  const data = probabilities.data;
  probabilities.dispose();
  return data;
}

const bench = publish({ framework: "onnxruntime-web", backend: ep, bundle }, load, run);
bench.ready.then(() => Object.assign(bench.info, {
  version: ort.env.versions.web, numThreads: ort.env.wasm.numThreads,
}));
