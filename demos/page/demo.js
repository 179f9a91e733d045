// What pyrite's demo pages share (served at /demos/shared/demo.js by `pyrite serve`): loading
// pyrite.js and a demo model in the page, the status bar that says how far that got, the
// server's API as the fallback the user may choose when the page cannot run the model, and the
// facts under a prediction (where it ran, how long it took) and its error line.
//
// A page holds these elements (ids): status, status-text, progress (the stages below), fallback,
// fallback-reason, use-server (the status bar's fallback offer), and in its result panel
// (result) backend, timing and error. It makes one DemoPage, calls start(), and predicts with
// `await demo.predict(inputs)` once `demo.mode` is set ("page" or "server"); `onMode` tells it
// when that happens. Everything else on the page (the input, how a result is drawn) is its own.

const meta = (name, fallback) =>
  document.querySelector(`meta[name="${name}"]`)?.getAttribute("content") || fallback;
// Where the page finds the web bundle (pyrite.js) and the server's API (see the page's <meta>)
export const BUNDLE = new URL(meta("pyrite-bundle", "/"), location.href);
export const API = new URL(meta("pyrite-api", "/api/"), location.href);

export const $ = (id) => document.getElementById(id);

export function span(className, text) {
  const node = document.createElement("span");
  node.className = className;
  node.textContent = text;
  return node;
}

/** A probability as a percentage, e.g. "96.5 %", "> 99.9 %", "0 %". */
export function percent(p) {
  if (p >= 0.9995) return p === 1 ? "100 %" : "> 99.9 %";
  return `${(100 * p).toFixed(p < 0.0005 ? 0 : 1)} %`;
}

export const millis = (ms) => `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;

/** "ValueError: message" for a Python error, the message alone for another. */
export function errorText(err) {
  const kind = err.pythonType && err.pythonType !== "Error" ? `${err.pythonType}: ` : "";
  return `${kind}${err.message}`;
}

// JSON for the server: typed arrays (a photo's pixels) as plain arrays
const toJson = (inputs) =>
  JSON.stringify(inputs, (key, value) => (ArrayBuffer.isView(value) ? Array.from(value) : value));

function describeDevice(got) {
  if (got.device === "webgpu") {
    // "#0 google swiftshader (CPU, WebGPU (browser))" -> "google swiftshader"
    const inUse = String(got.adapter?.["in use"] ?? "");
    const name = inUse.replace(/^#\d+\s+/, "").replace(/\s*\(.*$/, "") || got.adapter?.vendor;
    return name ? `WebGPU in this page (${name})` : "WebGPU in this page";
  }
  return `${got.device} in this page (Pyodide)`;
}

export class DemoPage {
  /**
   * @param {object} options
   * @param {string} options.model  the bundle's and the API's name of the model ("mnist")
   * @param {string} options.what  the model for the status line ("the MNIST model")
   * @param {string} options.sends  what the server gets from the page ("your drawing")
   * @param {() => object} options.warmup  an input predicted once after loading (it compiles
   *   the kernels then, not at the user's first prediction)
   * @param {() => void} [options.onMode]  called when `mode` is set: predictions can run
   */
  constructor({ model, what, sends, warmup, onMode = () => {} }) {
    Object.assign(this, { model, what, sends, warmup, onMode });
    this.el = {
      status: $("status"), statusText: $("status-text"), progress: $("progress"),
      fallback: $("fallback"), fallbackReason: $("fallback-reason"), useServer: $("use-server"),
      backend: $("backend"), timing: $("timing"), error: $("error"), result: $("result"),
    };
    this.mode = null; // "page" (pyrite in this page) or "server" (POST /api/predict/...)
    this.pyrite = null; // the pyrite.js module, once imported
    this.pageBackend = "–"; // e.g. "WebGPU in this page (google swiftshader)"
    this.serverAvailable = false;
    this.ready = new Promise((resolve) => { this.resolveReady = resolve; });
    this.el.useServer.addEventListener("click", () => this.useServer());
  }

  /** The model's answer for `inputs`, in the page or on the server, with `where`
   * ("page"/"server") and `backendLabel` (how to show where it ran). */
  async predict(inputs) {
    if (!this.mode) throw new Error("nothing can predict yet: the model is not loaded");
    if (this.mode === "page") {
      const result = await this.pyrite.predict(this.model, inputs);
      result.where = "page";
      result.backendLabel = this.pageBackend;
      return result;
    }
    return this.predictOnServer(inputs);
  }

  async predictOnServer(inputs) {
    const start = performance.now();
    let response;
    try {
      response = await fetch(new URL(`predict/${this.model}`, API), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: toJson(inputs),
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

  /** Where `result` ran and its times, in the facts; hides the error line (or says that the
   * GPU device was lost and restored before the answer). */
  showFacts(result) {
    const { el } = this;
    el.backend.textContent = result.precision
      ? `${result.backendLabel}, ${result.precision} weights` : result.backendLabel;
    el.backend.dataset.where = result.where;
    if (result.precision) el.backend.dataset.precision = result.precision;
    const onServer = result.where === "server";
    const lines = [`${onServer ? "on the server" : "in Python"} · ` +
      `${millis(result.roundTripMs)} ${onServer ? "with the request" : "round trip"}`];
    if (result.dispatches !== undefined) {
      lines.push(`${result.dispatches} GPU dispatches, ${result.readbacks} readback` +
        `${result.readbacks === 1 ? "" : "s"} (${millis(result.readback_ms)})`);
    }
    el.timing.replaceChildren(span("value", millis(result.ms)),
      ...lines.map((line) => span("sub", line)));
    el.timing.dataset.ms = String(result.ms);
    el.error.hidden = !result.recovered;
    if (result.recovered) el.error.textContent = `Note: ${result.recovered}.`;
    el.result.classList.remove("stale");
  }

  /** The error line for a failed prediction (`prefix` says what failed); what is shown is
   * marked stale. A lost GPU device offers the server. */
  showError(err, prefix = "The prediction failed") {
    this.el.error.textContent = `${prefix}: ${errorText(err)}`;
    this.el.error.hidden = false;
    this.el.result.classList.add("stale");
    if (err.pythonType === "DeviceLostError" && this.mode === "page") {
      this.offerServer(`The GPU device was lost: ${err.message}`);
    }
  }

  hideError() {
    this.el.error.hidden = true;
    this.el.result.classList.remove("stale");
  }

  setState(state, text, details = "") {
    this.el.status.dataset.state = state;
    this.el.statusText.replaceChildren(text, ...(details ? [" ", span("details", details)] : []));
    this.el.progress.hidden = state !== "loading";
  }

  offerServer(reason) {
    const { el } = this;
    el.fallbackReason.textContent = reason;
    if (this.serverAvailable) {
      this.setState("fallback", "This browser cannot run the model in the page.");
    } else {
      this.setState("error", "This browser cannot run the model in the page, and no server " +
        `answers at ${API.pathname} to run it instead.`);
    }
    this.offerButton(this.serverAvailable);
    el.fallback.hidden = false;
    if (this.mode === "page") this.mode = null;
    this.resolveReady({ state: el.status.dataset.state, reason });
  }

  useServer() {
    this.mode = "server";
    this.el.status.dataset.mode = "server";
    this.el.statusText.textContent = `Predicting on the server: this page sends ${this.sends} ` +
      "to it.";
    this.offerButton(false);
    this.el.backend.textContent = "the server";
    this.onMode();
  }

  // the "Predict on the server" button and the note on what it sends, shown or not
  offerButton(shown) {
    this.el.useServer.hidden = !shown;
    const action = this.el.useServer.closest(".fallback-action");
    if (action) action.hidden = !shown;
  }

  /** The model is not installed where the page comes from: say so, with where it goes. */
  notInstalled(reason) {
    this.el.fallbackReason.textContent = `${reason}. Restart the server once the files are ` +
      "there.";
    this.el.fallback.hidden = false;
    this.offerButton(false);
    this.setState("error", `${this.what[0].toUpperCase()}${this.what.slice(1)} is not ` +
      "installed on this server.");
    this.resolveReady({ state: "missing", reason });
  }

  async getConfig() {
    try {
      const response = await fetch(new URL("config", API), { cache: "no-cache" });
      return response.ok ? await response.json() : null;
    } catch {
      return null;
    }
  }

  async start() {
    const { el, model } = this;
    const stages = {
      manifest: [1, () => "Reading the bundle's manifest…"],
      pyodide: [2, (e) => `Starting Python (Pyodide ${e.version ?? ""})…`],
      wheels: [3, () => "Installing pyrite…"],
      device: [4, () => "Starting the device…"],
      model: [5, () => `Loading ${this.what}…`],
      ready: [6, () => "Warming up the model (compiling its kernels)…"],
    };
    this.setState("loading", "Checking this browser…");
    const configLoading = this.getConfig();
    try {
      this.pyrite = await import(new URL("pyrite.js", BUNDLE).href);
    } catch (err) {
      const config = await configLoading;
      this.serverAvailable = Boolean(config?.models?.includes(model));
      this.offerServer(`pyrite.js could not be loaded from ${BUNDLE.pathname}: ${err.message}`);
      return;
    }
    const pyrite = this.pyrite;
    const [config, gpu, manifest] = await Promise.all([
      configLoading,
      pyrite.hasWebGPU().catch((err) => ({
        ok: false, reason: `requesting a WebGPU adapter failed: ${err.message}`,
      })),
      pyrite.manifest().catch(() => null),
    ]);
    if (manifest && !manifest.models?.[model]) {
      this.notInstalled(manifest.unavailable?.[model] ||
        `the web bundle at ${BUNDLE.pathname} has no ${model} model`);
      return;
    }
    this.serverAvailable = Boolean(config?.models?.includes(model));
    const packages = config?.pyodide_packages || null; // where Pyodide's numpy can be loaded from
    if (!gpu.ok && !packages) {
      this.offerServer(`No WebGPU here: ${gpu.reason}. The other way to run the model in this ` +
        "page, numpy for Pyodide, is not offered by this server.");
      return;
    }
    try {
      const got = await pyrite.load({
        device: "auto", models: [model], pyodidePackages: packages ?? undefined,
        onProgress: (event) => {
          const stage = stages[event.stage];
          if (!stage) return;
          el.progress.value = stage[0];
          el.statusText.textContent = stage[1](event);
        },
      });
      this.pageBackend = describeDevice(got);
      // the first prediction compiles the kernels: done now, not at the user's first one
      const warming = performance.now();
      const firstRun = await pyrite.predict(model, this.warmup());
      const t = { ...got.timings, warmupMs: performance.now() - warming };
      el.progress.value = el.progress.max;
      const seconds = (ms) => (ms / 1000).toFixed(1);
      let details = `· loaded in ${seconds(t.totalMs)} s (Python ${seconds(t.pyodideMs)} s, ` +
        `pyrite ${seconds(t.installMs)} s, model ${seconds(t.modelsMs)} s), first run ` +
        `${seconds(t.warmupMs)} s`;
      if (got.device !== "webgpu" && got.unavailable?.webgpu) {
        details += `. No WebGPU: ${got.unavailable.webgpu}`;
      }
      this.setState("ready", `Ready · ${this.pageBackend}`, details);
      el.backend.textContent = this.pageBackend;
      this.mode = "page";
      // firstRun: the warm-up's answer, with where its time went (ms, readback_ms,
      // dispatches, pipelines compiled, ...: pyrite.wasm.page.predict)
      this.resolveReady({ state: "ready", device: got.device, backend: this.pageBackend,
        timings: t, firstRun });
      this.onMode();
    } catch (err) {
      this.offerServer(`pyrite could not start in this page: ${errorText(err)}`);
    }
  }
}
