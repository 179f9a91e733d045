// The training page (served at /train by `pyrite serve`).
//
// pyrite's Learner trains an MNIST model in this page's worker, on WebGPU
// (pyrite/wasm/training.py; the run itself is pyrite/demos/train/run.py, the same code as
// natively). Its events ({type: "train", event}, see pyrite/train/events.py) feed the dashboard
// (/demos/shared/dashboard.js). Stop asks Python to end after the current step; checkpoints
// are kept in this browser (IndexedDB), so after a reload Resume continues at the step of the
// last one, with the curve so far redrawn from the run's metric logs. A finished (or stopped)
// run's model reads digits drawn on <pyrite-mnist> and downloads as a record that
// `pyrite infer mnist --record FILE` loads natively.
//
// For tests and the console: window.trainDemo = {ready, state, events, dashboard, lastRun,
// lastError, status(), start(settings?), stop(), resume(), forget(), exportRecord(), pyrite}.

import { $, BUNDLE, errorText } from "/demos/shared/demo.js";
import { createDashboard } from "/demos/shared/dashboard.js";
import { setupDataChoice } from "/demos/train/data.js";

const DATA = new URL(document.querySelector('meta[name="pyrite-data"]')?.content || "/data/mnist/",
  location.href).href;
const TRAINING = "pyrite.wasm.training";

const el = {
  status: $("status"), statusText: $("status-text"), form: $("settings"),
  start: $("start"), stop: $("stop"), resume: $("resume"), forget: $("forget"),
  saved: $("saved"), error: $("error"), trained: $("trained"), score: $("score"),
  padSlot: $("pad-slot"), download: $("download"), command: $("infer-command"),
};
const dashboard = createDashboard($("dashboard"), { resetOnStart: false });
const demo = {
  state: "loading", events: [], dashboard, lastRun: null, lastError: null, saved: null,
  ready: null,
  status: () => pyrite.call(`${TRAINING}.status`),
  start: (settings) => train(settings || readSettings(), false),
  resume: () => train(null, true),
  stop: () => stop(),
  forget: () => forget(),
  exportRecord: async () => Array.from(await pyrite.call(`${TRAINING}.export`)),
  pyrite: null,
};
window.trainDemo = demo;

const pyrite = await import(new URL("pyrite.js", BUNDLE).href);
demo.pyrite = pyrite;
const dataChoice = setupDataChoice(el.form, pyrite);

function setStatus(state, text) {
  demo.state = state;
  el.status.dataset.state = { training: "loading", stopping: "loading", stopped: "ready" }[state]
    || state;
  el.statusText.textContent = text;
}

function showError(err) {
  demo.lastError = errorText(err);
  el.error.textContent = demo.lastError;
  el.error.hidden = false;
}

function readSettings() {
  const data = new FormData(el.form);
  const number = (name) => Number(data.get(name));
  return {
    model: String(data.get("model")), epochs: number("epochs"), batch_size: number("batch_size"),
    learning_rate: number("learning_rate"), lr_schedule: String(data.get("lr_schedule")),
    train_items: number("train_items"),
    valid_items: number("valid_items"),
    dataset: dataChoice.value(),
  };
}

function fillSettings(settings) {
  dataChoice.show(settings.dataset || "");
  for (const [name, value] of Object.entries(settings)) {
    if (name === "dataset") continue;
    const field = el.form.elements.namedItem(name);
    if (field) field.value = String(value);
  }
}

function busy(on) {
  el.start.disabled = on;
  el.resume.disabled = on;
  el.forget.disabled = on;
  el.stop.disabled = !on;
  for (const field of el.form.elements) field.disabled = on;
}

// ---- the stored run -----------------------------------------------------------------------

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// where a stored run's checkpoint is: "epoch 1, step 30 of 100" or "end of epoch 2"
function checkpointAt(saved) {
  const s = saved.settings;
  const perEpoch = Math.ceil(s.train_items / s.batch_size);
  return saved.steps === null ? `end of epoch ${saved.epoch} of ${s.epochs}`
    : `epoch ${saved.epoch} of ${s.epochs}, step ${saved.steps} of ${perEpoch}`;
}

function describeSaved(saved) {
  const s = saved.settings;
  const perEpoch = Math.ceil(s.train_items / s.batch_size);
  return saved.done
    ? `A finished run is stored in this browser (${s.model}, ${plural(s.epochs, "epoch")}).`
    : `A stopped run is stored in this browser: ${s.model}, checkpoint at ` +
      `${checkpointAt(saved)} (step ${saved.step} of ${perEpoch * s.epochs}). Resume ` +
      "continues from there.";
}

// what the page says of a run that a reload (or closing the page) cut short
const interruptedAt = (saved) => `The page was reloaded while training: the run was ` +
  `interrupted and stands at its last checkpoint, ${checkpointAt(saved)}.`;

// `replay`: redraw the stored run's curve (after a reload; a run of this visit is drawn
// already); `interrupted`: the page went away while the run trained
async function showSaved(saved, replay = false, interrupted = false) {
  demo.saved = saved;
  el.resume.hidden = !saved || saved.done;
  el.forget.hidden = !saved;
  el.saved.textContent = saved ? (interrupted ? `${interruptedAt(saved)} Resume continues ` +
    "from there." : describeSaved(saved)) : "";
  if (!saved || !replay) return;
  fillSettings(saved.settings);
  dashboard.reset();
  for (const event of await pyrite.call(`${TRAINING}.history`)) dashboard.push(event);
  // the replayed steps leave the dashboard "running": say how the stored run really ended
  dashboard.push({ type: "end", state: saved.done ? "done" : "stopped",
    message: saved.done ? "stored in this browser"
      : `${interrupted ? "interrupted by a reload " : ""}at ${checkpointAt(saved)} (the last ` +
        "checkpoint); Resume continues" });
}

// the validation accuracy the page measured on the model as the run ended, for the dashboard
// (its tile shows the same number as the status line, and says what was measured)
function measured(run, what) {
  return { type: "end", state: run.state, valid_metrics: { Accuracy: run.accuracy },
    valid_when: `${what}, all ${run.saved.settings.valid_items} validation digits`,
    message: run.state === "stopped" ? `at ${checkpointAt(run.saved)}` : "" };
}

// ---- training -----------------------------------------------------------------------------

pyrite.events.addEventListener("train", (e) => {
  const event = e.detail.event;
  demo.events.push(event);
  if (event.type !== "start") dashboard.push(event);
  if (event.type === "step" && demo.state === "training") {
    const total = event.iterations ? `/${event.iterations}` : "";
    setStatus("training", `Training: epoch ${event.epoch}/${event.epochs}, ${event.split} ` +
      `step ${event.iteration}${total}`);
  }
});

async function train(settings, resume) {
  el.error.hidden = true;
  demo.lastError = null;
  busy(true);
  el.trained.hidden = true;
  if (!resume) {
    dashboard.reset();
    el.saved.textContent = ""; // an earlier run's summary is not this run's
  }
  setStatus("training", resume ? "Resuming from the stored checkpoint…"
    : settings && settings.dataset ? "Fetching the dataset and starting the run…"
      : "Fetching MNIST and starting the run…");
  try {
    const run = await pyrite.call(`${TRAINING}.start`, settings || {}, DATA, resume);
    demo.lastRun = run;
    await showSaved(run.saved);
    showTrained(run);
    const digits = `${pct(run.accuracy)} on ${run.saved.settings.valid_items} validation digits`;
    if (run.state === "stopped") {
      const where = checkpointAt(run.saved);
      dashboard.push(measured(run, `the model at step ${run.saved.step} (stopped)`));
      setStatus("stopped", `Stopped at ${where}: the model so far scores ${digits}. Resume ` +
        "continues from there.");
    } else {
      dashboard.push(measured(run, "the trained model"));
      setStatus("ready", `Finished: the trained model scores ${digits}.`);
    }
    return run;
  } catch (err) {
    showError(err);
    setStatus("error", "Training failed (see below).");
    throw err;
  } finally {
    busy(false);
  }
}

async function stop() {
  if (demo.state !== "training") return false;
  setStatus("stopping", "Stopping after the current step…");
  el.stop.disabled = true;
  return pyrite.signal("stop");
}

async function forget() {
  await pyrite.call(`${TRAINING}.forget`);
  dashboard.reset();
  el.trained.hidden = true;
  await showSaved(null);
}

const pct = (p) => `${p.toFixed(2)} %`; // as the dashboard's tiles show it

// ---- the trained model --------------------------------------------------------------------

function showTrained(run) {
  const s = run.saved.settings;
  el.score.textContent = `${s.model === "cnn" ? "The guide CNN" : "The MLP"} scores ` +
    `${pct(run.accuracy)} on ${s.valid_items} validation digits` +
    `${run.state === "stopped" ? " (stopped early)" : ""}.`;
  el.command.textContent = `pyrite infer mnist --record ${fileName(s)} --all`;
  if (!el.padSlot.firstChild) {
    const pad = document.createElement("pyrite-mnist");
    pad.setAttribute("device", "webgpu");
    pad.setAttribute("predictor", `${TRAINING}.predict`);
    el.padSlot.append(pad);
  }
  el.trained.hidden = false;
}

const fileName = (s) => `mnist-${s.model}-trained.bin`;

el.download.addEventListener("click", async () => {
  try {
    const bytes = await pyrite.call(`${TRAINING}.export`);
    const url = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
    const link = Object.assign(document.createElement("a"),
      { href: url, download: fileName(demo.lastRun?.saved?.settings || readSettings()) });
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (err) {
    showError(err);
  }
});

el.start.addEventListener("click", () => demo.start().catch(() => {}));
el.resume.addEventListener("click", () => demo.resume().catch(() => {}));
el.stop.addEventListener("click", () => stop());
el.forget.addEventListener("click", () => forget().catch(showError));

// ---- start --------------------------------------------------------------------------------

async function boot() {
  setStatus("loading", "Starting Python and WebGPU in this page…");
  try {
    const got = await pyrite.load({ device: "webgpu" });
    const status = await pyrite.call(`${TRAINING}.status`);
    demo.interrupted = status.interrupted;
    await showSaved(status.saved, true, status.interrupted);
    let scored = "";
    if (status.saved) {
      // a run stopped (or cut short by a reload) draws with its last checkpoint, as a
      // finished one draws with its model
      const run = { state: status.saved.done ? "done" : "stopped", saved: status.saved,
        accuracy: (await pyrite.call(`${TRAINING}.use_saved`, DATA)).accuracy };
      demo.lastRun = run;
      showTrained(run);
      const what = status.saved.done ? "the trained model"
        : `the model at step ${status.saved.step} (the last checkpoint)`;
      const end = measured(run, what);
      end.message = dashboard.data().message; // the replay's words on how the run ended
      dashboard.push(end);
      scored = ` Its model scores ${pct(run.accuracy)} on ` +
        `${status.saved.settings.valid_items} validation digits.`;
    }
    el.start.disabled = false;
    const adapter = String(got.adapter?.["in use"] || "").replace(/^#\d+\s+/, "");
    const ready = `Ready: Python ${got.python} on ${adapter || "WebGPU"}. `;
    if (status.saved && !status.saved.done) {
      setStatus("ready", ready + (status.interrupted ? interruptedAt(status.saved)
        : `A run was stopped at ${checkpointAt(status.saved)}.`) + scored +
        " Resume it, or start a new one.");
    } else {
      setStatus("ready", ready + (status.saved ? `A finished run is stored.${scored} ` : "") +
        "Choose a model and press Start.");
    }
  } catch (err) {
    demo.lastError = errorText(err);
    el.error.textContent = `Why: ${demo.lastError.replace(/^BackendUnavailable: /, "")}. ` +
      "What to do: open this page in a browser with WebGPU (Chrome or Edge 113 or later; " +
      "Chromium started with --enable-unsafe-webgpu), or train natively with " +
      "`pyrite train mnist`.";
    el.error.hidden = false;
    setStatus("error", "This browser cannot train here: training needs WebGPU in the page.");
    throw err;
  }
}
demo.ready = boot();
