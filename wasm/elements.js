// pyrite's custom elements, defined when pyrite.js is imported:
//
//   <pyrite-script device="webgpu">            Python, run in the page's shared worker; what it
//   import pyrite                               prints, display()s and its last expression show
//   x = pyrite.tensor([[1.0, 2.0]])             up inside the element (text, tensors as tables,
//   display(x * 2)                              images from tensors with image(t))
//   </pyrite-script>
//   <pyrite-script src="model.py"></pyrite-script>
//
//   <pyrite-mnist device="auto"></pyrite-mnist> the MNIST demo as a widget: draw a digit, see
//                                               the guide model's answer; each prediction is a
//                                               "prediction" event {label, probabilities, ms,
//                                               backend} that bubbles out of the element
//
// Attributes: device ("auto", "webgpu", "numpy"), models (comma-separated, pyrite-script),
// predictor (pyrite-mnist: a Python "module.function" of the 784 pixels to call instead of the
// demo model, e.g. the training page's pyrite.wasm.training.predict).
// Styling: CSS custom properties --pyrite-accent, --pyrite-fg, --pyrite-bg, --pyrite-muted,
// --pyrite-font, --pyrite-mono, --pyrite-radius; light and dark follow the host page's
// color-scheme. Nothing here blocks the host page: Python runs in the worker.

import { SIDE, toMnistInput } from "./mnist-input.js";

const STYLE = `
:host { display: block; color: var(--pyrite-fg, CanvasText); font: var(--pyrite-font, inherit);
  --accent: var(--pyrite-accent, #8a5a00); --muted: var(--pyrite-muted, GrayText);
  --radius: var(--pyrite-radius, 8px); }
.status { color: var(--muted); font-size: .875em; margin: .25em 0; }
.status:empty { display: none; }
.error { color: var(--pyrite-error, #b3261e); white-space: pre-wrap;
  font: .875em var(--pyrite-mono, ui-monospace, monospace); margin: .25em 0; }
pre { font: .875em/1.4 var(--pyrite-mono, ui-monospace, monospace); margin: .25em 0;
  white-space: pre-wrap; }
table { border-collapse: collapse; font: .875em var(--pyrite-mono, ui-monospace, monospace);
  margin: .25em 0; }
caption { caption-side: bottom; color: var(--muted); font-size: .85em; text-align: left;
  padding-top: .2em; white-space: nowrap; }
td { border: 1px solid color-mix(in srgb, currentColor 25%, transparent);
  padding: .15em .5em; text-align: right; }
canvas.image { image-rendering: pixelated; border-radius: 2px; margin: .25em 0; }
`;

const MNIST_STYLE = `
.widget { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.pad { width: min(100%, 240px); aspect-ratio: 1; background: #000; border-radius: var(--radius);
  touch-action: none; cursor: crosshair; display: block; }
.side { min-width: 10em; max-width: 22em; flex: 1; }
.label { font-size: 3em; font-weight: 700; line-height: 1; color: var(--accent); }
.bars { list-style: none; padding: 0; margin: .5em 0; }
.bars li { display: grid; grid-template-columns: 1em 1fr 3.5em; gap: .4em; align-items: center;
  font-size: .8em; }
.bar { display: block; height: .5em; border-radius: .25em;
  background: color-mix(in srgb, currentColor 12%, transparent); overflow: hidden; }
.fill { display: block; height: 100%; width: 0; background: var(--accent); }
.pct { text-align: right; color: var(--muted); }
button { font: inherit; padding: .25em .9em; border-radius: 1em; cursor: pointer;
  border: 1px solid color-mix(in srgb, currentColor 35%, transparent); background: none;
  color: inherit; }
`;

/** Code of a pyrite-script: its src file's text, or its own text without common indent. */
async function scriptCode(element) {
  const src = element.getAttribute("src");
  if (src) {
    const url = new URL(src, document.baseURI);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`<pyrite-script src="${src}">: ${url} answered ${response.status}`);
    return response.text();
  }
  const lines = element.textContent.replace(/^\s*\n/, "").replace(/\s+$/, "").split("\n");
  const indents = lines.filter((l) => l.trim()).map((l) => l.match(/^\s*/)[0].length);
  const cut = indents.length ? Math.min(...indents) : 0;
  return lines.map((l) => l.slice(cut)).join("\n");
}

// Constructed stylesheets: no <style> element, so a host page's Content-Security-Policy needs
// no style-src 'unsafe-inline' for the elements.
const sheets = new Map();
function adopt(root, css) {
  if (!sheets.has(css)) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    sheets.set(css, sheet);
  }
  root.adoptedStyleSheets = [sheets.get(css)];
}

function node(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function renderOutput(out) {
  if (out.type === "table") {
    const table = node("table");
    for (const row of out.rows) {
      const tr = node("tr");
      for (const cell of row) tr.append(node("td", "", String(cell)));
      table.append(tr);
    }
    table.createCaption().textContent = out.caption;
    return table;
  }
  if (out.type === "image") {
    const canvas = node("canvas", "image");
    canvas.width = out.width;
    canvas.height = out.height;
    const zoom = Math.max(1, Math.floor(192 / Math.max(out.width, out.height)));
    canvas.style.width = `${out.width * zoom}px`;
    canvas.getContext("2d").putImageData(
      new ImageData(new Uint8ClampedArray(out.rgba), out.width, out.height), 0, 0);
    return canvas;
  }
  return node("pre", "", out.text);
}

function describe(err) {
  return err.pythonType && err.pythonType !== "Error" ? `${err.pythonType}: ${err.message}`
    : err.message;
}

export function defineElements(pyrite) {
  class PyriteScript extends HTMLElement {
    connectedCallback() {
      if (this.shadowRoot) return; // moved in the DOM: it ran already
      const root = this.attachShadow({ mode: "open" });
      adopt(root, STYLE);
      this.statusLine = root.appendChild(node("div", "status", "Starting pyrite…"));
      this.output = root.appendChild(node("div", "output"));
      this.output.setAttribute("part", "output");
      this.output.setAttribute("aria-live", "polite");
      this.done = this.run();
    }

    async run() {
      const device = this.getAttribute("device") || "auto";
      const models = (this.getAttribute("models") || "").split(",").map((m) => m.trim())
        .filter(Boolean);
      try {
        const code = await scriptCode(this);
        const got = await pyrite.load({ device, models });
        if (device !== "auto" && got.device !== device) {
          throw new Error(`this page's pyrite already runs on ${got.device}; every embed of a page shares one worker and one device`);
        }
        for (const name of models) await pyrite.loadModel(name);
        this.statusLine.textContent = `Running on ${got.device}…`;
        const { outputs, error } = await pyrite.runScript(code);
        for (const out of outputs) this.output.append(renderOutput(out));
        if (error) throw Object.assign(new Error(error.message), { pythonType: error.type, traceback: error.traceback });
        this.statusLine.textContent = "";
        this.dataset.state = "done";
        this.dispatchEvent(new CustomEvent("done", { detail: { outputs } }));
      } catch (err) {
        this.fail(err);
      }
    }

    fail(err) {
      this.statusLine.textContent = "";
      this.output.append(node("div", "error", describe(err)));
      this.dataset.state = "error";
      console.error(`<pyrite-script>: ${describe(err)}`, err.traceback || "");
      this.dispatchEvent(new CustomEvent("error", { detail: { message: describe(err) } }));
    }
  }

  class PyriteMnist extends HTMLElement {
    connectedCallback() {
      if (this.shadowRoot) return;
      this.predictions = 0;
      this.lastResult = null;
      const root = this.attachShadow({ mode: "open" });
      adopt(root, STYLE + MNIST_STYLE);
      const widget = root.appendChild(node("div", "widget"));
      this.pad = widget.appendChild(node("canvas", "pad"));
      this.pad.width = this.pad.height = 280;
      this.pad.setAttribute("aria-label", "Draw a digit here");
      const side = widget.appendChild(node("div", "side"));
      this.labelEl = side.appendChild(node("div", "label", "?"));
      this.bars = side.appendChild(node("ul", "bars"));
      this.fills = [];
      for (let d = 0; d < 10; d++) {
        const li = this.bars.appendChild(node("li"));
        li.append(node("span", "", String(d)));
        const fill = li.appendChild(node("span", "bar")).appendChild(node("span", "fill"));
        this.fills.push([fill, li.appendChild(node("span", "pct", ""))]);
      }
      this.statusLine = side.appendChild(node("div", "status", "Starting pyrite…"));
      this.errorLine = side.appendChild(node("div", "error"));
      const clear = side.appendChild(node("button", "", "Clear"));
      clear.addEventListener("click", () => this.clear());
      this.ctx = this.pad.getContext("2d", { willReadFrequently: true });
      this.clear();
      this.draw();
      this.ready = this.start();
    }

    async start() {
      // predictor="module.function": a Python function of the pixels instead of the demo model
      // (the training page's model: pyrite.wasm.training.predict)
      this.predictor = this.getAttribute("predictor");
      try {
        const models = this.predictor ? [] : ["mnist"];
        const got = await pyrite.load({ device: this.getAttribute("device") || "auto", models });
        if (!this.predictor) await pyrite.loadModel("mnist");
        this.backend = got.device;
        this.statusLine.textContent = `Draw a digit · runs on ${got.device} in this page`;
        this.dataset.state = "ready";
      } catch (err) {
        this.statusLine.textContent = "";
        this.errorLine.textContent = `pyrite cannot run here: ${describe(err)}`;
        this.dataset.state = "error";
        console.error(`<pyrite-mnist>: ${describe(err)}`);
        throw err;
      }
    }

    draw() {
      const pen = this.pad.width / 14;
      let last = null;
      const at = (e) => {
        const r = this.pad.getBoundingClientRect();
        return [(e.clientX - r.left) * this.pad.width / r.width,
          (e.clientY - r.top) * this.pad.height / r.height];
      };
      this.pad.addEventListener("pointerdown", (e) => {
        this.pad.setPointerCapture(e.pointerId);
        last = at(e);
        this.line(last, last, pen);
      });
      this.pad.addEventListener("pointermove", (e) => {
        if (!last) return;
        const p = at(e);
        this.line(last, p, pen);
        last = p;
        this.schedule(150);
      });
      const up = () => { if (last) { last = null; this.schedule(0); } };
      this.pad.addEventListener("pointerup", up);
      this.pad.addEventListener("pointercancel", up);
    }

    line(a, b, width) {
      const c = this.ctx;
      c.strokeStyle = "#fff";
      c.lineWidth = width;
      c.lineCap = c.lineJoin = "round";
      c.beginPath();
      c.moveTo(...a);
      c.lineTo(...b);
      c.stroke();
      this.version = (this.version || 0) + 1;
    }

    clear() {
      this.ctx.fillStyle = "#000";
      this.ctx.fillRect(0, 0, this.pad.width, this.pad.height);
      this.version = (this.version || 0) + 1;
      this.labelEl.textContent = "?";
      for (const [fill, pct] of this.fills) { fill.style.width = "0"; pct.textContent = ""; }
    }

    schedule(delay) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.predictDrawing(), delay);
    }

    async predictDrawing() {
      if (this.busy) { this.again = true; return; }
      const pixels = toMnistInput(this.ctx.getImageData(0, 0, this.pad.width, this.pad.height).data,
        this.pad.width, this.pad.height);
      if (!pixels) return;
      this.busy = true;
      try {
        await this.predictPixels(pixels);
      } finally {
        this.busy = false;
        if (this.again) { this.again = false; this.schedule(0); }
      }
    }

    /** Predict 784 grey levels (as a drawing would give); shows and returns the result. */
    async predictPixels(pixels) {
      try {
        await this.ready;
        const out = this.predictor ? await pyrite.call(this.predictor, pixels)
          : await pyrite.predict("mnist", { pixels });
        this.predictions += 1;
        this.lastResult = out;
        this.errorLine.textContent = out.recovered ? `Note: ${out.recovered}` : "";
        this.labelEl.textContent = String(out.label);
        out.probabilities.forEach((p, d) => {
          this.fills[d][0].style.width = `${(100 * p).toFixed(1)}%`;
          this.fills[d][1].textContent = `${(100 * p).toFixed(p > 0.995 || p < 0.005 ? 0 : 1)} %`;
        });
        this.statusLine.textContent = `${out.backend} · ${out.ms.toFixed(1)} ms`;
        this.dispatchEvent(new CustomEvent("prediction", { bubbles: true, composed: true,
          detail: { label: out.label, probabilities: out.probabilities, ms: out.ms, backend: out.backend } }));
        return out;
      } catch (err) {
        this.errorLine.textContent = `The prediction failed: ${describe(err)}`;
        console.error(`<pyrite-mnist>: ${describe(err)}`);
        return null;
      }
    }
  }

  if (!customElements.get("pyrite-script")) customElements.define("pyrite-script", PyriteScript);
  if (!customElements.get("pyrite-mnist")) customElements.define("pyrite-mnist", PyriteMnist);
}

export { SIDE };
