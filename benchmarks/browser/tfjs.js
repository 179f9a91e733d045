// TensorFlow.js peer: the guide CNN with the layers API, weights from build/tfjs.{json,bin}.
// ?backend=webgpu|wasm
import { MEAN, STD, loadScript, param, publish } from "./bench.js";

const backend = param("backend", "webgpu");
const TF = "node_modules/@tensorflow";
let tf;
let model;

async function load() {
  await loadScript(`${TF}/tfjs/dist/tf.min.js`);
  await loadScript(`${TF}/tfjs-backend-${backend}/dist/tf-backend-${backend}.min.js`);
  tf = window.tf;
  if (backend === "wasm") {
    tf.wasm.setWasmPaths(new URL(`${TF}/tfjs-backend-wasm/dist/`, location.href).href);
  }
  if (!(await tf.setBackend(backend))) throw new Error(`TF.js backend ${backend} unavailable`);
  await tf.ready();
  const [manifest, blob] = await Promise.all([
    fetch("build/tfjs.json").then((r) => r.json()),
    fetch("build/tfjs.bin").then((r) => r.arrayBuffer()),
  ]);
  const floats = new Float32Array(blob);
  const size = (shape) => shape.reduce((a, b) => a * b, 1);
  const weights = manifest.map(({ shape, offset }) =>
    tf.tensor(floats.subarray(offset, offset + size(shape)), shape));
  model = tf.sequential({
    layers: [
      tf.layers.conv2d({ inputShape: [28, 28, 1], filters: 8, kernelSize: 3 }),
      tf.layers.conv2d({ filters: 16, kernelSize: 3, activation: "relu" }),
      tf.layers.averagePooling2d({ poolSize: 3, strides: 3 }),
      tf.layers.flatten(),
      tf.layers.dense({ units: 512, activation: "relu" }),
      tf.layers.dense({ units: 10, activation: "softmax" }),
    ],
  });
  model.setWeights(weights);
  weights.forEach((w) => w.dispose());
}

async function run(pixels) {
  const y = tf.tidy(() =>
    model.predict(tf.tensor(pixels, [1, 28, 28, 1]).div(255).sub(MEAN).div(STD)));
  const probabilities = await y.data();
  y.dispose();
  return probabilities;
}

const bench = publish({ framework: "tfjs", backend }, load, run);
bench.ready.then(() => Object.assign(bench.info, { version: tf.version.tfjs }));
