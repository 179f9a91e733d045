// The image classification demo (served at /classify by `pyrite serve`).
//
// Pick one of the server's sample photos (GET /api/samples) or upload your own (JPEG, PNG or
// WebP, checked for size before it is decoded); the browser decodes it (createImageBitmap) and
// a canvas scales it so that its shorter side is 256 and cuts the centre 227x227, as the model
// was trained. Those RGB pixels go to the demo's Python (demos/image_classification/predict.py)
// through pyrite.js: in this page on WebGPU (or numpy in Pyodide), or, when the page cannot
// run it and the user asks, on the server (POST /api/predict/squeezenet). The page shows the
// five likeliest ImageNet classes, where the model ran and how long it took. Loading, the
// status bar and the server fallback are the demo pages' shared code (demos/page/demo.js).
//
// For tests and the console: window.classifyDemo = {ready, lastResult, lastInput (the RGB
// pixels of the latest prediction), lastError, photoError, predictions, version,
// predictedVersion, busy, mode, samples, classifySample(file), classifyFile(blob, name)}.
// `version` counts the photos chosen, `predictedVersion` is the version of the last one done
// with (predicted, or refused with an error).

import { $, API, DemoPage, percent } from "/demos/shared/demo.js";

const SIDE = 227; // the model's input
const SHORTER_SIDE = 256; // the photo is scaled to this, then its centre SIDE x SIDE is cut
const MAX_BYTES = 10_000_000;
const MAX_PIXELS_SIDE = 8000;
const TOP = 5;
const UNSURE_BELOW = 0.3; // a best guess below this probability is shown as low confidence

const el = {
  panel: $("photo-panel"), samples: $("samples"), samplesHint: $("samples-hint"),
  file: $("file"), photoError: $("photo-error"), photo: $("photo"), placeholder: $("placeholder"),
  input: $("input227"), photoName: $("photo-name"), resize: $("resize-note"),
  prediction: $("prediction"), confidence: $("confidence"), names: $("names"), bars: $("bars"),
};

const page = new DemoPage({
  model: "squeezenet", what: "the SqueezeNet model", sends: "the photo's 227 × 227 pixels",
  warmup: () => ({ pixels: new Uint8Array(SIDE * SIDE * 3) }),
  onMode: () => pump(),
});

const demo = {
  ready: page.ready,
  lastResult: null, lastInput: null, lastError: null, photoError: null,
  predictions: 0, version: 0, predictedVersion: 0, busy: false, samples: [],
  // "page" (pyrite in this page) or "server" (POST /api/predict/squeezenet); null: none yet
  get mode() { return page.mode; },
  classifySample: (file) => classifySample(file),
  classifyFile: (blob, name) => classifyFile(blob, name),
};
window.classifyDemo = demo;

// ---- reading a photo: checked before it is decoded ------------------------------------------

class PhotoError extends Error {}

const be16 = (b, i) => (b[i] << 8) | b[i + 1];
const le16 = (b, i) => b[i] | (b[i + 1] << 8);
const le24 = (b, i) => b[i] | (b[i + 1] << 8) | (b[i + 2] << 16);
const ascii = (b, i, n) => String.fromCharCode(...b.subarray(i, i + n));

/** The format and the size its header declares ({type, width, height}), or null for a file
 * that is not a JPEG, PNG or WebP image; width and height are 0 when the header does not say. */
function imageHeader(b) {
  if (b.length >= 24 && b[0] === 0x89 && ascii(b, 1, 3) === "PNG") {
    const dv = new DataView(b.buffer, b.byteOffset);
    return { type: "PNG", width: dv.getUint32(16), height: dv.getUint32(20) };
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) {
    for (let i = 2; i + 9 < b.length;) {
      if (b[i] !== 0xff) break;
      const marker = b[i + 1];
      if (marker === 0xff) { i += 1; continue; } // fill byte
      // start of frame (baseline, progressive, ...): not DHT (c4), JPG (c8) nor DAC (cc)
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { type: "JPEG", width: be16(b, i + 7), height: be16(b, i + 5) };
      }
      if (marker === 0xd9 || marker === 0xda) break; // end of image, start of scan
      i += 2 + be16(b, i + 2);
    }
    return { type: "JPEG", width: 0, height: 0 };
  }
  if (b.length >= 30 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 4) === "WEBP") {
    const chunk = ascii(b, 12, 4);
    if (chunk === "VP8 ") return { type: "WebP", width: le16(b, 26) & 0x3fff, height: le16(b, 28) & 0x3fff };
    if (chunk === "VP8L") {
      return { type: "WebP", width: 1 + (((b[22] & 0x3f) << 8) | b[21]),
        height: 1 + (((b[24] & 0xf) << 10) | (b[23] << 2) | ((b[22] & 0xc0) >> 6)) };
    }
    if (chunk === "VP8X") return { type: "WebP", width: 1 + le24(b, 24), height: 1 + le24(b, 27) };
    return { type: "WebP", width: 0, height: 0 };
  }
  return null;
}

const megabytes = (n) => `${Number((n / 1e6).toFixed(1))} MB`; // "11 MB", "10.5 MB"

function checkSize(name, width, height) {
  if (width > MAX_PIXELS_SIDE || height > MAX_PIXELS_SIDE) {
    throw new PhotoError(`${name} is ${width} × ${height} pixels; photos may be at most ` +
      `${MAX_PIXELS_SIDE} pixels a side. Scale it down and try again.`);
  }
}

/** The photo decoded, after checking its size, format and declared dimensions. */
async function decode(blob, name) {
  if (blob.size > MAX_BYTES) {
    throw new PhotoError(`${name} is ${megabytes(blob.size)}; photos may be at most ` +
      `${megabytes(MAX_BYTES)}. Pick a smaller one.`);
  }
  if (blob.size === 0) throw new PhotoError(`${name} is empty.`);
  const header = imageHeader(new Uint8Array(await blob.arrayBuffer()));
  if (!header) {
    // blob.type comes from the file's name, not its content: "photo.jpg" may hold text
    const named = !blob.type ? "" : blob.type.startsWith("image/")
      ? ` (its name says ${blob.type}, but its content is not)` : ` (it is ${blob.type})`;
    throw new PhotoError(`${name} is not a JPEG, PNG or WebP image${named}. Pick a photo in ` +
      "one of those formats.");
  }
  checkSize(name, header.width, header.height);
  let bitmap;
  try {
    bitmap = await createImageBitmap(blob, { imageOrientation: "from-image" });
  } catch {
    throw new PhotoError(`${name} looks like a ${header.type} image but could not be decoded ` +
      "(a damaged or incomplete file?).");
  }
  try {
    checkSize(name, bitmap.width, bitmap.height);
  } catch (err) {
    bitmap.close();
    throw err;
  }
  return bitmap;
}

// The centre crop as the Caffe model was trained (and as `pyrite infer squeezenet` does with
// Pillow): the photo scaled to a shorter side of 256 (sizes rounded), the SIDE x SIDE square at
// the centre (offsets rounded down) cut out; expressed in the photo's own pixels for drawImage.
function cropOf(width, height) {
  const scale = SHORTER_SIDE / Math.min(width, height);
  const w = Math.max(SIDE, Math.round(width * scale));
  const h = Math.max(SIDE, Math.round(height * scale));
  const left = Math.floor((w - SIDE) / 2);
  const top = Math.floor((h - SIDE) / 2);
  return { sx: (left * width) / w, sy: (top * height) / h, sw: (SIDE * width) / w,
    sh: (SIDE * height) / h, w, h };
}

// How a photo becomes the model's input, in words, under "What the model sees": the preview
// shows the whole photo, the model only the centre square of the scaled one
function describeResize(width, height) {
  const { w, h } = cropOf(width, height);
  const cut = w > h ? "its left and right ends" : h > w ? "its top and bottom" : "its edges";
  return `${width} × ${height} photo, scaled to ${w} × ${h}; the model sees its centre ` +
    `${SIDE} × ${SIDE}, not ${cut} (the preview shows it all). \`pyrite infer squeezenet\` ` +
    "cuts the same square.";
}

const inputContext = el.input.getContext("2d", { willReadFrequently: true });

/** The model's input: SIDE x SIDE RGB bytes, row-major (drawn on the "what the model sees"
 * canvas on the way). */
function toPixels(bitmap) {
  const { sx, sy, sw, sh } = cropOf(bitmap.width, bitmap.height);
  const ctx = inputContext;
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  ctx.fillStyle = "#fff"; // under transparent parts
  ctx.fillRect(0, 0, SIDE, SIDE);
  ctx.drawImage(bitmap, sx, sy, sw, sh, 0, 0, SIDE, SIDE);
  const rgba = ctx.getImageData(0, 0, SIDE, SIDE).data;
  const rgb = new Uint8Array(SIDE * SIDE * 3);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) {
    rgb[j] = rgba[i];
    rgb[j + 1] = rgba[i + 1];
    rgb[j + 2] = rgba[i + 2];
  }
  return rgb;
}

// ---- choosing a photo ---------------------------------------------------------------------

let shownUrl = null; // the object URL of the photo shown

function showPhoto(blob, name) {
  if (shownUrl) URL.revokeObjectURL(shownUrl);
  shownUrl = URL.createObjectURL(blob);
  el.photo.src = shownUrl;
  el.photo.alt = `The photo to classify: ${name}`;
  el.photo.hidden = false;
  el.placeholder.hidden = true;
  el.photoName.textContent = name;
}

function showPhotoError(err) {
  demo.photoError = err.message;
  el.photoError.textContent = err instanceof PhotoError ? err.message
    : `That photo could not be read: ${err.message}`;
  el.photoError.hidden = false;
}

let wanted = null; // {pixels, version, name}: the latest photo, waiting for a prediction

/** Read, check and show a photo, then classify it (the latest photo chosen wins). `version`
 * is the photo's number, taken when it was chosen. */
async function classifyFile(blob, name, version = ++demo.version) {
  el.photoError.hidden = true;
  demo.photoError = null;
  let bitmap;
  try {
    bitmap = await decode(blob, name);
  } catch (err) {
    if (version === demo.version) {
      showPhotoError(err);
      demo.predictedVersion = version; // nothing to predict: done with it
    }
    return null;
  }
  if (version !== demo.version) { // another photo was chosen meanwhile
    bitmap.close();
    return null;
  }
  showPhoto(blob, name);
  el.resize.textContent = describeResize(bitmap.width, bitmap.height);
  const pixels = toPixels(bitmap);
  bitmap.close();
  wanted = { pixels, version, name };
  showPending(name);
  return pump();
}

async function classifySample(file) {
  const sample = demo.samples.find((s) => s.file === file);
  if (!sample) throw new Error(`no sample photo ${JSON.stringify(file)}`);
  const version = ++demo.version; // chosen now, before it is fetched
  for (const button of el.samples.querySelectorAll("button")) {
    button.setAttribute("aria-pressed", String(button.dataset.file === file));
  }
  let blob;
  try {
    const response = await fetch(sample.url);
    if (!response.ok) throw new Error(`${sample.url} answered ${response.status}`);
    blob = await response.blob();
  } catch (err) {
    if (version === demo.version) {
      showPhotoError(new PhotoError(`The sample ${file} could not be fetched: ${err.message}`));
      demo.predictedVersion = version;
    }
    return null;
  }
  if (version !== demo.version) return null; // another photo was chosen meanwhile
  return classifyFile(blob, sample.file, version);
}

function chooseFile(file) {
  for (const button of el.samples.querySelectorAll("button")) {
    button.setAttribute("aria-pressed", "false");
  }
  return classifyFile(file, file.name);
}

// ---- predicting: one at a time, the latest photo wins --------------------------------------

async function pump() {
  if (demo.busy || !wanted || !page.mode) return null; // (onMode pumps once the model is ready)
  const { pixels, version, name } = wanted;
  wanted = null;
  demo.busy = true;
  try {
    const result = await page.predict({ pixels });
    result.version = version;
    result.photo = name;
    demo.predictions += 1;
    demo.lastResult = result;
    demo.lastInput = pixels;
    demo.lastError = null;
    if (version === demo.version) showResult(result);
    return result;
  } catch (err) {
    demo.lastError = { message: err.message, type: err.pythonType || err.name };
    if (version === demo.version) page.showError(err);
    return null;
  } finally {
    demo.predictedVersion = Math.max(demo.predictedVersion, version);
    demo.busy = false;
    if (wanted) pump();
  }
}

// ---- showing results ----------------------------------------------------------------------

const bars = [];
for (let rank = 0; rank < TOP; rank++) {
  const item = document.createElement("li");
  item.innerHTML = '<span class="name"></span><span class="track"><span class="fill"></span>' +
    '</span><span class="pct">–</span>';
  el.bars.append(item);
  bars.push({ item, name: item.querySelector(".name"), fill: item.querySelector(".fill"),
    pct: item.querySelector(".pct") });
}

function showPending(name) {
  if (!page.mode) {
    const loading = page.el.status.dataset.state === "loading";
    el.confidence.textContent = loading ? `${name} will be classified once the model is ready`
      : `${name} cannot be classified: see the message above`;
  }
  page.el.result.classList.add("stale");
}

function showResult(result) {
  const { top } = result;
  el.prediction.textContent = result.label;
  el.prediction.dataset.label = result.label;
  el.prediction.dataset.index = String(result.index);
  const unsure = result.probability < UNSURE_BELOW;
  el.confidence.textContent = `${percent(result.probability)} sure` + (unsure
    ? ". Low confidence: the model is unsure (none of its 1000 classes may be in the photo)."
    : "");
  el.confidence.dataset.doubt = unsure ? "yes" : "";
  el.names.textContent = top[0].text === top[0].label ? "" : top[0].text;
  bars.forEach((bar, rank) => {
    const c = top[rank];
    bar.name.textContent = c ? c.label : "";
    bar.name.title = c ? `${c.text} (class ${c.index}, ${c.wnid})` : "";
    bar.fill.style.width = c ? `${(100 * c.probability).toFixed(2)}%` : "0";
    bar.pct.textContent = c ? percent(c.probability) : "–";
    bar.item.classList.toggle("top", rank === 0);
    if (c) bar.item.setAttribute("aria-label", `${c.label}: ${percent(c.probability)}`);
  });
  page.showFacts(result);
}

// ---- the samples ----------------------------------------------------------------------------

async function loadSamples() {
  let listing = null;
  try {
    const response = await fetch(new URL("samples", API), { cache: "no-cache" });
    listing = response.ok ? await response.json() : null;
  } catch {
    listing = null;
  }
  demo.samples = listing?.samples || [];
  for (const sample of demo.samples) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "sample";
    button.dataset.file = sample.file;
    button.setAttribute("aria-pressed", "false");
    button.setAttribute("aria-label", `Classify the sample photo ${sample.name}`);
    const img = document.createElement("img");
    img.src = sample.url;
    img.alt = "";
    img.loading = "lazy";
    img.decoding = "async";
    const label = document.createElement("span");
    label.textContent = sample.name;
    button.append(img, label);
    button.addEventListener("click", () => classifySample(sample.file));
    el.samples.append(button);
  }
  el.samplesHint.textContent = demo.samples.length ? "" : (listing?.hint ||
    "This server offers no sample photos: upload one of yours.");
  el.samplesHint.hidden = !el.samplesHint.textContent;
}

// ---- wiring -------------------------------------------------------------------------------

el.file.addEventListener("change", () => {
  const [file] = el.file.files;
  if (file) chooseFile(file);
  el.file.value = ""; // choosing the same file again is a change too
});
el.panel.addEventListener("dragover", (event) => {
  if (!event.dataTransfer?.types?.includes("Files")) return;
  event.preventDefault();
  el.panel.classList.add("dropping");
});
el.panel.addEventListener("dragleave", () => el.panel.classList.remove("dropping"));
el.panel.addEventListener("drop", (event) => {
  el.panel.classList.remove("dropping");
  const [file] = event.dataTransfer?.files || [];
  if (!file) return;
  event.preventDefault();
  chooseFile(file);
});
loadSamples();
page.start();
