// The MNIST drawing demo (served at /mnist by `pyrite serve`).
//
// Draw on the pad with a mouse, pen or finger; the drawing is turned into a 28x28 MNIST-style
// image (cropped, scaled to fit 20x20, centred by its centre of mass, grey levels 0..255, white
// on black) and classified by the demo's Python model: in this page through pyrite.js (WebGPU,
// or numpy in Pyodide when the server offers it), or, when the page cannot run it and the user
// asks for it, by the server's POST /api/predict/mnist. The page says which one ran.
//
// For tests and the console: window.mnistDemo = {ready, lastResult, lastInput, lastError,
// predictions, version, predictedVersion, busy, mode, predictPixels(pixels), clear()}.
// `version` counts changes to the drawing, `predictedVersion` is the version of the last
// prediction that finished (with a result or an error).

const SIDE = 28; // MNIST's field
const DEBOUNCE_MS = 150; // predict this long after the pen last moved (and at pen-up)

const meta = (name, fallback) =>
  document.querySelector(`meta[name="${name}"]`)?.getAttribute("content") || fallback;
const BUNDLE = new URL(meta("pyrite-bundle", "/"), location.href);
const API = new URL(meta("pyrite-api", "/api/"), location.href);
// the bundle's preprocessing, shared with the <pyrite-mnist> element
const { toMnistInput } = await import(new URL("mnist-input.js", BUNDLE).href);

const $ = (id) => document.getElementById(id);
const el = {
  status: $("status"), statusText: $("status-text"), progress: $("progress"),
  fallback: $("fallback"), fallbackReason: $("fallback-reason"), useServer: $("use-server"),
  pad: $("pad"), hint: $("hint"), clear: $("clear"), input: $("input28"),
  prediction: $("prediction"), confidence: $("confidence"), bars: $("bars"),
  backend: $("backend"), timing: $("timing"), error: $("error"), result: $("result"),
};

let resolveReady;
const demo = {
  ready: new Promise((resolve) => { resolveReady = resolve; }),
  lastResult: null, lastInput: null, lastError: null,
  predictions: 0, version: 0, predictedVersion: 0, busy: false,
  mode: null, // "page" (pyrite in this page) or "server" (POST /api/predict/mnist); null: none yet
  predictPixels: (pixels) => exclusive(() => runPrediction(pixels, demo.version)),
  clear: () => clear(),
};
window.mnistDemo = demo;

let pyrite = null; // the pyrite.js module, once imported
let pageBackend = "–"; // how the page's device is described, e.g. "WebGPU in this page (...)"

// ---- drawing ------------------------------------------------------------------------------

const ctx = el.pad.getContext("2d", { willReadFrequently: true });
let PEN = el.pad.width / 14; // a comfortable pen: strokes near MNIST's once scaled to 20 px
let stroke = null; // the stroke being drawn: {id, last, mid}
let hasInk = false;

// Once, at start: as many canvas pixels as the pad has device pixels (crisp on phones), within
// bounds. Everything after is in canvas pixels, so the size changes nothing but sharpness.
function sizePad() {
  const shown = el.pad.getBoundingClientRect().width * (window.devicePixelRatio || 1);
  if (shown > 0) {
    el.pad.width = el.pad.height = Math.round(Math.min(1024, Math.max(280, shown)));
    PEN = el.pad.width / 14;
  }
}

function resetPad() {
  ctx.fillStyle = "#000";
  ctx.fillRect(0, 0, el.pad.width, el.pad.height);
  ctx.strokeStyle = ctx.fillStyle = "#fff";
  ctx.lineWidth = PEN;
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
}

function point(event) {
  const box = el.pad.getBoundingClientRect();
  return {
    x: ((event.clientX - box.left) * el.pad.width) / box.width,
    y: ((event.clientY - box.top) * el.pad.height) / box.height,
  };
}

function changed() {
  demo.version += 1;
  if (!hasInk) {
    hasInk = true;
    el.hint.hidden = true;
  }
}

function startStroke(event) {
  if (stroke || (event.pointerType === "mouse" && event.button !== 0)) return;
  event.preventDefault();
  el.pad.setPointerCapture(event.pointerId);
  const p = point(event);
  stroke = { id: event.pointerId, last: p, mid: p };
  ctx.beginPath();
  ctx.arc(p.x, p.y, PEN / 2, 0, 2 * Math.PI);
  ctx.fill();
  changed();
  schedule(DEBOUNCE_MS);
}

// Smooth strokes: a quadratic curve through the midpoints of successive pointer positions.
function extendStroke(p) {
  const mid = { x: (stroke.last.x + p.x) / 2, y: (stroke.last.y + p.y) / 2 };
  ctx.beginPath();
  ctx.moveTo(stroke.mid.x, stroke.mid.y);
  ctx.quadraticCurveTo(stroke.last.x, stroke.last.y, mid.x, mid.y);
  ctx.stroke();
  stroke.last = p;
  stroke.mid = mid;
}

function moveStroke(event) {
  if (!stroke || event.pointerId !== stroke.id) return;
  event.preventDefault();
  const events = event.getCoalescedEvents ? event.getCoalescedEvents() : [];
  for (const e of events.length ? events : [event]) extendStroke(point(e));
  changed();
  schedule(DEBOUNCE_MS);
}

function endStroke(event) {
  if (!stroke || event.pointerId !== stroke.id) return;
  ctx.beginPath();
  ctx.moveTo(stroke.mid.x, stroke.mid.y);
  ctx.lineTo(stroke.last.x, stroke.last.y);
  ctx.stroke();
  stroke = null;
  changed();
  schedule(0);
}

function clear() {
  stroke = null;
  resetPad();
  hasInk = false;
  el.hint.hidden = false;
  demo.version += 1;
  schedule(0);
}

// ---- preprocessing: the drawing as MNIST would have it (the bundle's mnist-input.js) ------

/** The drawing as 784 grey levels (0..255, row-major 28x28), or null when the pad is blank. */
function preprocess() {
  const { width, height } = el.pad;
  return toMnistInput(ctx.getImageData(0, 0, width, height).data, width, height);
}

function showInput(pixels) {
  const image = new ImageData(SIDE, SIDE);
  for (let i = 0; i < SIDE * SIDE; i++) {
    const v = pixels ? pixels[i] : 0;
    image.data.set([v, v, v, 255], 4 * i);
  }
  el.input.getContext("2d").putImageData(image, 0, 0);
}

// ---- predicting: debounced, one at a time, the latest drawing wins ------------------------

let timer = null;
let wanted = false; // a prediction of the current drawing is wanted

function schedule(delay) {
  clearTimeout(timer);
  timer = setTimeout(() => {
    timer = null;
    wanted = true;
    pump();
  }, delay);
}

async function pump() {
  if (demo.busy || !wanted) return;
  wanted = false;
  const version = demo.version;
  const pixels = preprocess();
  showInput(pixels);
  if (!pixels) {
    showEmpty();
    demo.predictedVersion = version;
    return;
  }
  if (!demo.mode) {
    wanted = true; // predicted once something can predict (see start, useServer)
    return;
  }
  await exclusive(() => runPrediction(pixels, version));
}

async function exclusive(task) {
  while (demo.busy) await new Promise((resolve) => setTimeout(resolve, 10));
  demo.busy = true;
  try {
    return await task();
  } finally {
    demo.busy = false;
    pump(); // a drawing that changed meanwhile
  }
}

async function runPrediction(pixels, version) {
  try {
    if (!demo.mode) throw new Error("nothing can predict yet: the model is not loaded");
    const predict = demo.mode === "page" ? predictInPage : predictOnServer;
    const result = await predict(pixels);
    result.version = version;
    demo.predictions += 1;
    demo.lastResult = result;
    demo.lastInput = pixels;
    demo.lastError = null;
    // a result for a drawing cleared meanwhile is not shown (its successor comes next)
    if (hasInk) showResult(result);
    return result;
  } catch (err) {
    demo.lastError = { message: err.message, type: err.pythonType || err.name };
    showError(err);
    return null;
  } finally {
    demo.predictedVersion = version;
  }
}

async function predictInPage(pixels) {
  const result = await pyrite.predict("mnist", { pixels });
  result.where = "page";
  result.backendLabel = pageBackend;
  return result;
}

async function predictOnServer(pixels) {
  const start = performance.now();
  let response;
  try {
    response = await fetch(new URL("predict/mnist", API), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ pixels }),
    });
  } catch (err) {
    throw new Error(`the server could not be reached (${err.message})`);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok || !body) {
    const err = new Error(body?.error ||
      `the server answered ${response.status} ${response.statusText}`);
    err.pythonType = `HTTP ${response.status}`;
    throw err;
  }
  body.roundTripMs = performance.now() - start;
  body.where = "server";
  body.backendLabel = `${String(body.backend).replace(/\s*\(server\)$/, "")} on the server`;
  return body;
}

// ---- showing results ----------------------------------------------------------------------

const bars = [];
for (let digit = 0; digit < 10; digit++) {
  const item = document.createElement("li");
  item.innerHTML = `<span class="digit">${digit}</span>` +
    `<span class="track"><span class="fill"></span></span><span class="pct">–</span>`;
  el.bars.append(item);
  bars.push({ item, fill: item.querySelector(".fill"), pct: item.querySelector(".pct") });
}

function percent(p) {
  if (p >= 0.9995) return p === 1 ? "100 %" : "> 99.9 %";
  return `${(100 * p).toFixed(p < 0.0005 ? 0 : 1)} %`;
}
const millis = (ms) => `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;

function span(className, text) {
  const node = document.createElement("span");
  node.className = className;
  node.textContent = text;
  return node;
}

function showResult(result) {
  const { label, probabilities } = result;
  el.prediction.textContent = String(label);
  el.prediction.dataset.label = String(label);
  el.confidence.textContent = `${percent(probabilities[label])} sure`;
  bars.forEach((bar, digit) => {
    const p = probabilities[digit];
    bar.fill.style.width = `${(100 * p).toFixed(2)}%`;
    bar.pct.textContent = percent(p);
    bar.item.classList.toggle("top", digit === label);
    bar.item.setAttribute("aria-label", `${digit}: ${percent(p)}`);
  });
  el.backend.textContent = result.backendLabel;
  el.backend.dataset.where = result.where;
  const onServer = result.where === "server";
  const lines = [`${onServer ? "on the server" : "in Python"} · ${millis(result.roundTripMs)} ` +
    `${onServer ? "with the request" : "round trip"}`];
  if (result.dispatches !== undefined) {
    lines.push(`${result.dispatches} GPU dispatches, ${result.readbacks} readback` +
      `${result.readbacks === 1 ? "" : "s"} (${millis(result.readback_ms)})`);
  }
  el.timing.replaceChildren(span("value", millis(result.ms)),
    ...lines.map((line) => span("sub", line)));
  el.timing.dataset.ms = String(result.ms);
  el.error.hidden = !result.recovered;
  // the GPU device was lost and pyrite restored it before answering: say so
  if (result.recovered) el.error.textContent = `Note: ${result.recovered}.`;
  el.result.classList.remove("stale");
}

function showEmpty() {
  el.prediction.textContent = "?";
  el.prediction.dataset.label = "";
  el.confidence.textContent = "No digit yet";
  for (const bar of bars) {
    bar.fill.style.width = "0";
    bar.pct.textContent = "–";
    bar.item.classList.remove("top");
    bar.item.removeAttribute("aria-label");
  }
  el.error.hidden = true;
  el.result.classList.remove("stale");
}

function showError(err) {
  const kind = err.pythonType && err.pythonType !== "Error" ? `${err.pythonType}: ` : "";
  el.error.textContent = `The prediction failed: ${kind}${err.message}`;
  el.error.hidden = false;
  el.result.classList.add("stale"); // what is shown is not an answer for this drawing
  if (err.pythonType === "DeviceLostError" && demo.mode === "page") {
    offerServer(`The GPU device was lost: ${err.message}`);
  }
}

// ---- loading ------------------------------------------------------------------------------

const STAGES = {
  manifest: [1, () => "Reading the bundle's manifest…"],
  pyodide: [2, (e) => `Starting Python (Pyodide ${e.version ?? ""})…`],
  wheels: [3, () => "Installing pyrite…"],
  device: [4, () => "Starting the device…"],
  model: [5, () => "Loading the MNIST model…"],
  ready: [6, () => "Warming up the model (compiling its kernels)…"],
};

function setState(state, text, details = "") {
  el.status.dataset.state = state;
  el.statusText.replaceChildren(text, ...(details ? [" ", span("details", details)] : []));
  el.progress.hidden = state !== "loading";
}

function describeDevice(got) {
  if (got.device === "webgpu") {
    // "#0 google swiftshader (CPU, WebGPU (browser))" -> "google swiftshader"
    const inUse = String(got.adapter?.["in use"] ?? "");
    const name = inUse.replace(/^#\d+\s+/, "").replace(/\s*\(.*$/, "") || got.adapter?.vendor;
    return name ? `WebGPU in this page (${name})` : "WebGPU in this page";
  }
  return `${got.device} in this page (Pyodide)`;
}

let serverAvailable = false;

function offerServer(reason) {
  el.fallbackReason.textContent = reason;
  if (serverAvailable) {
    setState("fallback", "This browser cannot run the model in the page.");
    el.fallback.hidden = false;
    el.useServer.hidden = false;
  } else {
    setState("error", "This browser cannot run the model in the page, and no server answers at " +
      `${API.pathname} to run it instead.`);
    el.fallback.hidden = false;
    el.useServer.hidden = true;
  }
  if (demo.mode === "page") demo.mode = null;
  resolveReady({ state: el.status.dataset.state, reason });
}

function useServer() {
  demo.mode = "server";
  el.status.dataset.mode = "server";
  el.statusText.textContent = "Predicting on the server: this page sends your drawing to it.";
  el.useServer.hidden = true;
  el.backend.textContent = "the server";
  wanted = true;
  pump();
}

async function getConfig() {
  try {
    const response = await fetch(new URL("config", API), { cache: "no-cache" });
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  }
}

async function start() {
  setState("loading", "Checking this browser…");
  const configLoading = getConfig();
  try {
    pyrite = await import(new URL("pyrite.js", BUNDLE).href);
  } catch (err) {
    const config = await configLoading;
    serverAvailable = Boolean(config?.models?.includes("mnist"));
    offerServer(`pyrite.js could not be loaded from ${BUNDLE.pathname}: ${err.message}`);
    return;
  }
  const [config, gpu] = await Promise.all([
    configLoading,
    pyrite.hasWebGPU().catch((err) => ({
      ok: false, reason: `requesting a WebGPU adapter failed: ${err.message}`,
    })),
  ]);
  serverAvailable = Boolean(config?.models?.includes("mnist"));
  const packages = config?.pyodide_packages || null; // where Pyodide's numpy can be loaded from
  if (!gpu.ok && !packages) {
    offerServer(`No WebGPU here: ${gpu.reason}. The other way to run the model in this page, ` +
      "numpy for Pyodide, is not offered by this server.");
    return;
  }
  try {
    const got = await pyrite.load({
      device: "auto", models: ["mnist"], pyodidePackages: packages ?? undefined,
      onProgress: (event) => {
        const stage = STAGES[event.stage];
        if (!stage) return;
        el.progress.value = stage[0];
        el.statusText.textContent = stage[1](event);
      },
    });
    pageBackend = describeDevice(got);
    // the first prediction compiles the kernels: done now, not on the user's first stroke
    await pyrite.predict("mnist", { pixels: new Array(SIDE * SIDE).fill(0) });
    el.progress.value = el.progress.max;
    const t = got.timings;
    const seconds = (ms) => (ms / 1000).toFixed(1);
    let details = `· loaded in ${seconds(t.totalMs)} s (Python ${seconds(t.pyodideMs)} s, ` +
      `pyrite ${seconds(t.installMs)} s, model ${seconds(t.modelsMs)} s)`;
    if (got.device !== "webgpu" && got.unavailable?.webgpu) {
      details += `. No WebGPU: ${got.unavailable.webgpu}`;
    }
    setState("ready", `Ready · ${pageBackend}`, details);
    el.backend.textContent = pageBackend;
    demo.mode = "page";
    resolveReady({ state: "ready", device: got.device, backend: pageBackend, timings: t });
    wanted = true; // whatever was drawn while loading
    pump();
  } catch (err) {
    const kind = err.pythonType && err.pythonType !== "Error" ? `${err.pythonType}: ` : "";
    offerServer(`pyrite could not start in this page: ${kind}${err.message}`);
  }
}

// ---- wiring -------------------------------------------------------------------------------

sizePad();
resetPad();
showInput(null);
el.pad.addEventListener("pointerdown", startStroke);
el.pad.addEventListener("pointermove", moveStroke);
el.pad.addEventListener("pointerup", endStroke);
el.pad.addEventListener("pointercancel", endStroke);
el.pad.addEventListener("lostpointercapture", endStroke);
el.clear.addEventListener("click", clear);
el.useServer.addEventListener("click", useServer);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !event.target.closest?.("input, textarea, select")) clear();
});
start();
