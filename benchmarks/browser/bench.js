// The page contract of benchmarks/browser.py. Every peer page (and pyrite's) sets, as soon as
// its module runs:
//
//   window.bench = {
//     ready: Promise<{coldMs}>,   // resolves once the framework and the weights are loaded and
//                                 // one prediction (a blank 28x28 image) has been read back to
//                                 // JS; coldMs = performance.now() then (ms since navigation)
//     predict(pixels) -> Promise<{probabilities, ms}>,
//                                 // pixels: 784 grey levels 0..255 (row-major 28x28, white
//                                 // digit on black); probabilities: 10 numbers (softmax);
//                                 // ms: from the call to the probabilities being in JS
//     info: {framework, backend, ...} // free-form, copied into the results
//   };
//
// publish() below builds that object from two functions, so every page times the same way.

export const BLANK = new Array(784).fill(0);
export const MEAN = 0.1307;
export const STD = 0.3081;

export function param(name, fallback) {
  return new URLSearchParams(location.search).get(name) ?? fallback;
}

// load(): Promise<void> builds the model; run(pixels): Promise<ArrayLike<number>> returns the
// ten probabilities, read back to JS.
export function publish(info, load, run) {
  const predict = async (pixels) => {
    const t0 = performance.now();
    const probabilities = await run(pixels);
    const ms = performance.now() - t0;
    return { probabilities: Array.from(probabilities), ms };
  };
  const ready = (async () => {
    await load();
    await run(BLANK);
    return { coldMs: performance.now() };
  })();
  window.bench = { ready, predict, info };
  return window.bench;
}

// A classic (UMD) script, for libraries shipped that way.
export function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(script);
  });
}
