// TensorFlow.js peer of benchmarks/train_browser.py: Burn's guide MNIST CNN trained with
// model.fit (layers API), batch 64, Adam lr 1e-4, on the "webgpu", "wasm" or "cpu" backend.
//
//   await window.fitBench.setup({backend, images, labels, batch})   // -> {version, backend, ...}
//   await window.fitBench.fit(epochs)                              // -> {ms, steps, losses}
//
// `images` is base64 of n*784 MNIST bytes (row-major 28x28, 0..255), `labels` n digits; one
// epoch is n / batch steps over them in order (no shuffle). Each step's loss is read back to JS
// (a callback's onBatchEnd resolves the logs), as pyrite's Learner reads its loss every step.
// Nothing is loaded until setup() is called.

const TF = "node_modules/@tensorflow";
const MEAN = 0.1307;
const STD = 0.3081;
let tf = null;
let model = null;
let xs = null;
let ys = null;
let batchSize = 64;

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(script);
  });
}

// The guide model, layer for layer (pyrite.demos.mnist.Model), NHWC: conv 1->8 3x3 valid,
// dropout, conv 8->16 3x3, dropout, relu, average pool 3x3 stride 3 (24 -> 8, what the
// adaptive pool to 8x8 computes here), flatten, dense 1024->512, dropout, relu, dense 512->10.
// Softmax + sparse categorical cross-entropy is pyrite's cross-entropy on logits.
function guideModel() {
  const L = tf.layers;
  return tf.sequential({
    layers: [
      L.conv2d({ inputShape: [28, 28, 1], filters: 8, kernelSize: 3, padding: "valid" }),
      L.dropout({ rate: 0.5 }),
      L.conv2d({ filters: 16, kernelSize: 3, padding: "valid" }),
      L.dropout({ rate: 0.5 }),
      L.activation({ activation: "relu" }),
      L.averagePooling2d({ poolSize: 3, strides: 3 }),
      L.flatten(),
      L.dense({ units: 512 }),
      L.dropout({ rate: 0.5 }),
      L.activation({ activation: "relu" }),
      L.dense({ units: 10, activation: "softmax" }),
    ],
  });
}

async function setup({ backend, images, labels, batch }) {
  const t0 = performance.now();
  await loadScript(`${TF}/tfjs/dist/tf.min.js`);
  if (backend !== "cpu") {  // the cpu backend (plain JS) is in tf.min.js
    await loadScript(`${TF}/tfjs-backend-${backend}/dist/tf-backend-${backend}.min.js`);
  }
  tf = window.tf;
  if (backend === "wasm") {
    tf.wasm.setWasmPaths(new URL(`${TF}/tfjs-backend-wasm/dist/`, location.href).href);
  }
  if (!(await tf.setBackend(backend))) throw new Error(`TF.js backend ${backend} unavailable`);
  await tf.ready();
  batchSize = batch;
  const bytes = Uint8Array.from(atob(images), (c) => c.charCodeAt(0));
  const n = labels.length;
  if (bytes.length !== n * 784) throw new Error(`${bytes.length} bytes for ${n} images`);
  const pixels = new Float32Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) pixels[i] = (bytes[i] / 255 - MEAN) / STD;
  xs = tf.tensor4d(pixels, [n, 28, 28, 1]);
  ys = tf.tensor2d(Float32Array.from(labels), [n, 1]);
  model = guideModel();
  model.compile({
    optimizer: tf.train.adam(1e-4, 0.9, 0.999, 1e-5), // pyrite's (Burn's) Adam epsilon
    loss: "sparseCategoricalCrossentropy",
  });
  const flags = {};
  for (const name of ["WASM_HAS_SIMD_SUPPORT", "WASM_HAS_MULTITHREAD_SUPPORT"]) {
    try { flags[name] = await tf.env().getAsync(name); } catch { /* not this backend's */ }
  }
  return { version: tf.version.tfjs, backend: tf.getBackend(), params: model.countParams(),
    images: n, batch, flags, crossOriginIsolated: self.crossOriginIsolated,
    setupMs: performance.now() - t0 };
}

async function fit(epochs) {
  const losses = [];
  const t0 = performance.now();
  await model.fit(xs, ys, {
    batchSize, epochs, shuffle: false, verbose: 0, yieldEvery: "never",
    callbacks: { onBatchEnd: (_, logs) => { losses.push(logs.loss); } },
  });
  const ms = performance.now() - t0;
  return { ms, steps: losses.length, losses, tensors: tf.memory().numTensors };
}

window.fitBench = { setup, fit };
