// The training page's data choice: MNIST from this server, or the user's own digits as a
// dataset pack (.pyds) at a URL. Python (pyrite/wasm/training.py) downloads a pack into this
// browser's IndexedDB once and reports progress as {type: "dataset", url, loaded, total, state}
// messages, which pyrite.js emits as "dataset" events; this module shows them.

const MB = (n) => `${(n / 1e6).toFixed(1)} MB`;

export function setupDataChoice(form, pyrite) {
  const source = form.elements.namedItem("data_source");
  const url = form.elements.namedItem("dataset");
  const urlLabel = document.getElementById("dataset-url");
  const progress = document.getElementById("dataset-progress");
  const note = document.getElementById("dataset-note");

  const sync = () => {
    const own = source.value === "url";
    urlLabel.hidden = !own;
    url.required = own;
    if (!own) note.textContent = "";
  };
  source.addEventListener("change", sync);
  sync();

  pyrite.events.addEventListener("dataset", (e) => {
    const { loaded, total, state } = e.detail;
    if (state === "downloading") {
      progress.hidden = false;
      progress.max = total || 1;
      progress.value = loaded;
      note.textContent = `Downloading the dataset: ${MB(loaded)}` +
        (total ? ` of ${MB(total)}` : "");
    } else {
      progress.hidden = true;
      note.textContent = state === "stored"
        ? `Using the copy of the dataset stored in this browser (${MB(loaded)}).`
        : `Dataset downloaded (${MB(loaded)}) and stored in this browser for later visits.`;
    }
  });

  return {
    // the "dataset" setting: "" for MNIST, else the pack's absolute URL
    value() {
      return source.value === "url" && url.value.trim()
        ? new URL(url.value.trim(), location.href).href : "";
    },
    // a stored run's setting: a pack it downloaded before (kept in this browser)
    show(dataset) {
      source.value = dataset ? "url" : "mnist";
      sync();
      if (dataset) note.textContent = "This run trains on a dataset stored in this browser.";
    },
  };
}
