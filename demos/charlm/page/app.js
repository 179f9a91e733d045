// The character model demo (served at /charlm by `pyrite serve`).
//
// The page keeps one generation going in the page's Python (pyrite.demos.charlm.session):
// `begin(prompt, options)` runs the prompt through the model in one call, then `next(n)`
// returns the next n characters, each of them one replay of the compiled window step (or, where
// programs do not replay, one position through the key/value cache), so the continuation
// appears as it is made. Typing restarts it (debounced). When the page cannot
// run the model and the user asks for it, the server's POST /api/predict/charlm answers with
// the whole continuation at once. Stop ends a generation where it is. Characters the model
// does not know (it knows printable ASCII and newlines) are replaced before it sees the prompt
// (accents dropped, the rest "?"), and a note says which.
//
// The run's state (#run-state, `data-state`): idle, generating, stopped, finished, failed.
//
// For tests and the console: window.charlmDemo = {ready, text, done, runs, lastError, mode,
// state, replaced, generate(prompt, options) -> the generated text, once all of it has come,
// stop()}.

import { $, DemoPage, errorText, span } from "/demos/shared/demo.js";

const DEBOUNCE_MS = 300; // restart this long after the last keystroke
const CHUNK = 4; // characters per call into Python (each a separate position on the device)
const SESSION = "pyrite.demos.charlm.session";

const el = {
  prompt: $("prompt"), tokens: $("tokens"), temperature: $("temperature"), topK: $("top-k"),
  seed: $("seed"), again: $("again"), echo: $("echo"), generated: $("generated"),
  stop: $("stop"), notice: $("notice"), runState: $("run-state"),
};
// what the shipped model knows: printable ASCII and the newline
const UNKNOWN = /[^\n\x20-\x7e]/gu;

const page = new DemoPage({
  model: "charlm", what: "the character model", sends: "your text",
  warmup: () => ({ prompt: "Return the", tokens: 4 }),
  onMode: () => {
    setRunState("idle", "Ready: type to generate.");
    restart();
  },
});

let run = 0; // the current generation's number; an older loop stops when it sees a newer one
let timer = null;

const demo = {
  ready: page.ready,
  text: "",
  done: null, // a promise for the current generation's end
  runs: 0,
  lastError: null,
  state: "idle",
  replaced: [], // the characters of the prompt the model did not know
  get mode() { return page.mode; },
  /** Generate after `prompt` with `options` ({tokens, temperature, top_k, seed}); resolves
   * to the generated text. */
  async generate(prompt, options = {}) {
    el.prompt.value = prompt;
    if (options.tokens !== undefined) el.tokens.value = String(options.tokens);
    if (options.temperature !== undefined) el.temperature.value = String(options.temperature);
    if (options.top_k !== undefined) el.topK.value = String(options.top_k);
    if (options.seed !== undefined) el.seed.value = String(options.seed);
    return restart();
  },
  stop: () => stop(),
};
window.charlmDemo = demo;

/** The prompt as the model can read it: accents dropped (é -> e), other unknown characters
 * as "?"; `replaced` lists the characters that were changed. */
export function readable(prompt) {
  const replaced = [...new Set(prompt.match(UNKNOWN) || [])];
  const text = prompt.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").replace(UNKNOWN, "?");
  return { text, replaced };
}

function showNotice(replaced) {
  demo.replaced = replaced;
  el.notice.hidden = replaced.length === 0;
  const shown = replaced.slice(0, 12).join(" ");
  el.notice.textContent = replaced.length === 0 ? "" : `The model knows only ASCII: ` +
    `${replaced.length} character${replaced.length === 1 ? "" : "s"} of your text ` +
    `(${shown}${replaced.length > 12 ? " …" : ""}) ${replaced.length === 1 ? "was" : "were"} ` +
    "replaced (accents dropped, the rest as ?).";
}

function setRunState(state, text) {
  demo.state = state;
  el.runState.dataset.state = state;
  el.runState.textContent = text;
  el.stop.disabled = state !== "generating";
}

function stop() {
  if (demo.state !== "generating") return false;
  run += 1; // the loop ends before its next call into Python
  const n = demo.text.length;
  setRunState("stopped", `Stopped after ${n} character${n === 1 ? "" : "s"}; Generate again ` +
    "or edit the text to start anew.");
  return true;
}

function options() {
  const number = (input, fallback) => {
    const value = Number(input.value);
    return Number.isFinite(value) ? value : fallback;
  };
  return {
    tokens: Math.max(1, Math.min(2000, Math.round(number(el.tokens, 200)))),
    temperature: Math.max(0, number(el.temperature, 0.8)),
    top_k: Math.max(1, Math.round(number(el.topK, 20))),
    seed: Math.round(number(el.seed, 0)),
  };
}

function showSpeed(chars, ms, label) {
  const perS = ms > 0 ? (chars * 1000) / ms : 0;
  page.el.timing.replaceChildren(span("value", `${perS.toFixed(1)} tokens/s`),
    span("sub", `${chars} characters in ${(ms / 1000).toFixed(2)} s · ${label}`));
  page.el.timing.dataset.tokensPerS = String(perS);
}

/** Start generating after the current prompt; resolves to the generated text. */
function restart() {
  clearTimeout(timer);
  if (!page.mode) return Promise.resolve("");
  const mine = ++run;
  demo.done = generate(mine);
  return demo.done;
}

async function generate(mine) {
  const { text: prompt, replaced } = readable(el.prompt.value);
  showNotice(replaced);
  const opts = options();
  el.echo.textContent = prompt;
  el.generated.textContent = "";
  demo.text = "";
  page.hideError();
  setRunState("generating", page.mode === "server"
    ? `Generating ${opts.tokens} characters on the server…`
    : `Generating: 0 of ${opts.tokens} characters…`);
  try {
    if (page.mode === "server") {
      const result = await page.predict({ prompt, ...opts });
      if (mine !== run) return demo.text;
      demo.text = result.text;
      el.generated.textContent = result.text;
      page.el.backend.textContent = result.backendLabel;
      showSpeed(result.text.length, result.roundTripMs, "whole continuation from the server");
    } else {
      const started = await page.pyrite.call(`${SESSION}.begin`, prompt, opts);
      let ms = 0;
      while (mine === run && demo.text.length < opts.tokens) {
        const n = Math.min(CHUNK, opts.tokens - demo.text.length);
        const out = await page.pyrite.call(`${SESSION}.next`, n);
        if (mine !== run) break;
        ms += out.ms;
        demo.text += out.text;
        el.generated.textContent = demo.text;
        el.runState.textContent = `Generating: ${demo.text.length} of ${opts.tokens} ` +
          "characters…";
        showSpeed(demo.text.length, ms, `prompt ${started.ms.toFixed(0)} ms · ` +
          `${page.pageBackend}`);
      }
      page.el.backend.textContent = page.pageBackend;
    }
    if (mine === run) {
      demo.runs += 1;
      setRunState("finished", `Finished: ${demo.text.length} characters.`);
    }
  } catch (err) {
    if (mine === run) {
      demo.lastError = errorText(err);
      page.showError(err, "Generation failed");
      setRunState("failed", "Generation failed (the reason is below); edit the text or " +
        "press Generate again to retry.");
    }
  }
  return demo.text;
}

el.prompt.addEventListener("input", () => {
  clearTimeout(timer);
  run += 1; // stop the running loop now; the new one starts after the pause
  showNotice(readable(el.prompt.value).replaced);
  timer = setTimeout(restart, DEBOUNCE_MS);
});
el.stop.addEventListener("click", () => stop());
for (const input of [el.tokens, el.temperature, el.topK, el.seed]) {
  input.addEventListener("change", () => restart());
}
el.again.addEventListener("click", () => {
  el.seed.value = String(Number(el.seed.value || 0) + 1);
  restart();
});

page.start();
page.ready.then((got) => {
  if (!page.mode && got.state !== "ready") {
    setRunState("idle", "Nothing generated: the model cannot run in this page (the message " +
      "above says why and what to do).");
  }
});
