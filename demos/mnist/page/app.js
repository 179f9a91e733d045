// The MNIST drawing demo (served at /mnist by `pyrite serve`).
//
// Draw on the pad with a mouse, pen or finger; the drawing is turned into a 28x28 MNIST-style
// image (cropped, scaled to fit 20x20, centred by its centre of mass, grey levels 0..255, white
// on black) and classified by the demo's Python model: in this page through pyrite.js (WebGPU,
// or numpy in Pyodide when the server offers it), or, when the page cannot run it and the user
// asks for it, by the server's POST /api/predict/mnist. The page says which one ran.
//
// Loading, the status bar, the server fallback and the facts under a prediction are the demo
// pages' shared code (demos/page/demo.js, served at /demos/shared/demo.js).
//
// For tests and the console: window.mnistDemo = {ready, lastResult, lastInput, lastError,
// predictions, version, predictedVersion, busy, mode, predictPixels(pixels), clear()}.
// `version` counts changes to the drawing, `predictedVersion` is the version of the last
// prediction that finished (with a result or an error).

import { $, BUNDLE, DemoPage, percent } from "/demos/shared/demo.js";

const SIDE = 28; // MNIST's field
const DEBOUNCE_MS = 150; // predict this long after the pen last moved (and at pen-up)

// the bundle's preprocessing, shared with the <pyrite-mnist> element
const { toMnistInput } = await import(new URL("mnist-input.js", BUNDLE).href);

const el = {
  pad: $("pad"), hint: $("hint"), clear: $("clear"), input: $("input28"),
  prediction: $("prediction"), confidence: $("confidence"), bars: $("bars"),
};

const page = new DemoPage({
  model: "mnist", what: "the MNIST model", sends: "your drawing",
  warmup: () => ({ pixels: new Array(SIDE * SIDE).fill(0) }),
  onMode: () => {
    wanted = true; // whatever was drawn while loading
    pump();
  },
});

const demo = {
  ready: page.ready,
  lastResult: null, lastInput: null, lastError: null,
  predictions: 0, version: 0, predictedVersion: 0, busy: false,
  // "page" (pyrite in this page) or "server" (POST /api/predict/mnist); null: none yet
  get mode() { return page.mode; },
  predictPixels: (pixels) => exclusive(() => runPrediction(pixels, demo.version)),
  clear: () => clear(),
};
window.mnistDemo = demo;

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
  if (!page.mode) {
    wanted = true; // predicted once something can predict (see onMode)
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
    const result = await page.predict({ pixels });
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

// ---- showing results ----------------------------------------------------------------------

const bars = [];
for (let digit = 0; digit < 10; digit++) {
  const item = document.createElement("li");
  item.innerHTML = `<span class="name digit">${digit}</span>` +
    `<span class="track"><span class="fill"></span></span><span class="pct">–</span>`;
  el.bars.append(item);
  bars.push({ item, fill: item.querySelector(".fill"), pct: item.querySelector(".pct") });
}

// When an answer deserves little trust. The model gives every drawing a digit, often with a
// high probability even for a dot or a scribble (it never saw one), so the drawing is judged
// too: MNIST's digits cover about a fifth of the 28 x 28 field, rarely more than a third, while a
// dot (scaled up to the 20-pixel box) or a scribble fills most of it.
const UNSURE_BELOW = 0.6; // the best guess's probability
const MAX_INK = 0.38; // the field's share of pixels above grey level 64

/** Why the answer for `pixels` is doubtful, or "" when nothing says so. */
export function doubt(pixels, probability) {
  let inked = 0;
  for (const v of pixels) if (v > 64) inked += 1;
  if (inked / pixels.length > MAX_INK) {
    return "This does not look like a digit (a dot or a scribble?): the model names a digit " +
      "for anything, so this answer means little.";
  }
  if (probability < UNSURE_BELOW) {
    return `Low confidence: the model is unsure (its best guess has ${percent(probability)}).`;
  }
  return "";
}

function showResult(result) {
  const { label, probabilities } = result;
  el.prediction.textContent = String(label);
  el.prediction.dataset.label = String(label);
  const why = doubt(demo.lastInput || [], probabilities[label]);
  el.confidence.textContent = `${percent(probabilities[label])} sure${why ? `. ${why}` : ""}`;
  el.confidence.dataset.doubt = why ? "yes" : "";
  bars.forEach((bar, digit) => {
    const p = probabilities[digit];
    bar.fill.style.width = `${(100 * p).toFixed(2)}%`;
    bar.pct.textContent = percent(p);
    bar.item.classList.toggle("top", digit === label);
    bar.item.setAttribute("aria-label", `${digit}: ${percent(p)}`);
  });
  page.showFacts(result);
}

function showEmpty() {
  el.prediction.textContent = "?";
  el.prediction.dataset.label = "";
  el.confidence.textContent = "No digit yet";
  el.confidence.dataset.doubt = "";
  for (const bar of bars) {
    bar.fill.style.width = "0";
    bar.pct.textContent = "–";
    bar.item.classList.remove("top");
    bar.item.removeAttribute("aria-label");
  }
  page.hideError();
}

// what is shown is marked stale: it is not an answer for this drawing
const showError = (err) => page.showError(err);

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
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !event.target.closest?.("input, textarea, select")) clear();
});
page.start();
