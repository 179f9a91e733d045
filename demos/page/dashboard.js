// The training dashboard (served at /demos/shared/dashboard.js): draws the training events of
// pyrite.train.events (see core/train/events.py) as SVG charts, with the latest values in text
// and a status line. The native dashboard (/train/live, fed by server-sent events) and the
// in-page training page (/train, fed by the worker) both use it. No framework, no build step.
//
//   import { createDashboard } from "/demos/shared/dashboard.js";
//   const dash = createDashboard(document.getElementById("dashboard"));
//   dash.push({ type: "step", split: "train", step: 1, metrics: { Loss: 2.3 }, ... });
//   dash.data();   // { state, epoch, epochs, step, ..., series: { trainLoss: [[step, value]] } }
//
// Charts: loss and accuracy (train per step, train epoch means, valid per epoch), images/s,
// the learning rate (a `LearningRate` metric) and memory in use. Points are kept in full and
// decimated when drawn (min and max per pixel column), so long runs stay fast. A resumed run's
// points continue at their step; a point at or before a series' last step replaces that
// series' tail (the run went back to a checkpoint). A `start` event clears the dashboard
// unless `resetOnStart: false`.

const SVG = "http://www.w3.org/2000/svg";

/** The series the dashboard keeps: [step, value] (epoch series: [step, value, epoch]). */
const SERIES = ["trainLoss", "trainLossEpoch", "validLoss", "trainAccuracy",
  "trainAccuracyEpoch", "validAccuracy", "itemsPerS", "validItemsPerS", "lr", "memory"];

const escapeHtml = (text) => String(text).replace(/[&<>"']/g,
  (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const isNum = (v) => typeof v === "number" && Number.isFinite(v);

// ---- number formats ----------------------------------------------------------------------

/** A value in about 4 significant digits: "2.303", "0.04512", "1234". */
export function formatNumber(v) {
  if (!isNum(v)) return "–";
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 1000) return Math.round(v).toLocaleString("en-US");
  if (a >= 1) return v.toFixed(3).replace(/\.?0+$/, "");
  if (a >= 1e-3) return v.toPrecision(3);
  return v.toExponential(2);
}

const formatPercent = (v) => (isNum(v) ? `${v.toFixed(2)} %` : "–");
const formatRate = (v) => (isNum(v) ? `${Math.round(v).toLocaleString("en-US")}` : "–");
const formatLr = (v) => (!isNum(v) ? "–" : v === 0 ? "0" : v < 0.01 ? v.toExponential(2)
  : v.toPrecision(3));

/** Bytes as "512 MiB", "1.25 GiB". */
export function formatBytes(v) {
  if (!isNum(v)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${i === 0 ? v : v.toPrecision(3)} ${units[i]}`;
}

const formatDuration = (s) => {
  if (!isNum(s)) return "–";
  const t = Math.round(s);
  const h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), sec = t % 60;
  const pad = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${pad(m)}:${pad(sec)}` : `${m}:${pad(sec)}`;
};

// compact tick labels: 0, 0.5, 1.2k, 3M, 1e-4
function tickLabel(v, step) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toFixed(2)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(1)}k`;
  if (a < 1e-3) return v.toExponential(0);
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return v.toFixed(Math.min(decimals, 6));
}

// ---- scales ------------------------------------------------------------------------------

/** Round tick positions over [lo, hi], about `count` of them: [ticks, step]. */
export function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) { hi = lo + (lo === 0 ? 1 : Math.abs(lo) * 0.1); }
  const raw = (hi - lo) / Math.max(count, 1);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw) || 10 * mag;
  const first = Math.ceil(lo / step - 1e-9) * step;
  const ticks = [];
  for (let v = first; v <= hi + step * 1e-9; v += step) ticks.push(+v.toPrecision(12));
  return [ticks, step];
}

function niceDomain(lo, hi, { zero = false, max = null } = {}) {
  if (zero) lo = Math.min(0, lo);
  if (!(hi > lo)) { const pad = Math.abs(hi) * 0.05 || 1; lo -= zero && lo === 0 ? 0 : pad; hi += pad; }
  const [, step] = niceTicks(lo, hi, 4);
  let a = Math.floor(lo / step + 1e-9) * step;
  let b = Math.ceil(hi / step - 1e-9) * step;
  if (max !== null) b = Math.min(b, max);
  if (zero && lo >= 0) a = Math.max(a, 0);
  if (!(b > a)) b = a + step;
  return [a, b];
}

/**
 * The points to draw of `points` ([x, y, ...], x ascending) across `columns` pixel columns of
 * [x0, x1]: all of them when few, else the first, lowest, highest and last of each column
 * (so spikes survive decimation).
 */
export function decimate(points, x0, x1, columns) {
  if (points.length <= columns * 2) return points;
  const out = [];
  const width = (x1 - x0) / columns || 1;
  let bucket = null, lo = null, hi = null, first = null, last = null;
  const flush = () => {
    if (first === null) return;
    const picked = [first, lo, hi, last].filter((p, i, all) => all.indexOf(p) === i);
    picked.sort((a, b) => a[0] - b[0]);
    out.push(...picked);
  };
  for (const p of points) {
    const b = Math.floor((p[0] - x0) / width);
    if (b !== bucket) { flush(); bucket = b; first = lo = hi = last = p; continue; }
    if (p[1] < lo[1]) lo = p;
    if (p[1] > hi[1]) hi = p;
    last = p;
  }
  flush();
  return out;
}

// ---- the charts --------------------------------------------------------------------------

const CHARTS = [
  { id: "loss", title: "Loss", big: true, zero: true, format: formatNumber, series: [
    { key: "trainLoss", label: "Train, per step", cls: "train-step" },
    { key: "trainLossEpoch", label: "Train, epoch mean", cls: "train", dots: true },
    { key: "validLoss", label: "Valid, per epoch", cls: "valid", dots: true }] },
  { id: "accuracy", title: "Accuracy", unit: "%", big: true, max: 100, format: formatPercent,
    series: [
      { key: "trainAccuracy", label: "Train, per step", cls: "train-step" },
      { key: "trainAccuracyEpoch", label: "Train, epoch mean", cls: "train", dots: true },
      { key: "validAccuracy", label: "Valid, per epoch", cls: "valid", dots: true }] },
  { id: "speed", title: "Images / s", zero: true, format: formatRate, series: [
    { key: "itemsPerS", label: "Train", cls: "train" },
    { key: "validItemsPerS", label: "Valid, per epoch", cls: "valid", dots: true }] },
  { id: "lr", title: "Learning rate", zero: true, format: formatLr, tick: (v) => formatLr(v),
    empty: "No LearningRate metric in this run", series: [
      { key: "lr", label: "Rate", cls: "train" }] },
  { id: "memory", title: "Memory in use", zero: true, format: formatBytes, scale: 2 ** -20,
    tick: (v) => (v === 0 ? "0" : v >= 1024 ? `${+(v / 1024).toFixed(2)} GiB` : `${+v.toFixed(1)} MiB`),
    empty: "Not reported by this run", series: [
      { key: "memory", label: "In use", cls: "memory" }] },
];

const TILES = [
  ["trainLoss", "Train loss"], ["validLoss", "Valid loss"], ["trainAccuracy", "Train accuracy"],
  ["validAccuracy", "Valid accuracy"], ["speed", "Images / s"], ["lr", "Learning rate"],
  ["memory", "Memory in use"],
];

const STATE_TEXT = { idle: "Waiting for training to start", running: "Training",
  done: "Training finished", stopped: "Training stopped", error: "Training failed" };

function el(tag, attrs = {}, text = "") {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text) node.textContent = text;
  return node;
}

/**
 * A dashboard drawn into `container` (emptied first).
 *
 * @param {HTMLElement} container
 * @param {object} [options]
 * @param {string} [options.title]  a heading above the charts (none by default)
 * @param {{loss?: string, accuracy?: string, lr?: string}} [options.metrics]  the metric names
 *   read from events (default "Loss", "Accuracy", "LearningRate")
 * @param {boolean} [options.resetOnStart]  clear on a `start` event (default true)
 * @returns {{push(event: object): void, reset(): void, data(): object, note(text: string): void,
 *   readonly state: string, destroy(): void}}
 */
export function createDashboard(container, options = {}) {
  const names = { loss: "Loss", accuracy: "Accuracy", lr: "LearningRate",
    ...(options.metrics || {}) };
  const resetOnStart = options.resetOnStart !== false;
  let d; // the data, see fresh()
  const fresh = () => ({
    state: "idle", message: "", model: "", config: {}, epoch: 0, epochs: 0, step: 0,
    split: "", iteration: 0, iterations: null, elapsedS: null, events: 0,
    latest: {}, epochEnds: [],
    series: Object.fromEntries(SERIES.map((k) => [k, []])),
  });

  // ---- the DOM ---------------------------------------------------------------------------
  container.replaceChildren();
  container.classList.add("pd-dashboard");
  if (options.title) container.append(el("h2", { class: "pd-heading" }, options.title));
  const status = el("div", { class: "pd-status", "data-state": "idle" });
  const line = el("div", { class: "pd-status-line" });
  const dot = el("span", { class: "pd-dot", "aria-hidden": "true" });
  // announced: only the state and the epoch (not every step, which would flood a reader)
  const statusText = el("p", { class: "pd-status-text", role: "status", "aria-live": "polite" });
  const position = el("p", { class: "pd-position" });
  line.append(dot, statusText, position);
  const progress = el("div", { class: "pd-progress", role: "progressbar", "aria-valuemin": "0",
    "aria-valuemax": "100", "aria-label": "Progress of the current epoch" });
  const bar = el("span", { class: "pd-progress-bar" });
  progress.append(bar);
  const run = el("p", { class: "pd-run" });
  status.append(line, progress, run);

  const tiles = el("dl", { class: "pd-tiles" });
  const tileValue = {};
  for (const [key, label] of TILES) {
    const box = el("div", { class: "pd-tile", "data-tile": key });
    const dd = el("dd");
    tileValue[key] = { main: el("span", { class: "pd-value" }, "–"), sub: el("span", { class: "pd-sub" }) };
    dd.append(tileValue[key].main, tileValue[key].sub);
    box.append(el("dt", {}, label), dd);
    tiles.append(box);
  }

  const grid = el("div", { class: "pd-charts" });
  const charts = CHARTS.map((spec) => {
    const fig = el("figure", { class: `pd-chart${spec.big ? " pd-big" : ""}`,
      "data-chart": spec.id });
    const uid = `pd-${spec.id}-${Math.random().toString(36).slice(2, 8)}`;
    const titleId = `${uid}-title`;
    const cap = el("figcaption", {});
    cap.append(el("span", { class: "pd-chart-title", id: titleId }, spec.title));
    const legend = el("ul", { class: "pd-legend" });
    const legendValue = {};
    for (const s of spec.series) {
      const li = el("li", { class: `pd-${s.cls}` });
      li.append(el("span", { class: "pd-swatch", "aria-hidden": "true" }), el("span", {}, s.label));
      legendValue[s.key] = el("span", { class: "pd-legend-value" });
      li.append(legendValue[s.key]);
      legend.append(li);
    }
    cap.append(legend);
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-labelledby", titleId);
    svg.setAttribute("class", "pd-svg");
    fig.append(cap, svg);
    grid.append(fig);
    return { spec, fig, svg, legendValue, clipId: `${uid}-clip` };
  });
  container.append(status, tiles, grid);

  // ---- drawing ---------------------------------------------------------------------------
  let pending = false;
  const schedule = () => {
    if (pending) return;
    pending = true;
    const draw = () => { pending = false; render(); };
    if (typeof requestAnimationFrame === "function" && !document.hidden) {
      requestAnimationFrame(draw);
    } else {
      setTimeout(draw, 100);
    }
  };

  function xDomain() {
    let lo = Infinity, hi = -Infinity;
    for (const key of SERIES) {
      const s = d.series[key];
      if (!s.length) continue;
      lo = Math.min(lo, s[0][0]);
      hi = Math.max(hi, s[s.length - 1][0]);
    }
    if (lo === Infinity) return [0, 1];
    lo = Math.max(0, lo - 1); // a fresh run starts at step 0, a resumed one where it resumed
    return [lo, Math.max(hi, lo + 1)];
  }

  function drawChart(chart, [x0, x1]) {
    const { spec, svg } = chart;
    const W = Math.max(200, Math.round(svg.clientWidth || svg.parentNode.clientWidth || 400));
    const H = spec.big ? 230 : 170;
    const m = { l: spec.id === "memory" ? 64 : 54, r: 14, t: 18, b: 28 };
    const pw = W - m.l - m.r, ph = H - m.t - m.b;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("height", String(H));
    const k = spec.scale || 1; // memory: drawn in MiB, kept in bytes
    const series = spec.series.map((s) => ({ ...s,
      points: k === 1 ? d.series[s.key] : d.series[s.key].map(([x, y]) => [x, y * k]) }));
    let lo = Infinity, hi = -Infinity;
    for (const s of series) for (const p of s.points) { lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); }
    const parts = [];
    if (lo === Infinity) {
      const text = d.state === "idle" || !spec.empty ? "No data yet" : spec.empty;
      parts.push(`<rect class="pd-plot" x="${m.l}" y="${m.t}" width="${pw}" height="${ph}"/>`,
        `<text class="pd-empty" x="${m.l + pw / 2}" y="${m.t + ph / 2}">${escapeHtml(text)}</text>`);
      svg.innerHTML = parts.join("");
      svg.setAttribute("aria-label", `${spec.title}: ${text}`);
      return;
    }
    const [y0, y1] = niceDomain(lo, hi, { zero: spec.zero, max: spec.max ?? null });
    const sx = (x) => m.l + ((x - x0) / (x1 - x0)) * pw;
    const sy = (y) => m.t + ph - ((y - y0) / (y1 - y0)) * ph;
    parts.push(`<rect class="pd-plot" x="${m.l}" y="${m.t}" width="${pw}" height="${ph}"/>`);
    const [yt, ystep] = niceTicks(y0, y1, spec.big ? 5 : 3);
    const tick = spec.tick || ((v) => tickLabel(v, ystep));
    for (const v of yt) {
      const y = sy(v).toFixed(1);
      parts.push(`<line class="pd-grid" x1="${m.l}" x2="${m.l + pw}" y1="${y}" y2="${y}"/>`,
        `<text class="pd-tick pd-ytick" x="${m.l - 6}" y="${y}">${escapeHtml(tick(v))}</text>`);
    }
    // epoch ends: dashed lines, labelled while there are few
    const ends = d.epochEnds.filter(([s]) => s > x0 && s <= x1);
    for (const [s, epoch] of ends) {
      const x = sx(s).toFixed(1);
      parts.push(`<line class="pd-epoch" x1="${x}" x2="${x}" y1="${m.t}" y2="${m.t + ph}"/>`);
      if (ends.length <= Math.floor(pw / 60)) {
        parts.push(`<text class="pd-epoch-label" x="${x}" y="${m.t - 5}">epoch ${epoch}</text>`);
      }
    }
    const [xt] = niceTicks(x0, x1, Math.max(2, Math.min(8, Math.floor(pw / 80))));
    for (const v of xt) {
      if (!Number.isInteger(v)) continue;
      const x = sx(v).toFixed(1);
      parts.push(`<line class="pd-axis" x1="${x}" x2="${x}" y1="${m.t + ph}" y2="${m.t + ph + 4}"/>`,
        `<text class="pd-tick pd-xtick" x="${x}" y="${m.t + ph + 16}">${tickLabel(v, 1)}</text>`);
    }
    parts.push(`<line class="pd-axis" x1="${m.l}" x2="${m.l + pw}" y1="${m.t + ph}" y2="${m.t + ph}"/>`,
      `<text class="pd-axis-label" x="${m.l + pw}" y="${H - 2}">step</text>`);
    parts.push(`<clipPath id="${chart.clipId}"><rect x="${m.l}" y="${m.t - 4}" width="${pw}" height="${ph + 8}"/></clipPath>`,
      `<g clip-path="url(#${chart.clipId})">`);
    const described = [];
    for (const s of series) {
      if (!s.points.length) continue;
      const pts = decimate(s.points, x0, x1, Math.max(50, Math.round(pw)));
      const path = pts.map((p, i) => `${i ? "L" : "M"}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join("");
      parts.push(`<path class="pd-line pd-${s.cls}" d="${path}"/>`);
      if (s.dots && pts.length <= 60) {
        for (const p of pts) {
          parts.push(`<circle class="pd-point pd-${s.cls}" cx="${sx(p[0]).toFixed(1)}" cy="${sy(p[1]).toFixed(1)}" r="3.2"/>`);
        }
      }
      const lastPoint = s.points[s.points.length - 1];
      described.push(`${s.label} ${spec.format(lastPoint[1] / k)} at step ${lastPoint[0]}`);
    }
    parts.push("</g>");
    svg.innerHTML = parts.join("");
    svg.setAttribute("aria-label", `${spec.title}: ${described.join("; ")}`);
  }

  function setTile(key, main, sub = "") {
    tileValue[key].main.textContent = main;
    tileValue[key].sub.textContent = sub;
  }

  function render() {
    const latest = d.latest;
    statusText.textContent = d.state === "running" || (d.state === "idle" && d.epochs)
      ? `${STATE_TEXT.running}: epoch ${d.epoch || 1} of ${d.epochs || "?"}`
      : STATE_TEXT[d.state] + (d.message ? `: ${d.message}` : "");
    status.dataset.state = d.state;
    const bits = [];
    if (d.state !== "running" && d.epoch) {
      bits.push(`epoch ${d.epoch} of ${d.epochs}`);
    } else if (d.split) {
      bits.push(d.split === "train" ? "training" : "validating");
      bits.push(d.iterations ? `iteration ${d.iteration.toLocaleString("en-US")} / ${d.iterations.toLocaleString("en-US")}`
        : `iteration ${d.iteration.toLocaleString("en-US")}`);
    }
    if (d.step) bits.push(`step ${d.step.toLocaleString("en-US")}`);
    if (d.state === "running" && isNum(d.elapsedS)) bits.push(`${formatDuration(d.elapsedS)} this ${d.split === "valid" ? "validation" : "epoch"}`);
    position.textContent = bits.join(" · ");
    const frac = d.iterations ? Math.min(1, d.iteration / d.iterations) : (d.state === "done" ? 1 : 0);
    bar.style.width = `${(100 * frac).toFixed(1)}%`;
    progress.setAttribute("aria-valuenow", String(Math.round(100 * frac)));
    const config = Object.entries(d.config || {}).filter(([, v]) => typeof v !== "object" || v === null)
      .map(([k, v]) => `${k.replace(/_/g, " ")} ${v}`);
    run.textContent = [d.model, ...config].filter(Boolean).join(" · ");
    run.hidden = !run.textContent;

    setTile("trainLoss", formatNumber(latest.trainLoss),
      isNum(latest.trainLossEpoch) ? `epoch mean ${formatNumber(latest.trainLossEpoch)}` : "");
    setTile("validLoss", formatNumber(latest.validLoss), latest.validLossWhen || "");
    setTile("trainAccuracy", formatPercent(latest.trainAccuracy),
      isNum(latest.trainAccuracyEpoch) ? `epoch mean ${formatPercent(latest.trainAccuracyEpoch)}` : "");
    setTile("validAccuracy", formatPercent(latest.validAccuracy),
      latest.validAccuracyWhen || latest.validLossWhen || "");
    setTile("speed", formatRate(latest.itemsPerS), latest.speedSplit || "");
    setTile("lr", formatLr(latest.lr));
    setTile("memory", formatBytes(latest.memory));

    const xs = xDomain();
    for (const chart of charts) {
      drawChart(chart, xs);
      for (const s of chart.spec.series) {
        const pts = d.series[s.key];
        chart.legendValue[s.key].textContent = pts.length ? chart.spec.format(pts[pts.length - 1][1]) : "";
      }
    }
  }

  // ---- events ----------------------------------------------------------------------------
  // add [step, value, ...] to a series; a step at or before its last one replaces the tail
  function add(key, point) {
    if (!isNum(point[1])) return;
    const s = d.series[key];
    while (s.length && s[s.length - 1][0] >= point[0]) s.pop();
    s.push(point);
  }

  function onStep(e) {
    const m = e.metrics || {}, em = e.epoch_metrics || {};
    Object.assign(d, { state: "running", epoch: e.epoch, epochs: e.epochs, split: e.split,
      iteration: e.iteration, iterations: e.iterations, elapsedS: e.elapsed_s });
    if (e.split === "train") {
      d.step = e.step;
      add("trainLoss", [e.step, m[names.loss]]);
      add("trainAccuracy", [e.step, m[names.accuracy]]);
      add("itemsPerS", [e.step, e.items_per_s]);
      add("lr", [e.step, m[names.lr]]);
      Object.assign(d.latest, { trainLoss: m[names.loss], trainLossEpoch: em[names.loss],
        trainAccuracy: m[names.accuracy], trainAccuracyEpoch: em[names.accuracy] });
      if (isNum(m[names.lr])) d.latest.lr = m[names.lr];
    } else {
      // validation's running values, until its epoch value arrives
      if (isNum(em[names.loss])) d.latest.validLoss = em[names.loss];
      if (isNum(em[names.accuracy])) d.latest.validAccuracy = em[names.accuracy];
      d.latest.validLossWhen = `epoch ${e.epoch}, running`;
      d.latest.validAccuracyWhen = "";
    }
    if (isNum(e.items_per_s)) {
      d.latest.itemsPerS = e.items_per_s;
      d.latest.speedSplit = e.split === "train" ? "training" : "validation";
    }
    if (isNum(e.memory_bytes)) {
      add("memory", [e.step, e.memory_bytes]);
      d.latest.memory = e.memory_bytes;
    }
  }

  function onEpoch(e) {
    const m = e.metrics || {};
    Object.assign(d, { epoch: e.epoch, epochs: e.epochs, state: d.state === "idle" ? "running" : d.state });
    if (e.split === "train") {
      add("trainLossEpoch", [e.step, m[names.loss], e.epoch]);
      add("trainAccuracyEpoch", [e.step, m[names.accuracy], e.epoch]);
      while (d.epochEnds.length && d.epochEnds[d.epochEnds.length - 1][0] >= e.step) d.epochEnds.pop();
      d.epochEnds.push([e.step, e.epoch]);
      Object.assign(d.latest, { trainLossEpoch: m[names.loss], trainAccuracyEpoch: m[names.accuracy] });
    } else {
      add("validLoss", [e.step, m[names.loss], e.epoch]);
      add("validAccuracy", [e.step, m[names.accuracy], e.epoch]);
      add("validItemsPerS", [e.step, e.items_per_s, e.epoch]);
      Object.assign(d.latest, { validLoss: m[names.loss], validAccuracy: m[names.accuracy],
        validLossWhen: `epoch ${e.epoch}`, validAccuracyWhen: "" });
    }
  }

  const api = {
    /** Take one training event (a dict of pyrite.train.events) and redraw soon. */
    push(event) {
      if (!event || typeof event !== "object") return;
      if (event.type === "start") {
        if (resetOnStart) d = fresh();
        Object.assign(d, { state: "running", model: event.model || "", config: event.config || {},
          epochs: event.epochs || 0, message: "" });
      } else if (event.type === "step") {
        onStep(event);
      } else if (event.type === "epoch") {
        onEpoch(event);
      } else if (event.type === "end") {
        d.state = ["done", "stopped", "error"].includes(event.state) ? event.state : "done";
        d.message = event.message || "";
        // the model as the run ended, measured on the validation set by the page (a stopped
        // run's model was never validated as a whole epoch): the tile shows that, and says so
        const valid = event.valid_metrics || {};
        if (isNum(valid[names.accuracy])) {
          d.latest.validAccuracy = valid[names.accuracy];
          d.latest.validAccuracyWhen = event.valid_when || "the model as the run ended";
        }
      } else {
        return;
      }
      d.events += 1;
      schedule();
    },
    /** Forget every point and show the empty dashboard. */
    reset() { d = fresh(); schedule(); },
    /** A copy of what the dashboard holds: the run's position and state, and `series`. */
    data() {
      return JSON.parse(JSON.stringify({ ...d, latest: undefined }));
    },
    /** Show `text` in the status line (a connection problem, say), until the next event. */
    note(text) { run.textContent = text; run.hidden = !text; },
    /** "idle", "running", "done", "stopped" or "error". */
    get state() { return d.state; },
    /** Stop following the container's size. */
    destroy() { resize?.disconnect(); },
  };

  d = fresh();
  let lastWidth = 0;
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => {
    const w = grid.clientWidth;
    if (w !== lastWidth) { lastWidth = w; schedule(); }
  }) : null;
  resize?.observe(grid);
  if (typeof document !== "undefined") {
    document.addEventListener("visibilitychange", () => { if (!document.hidden) schedule(); });
  }
  render();
  return api;
}
