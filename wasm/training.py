"""Training in a web page: the page's side of `pyrite.demos.train.run`, called from the
training page (`/train`) through pyrite.js (`pyrite.call("pyrite.wasm.training.start", ...)`).

The Learner runs unchanged in the page's worker on `autodiff<webgpu>`; what differs from a
native run goes through the Learner's small interfaces, each with a browser implementation
here:
- data: MNIST's gzip'd IDX files are fetched from the server (`data_url`, e.g. `/data/mnist/`)
  into Pyodide's file system, where `MnistDataset` reads and checks them as it does natively;
  or, when the settings name a dataset pack's URL (`"dataset"`), the pack is downloaded into
  the stored folder (IndexedDB) with `{type: "dataset", loaded, total}` progress messages,
  kept for later visits (checked by URL, ETag and size), and read a chunk at a time;
- storage: the run's folder (checkpoints, metric logs, settings) is in a folder kept in the
  browser's IndexedDB (`pyriteStorage` in worker.js); `on_checkpoint` flushes it, so a reload
  finds the last checkpoint and `start(..., resume=True)` continues at its step;
- stop: the Stop button sends `pyrite.signal("stop")`, which sets a flag in the worker while
  Python runs; the Learner's interrupter polls it after each step (`Interrupter.watch`);
- progress: an `EventRenderer` posts each training event to the page as
  `{type: "train", event}` (pyrite.js emits it as a "train" event) for the dashboard.
After a run, `predict(pixels)` classifies a drawing with the model just trained and
`export()` gives its record's bytes, which `pyrite infer mnist --record FILE` loads natively.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyrite
from pyrite.module import Module

STORAGE = "/pyrite-storage"  # kept in IndexedDB across visits
RUN = f"{STORAGE}/train"  # the run's folder (the Learner's artifact dir)
DATA = "/pyrite-data"  # MNIST's files, fetched from the server (not kept: the server has them)
_state: dict[str, Any] = {"model": None, "mounted": False}


def _js() -> Any:
    import js  # type: ignore[import-not-found]

    return js


def _wait(promise: Any) -> Any:
    from pyodide.ffi import run_sync  # type: ignore[import-not-found]

    return run_sync(promise)


def _mount() -> None:
    if not _state["mounted"]:
        _wait(_js().pyriteStorage.mount(STORAGE))
        _state["mounted"] = True


def _flush(epoch: int = 0, steps: int | None = None) -> None:
    _wait(_js().pyriteStorage.sync())


def _post(event: dict[str, Any]) -> None:
    js = _js()
    js.postMessage(js.JSON.parse(json.dumps({"type": "train", "event": event})))


def _stop_requested() -> bool:
    return bool(getattr(_js().pyriteSignals, "stop", False))


def _fetch_data(data_url: str) -> None:
    """MNIST's four files into DATA/mnist (once per visit)."""
    from pyrite.dataset.mnist import FILES

    folder = Path(DATA, "mnist")
    folder.mkdir(parents=True, exist_ok=True)
    base = data_url if data_url.endswith("/") else data_url + "/"
    for name in (name for pair in FILES.values() for name in pair):
        target = folder / name
        if target.exists():
            continue
        response = _wait(_js().fetch(base + name))
        if not response.ok:
            raise FileNotFoundError(f"{base}{name} answered {response.status}: the server has "
                                    f"no MNIST (start `pyrite serve` with PYRITE_DATA set to a "
                                    f"folder holding mnist/{name})")
        data = _wait(response.arrayBuffer()).to_py()
        tmp = target.with_suffix(".part")
        tmp.write_bytes(bytes(data))
        os.replace(tmp, target)


def _post_dataset(url: str, loaded: int, total: int, state: str) -> None:
    js = _js()
    message = {"type": "dataset", "url": url, "loaded": loaded, "total": total, "state": state}
    js.postMessage(js.JSON.parse(json.dumps(message)))


def _fetch_pack(url: str) -> str:
    """The dataset pack at `url`, downloaded into STORAGE/datasets (once: a later visit finds
    it there when the server still has the same file), as a local path."""
    import hashlib
    import time

    from pyrite.dataset import PackDataset

    folder = Path(STORAGE, "datasets")
    folder.mkdir(parents=True, exist_ok=True)
    response = _wait(_js().fetch(url))
    if not response.ok:
        raise FileNotFoundError(f"the dataset at {url} answered {response.status}: check the "
                                "URL (with `pyrite serve`, put packs in $PYRITE_DATA/packs)")
    headers = response.headers
    size = int(headers.get("content-length") or 0)
    stamp_now = {"url": url, "etag": str(headers.get("etag") or ""), "size": size}
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    target, stamp = folder / f"{key}.pyds", folder / f"{key}.json"
    if target.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == stamp_now:
        _wait(response.body.cancel())
        _post_dataset(url, target.stat().st_size, target.stat().st_size, "stored")
        return str(target)
    total, loaded, shown = size, 0, 0.0
    reader = response.body.getReader()
    part = target.with_suffix(".part")
    with open(part, "wb") as f:
        while True:
            chunk = _wait(reader.read())
            if chunk.done:
                break
            data = chunk.value.to_bytes()
            f.write(data)
            loaded += len(data)
            if time.monotonic() - shown > 0.1:
                _post_dataset(url, loaded, max(total, loaded), "downloading")
                shown = time.monotonic()
    try:
        PackDataset(part).close()  # a damaged download is refused before it is kept
    except Exception:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, target)
    stamp.write_text(json.dumps(stamp_now))
    _flush()
    _post_dataset(url, loaded, loaded, "downloaded")
    return str(target)


def _local_data(settings: dict[str, Any], data_url: str) -> dict[str, Any]:
    """`settings` with a dataset URL replaced by the downloaded pack's path (MNIST's files
    fetched instead when no dataset is named)."""
    dataset = str(settings.get("dataset") or "")
    if not dataset:
        _fetch_data(data_url)
        return settings
    if dataset.startswith(STORAGE):  # a stored run's pack, already here
        return settings
    return {**settings, "dataset": _fetch_pack(dataset)}


def _device() -> pyrite.Backend:
    from . import page

    backend = page.device()
    return pyrite.device(f"autodiff<{backend.name}>")


def _memory(backend: pyrite.Backend) -> int | None:
    stats = getattr(backend, "memory_stats", None)
    return int(stats().bytes_in_use) if stats is not None else None


def status() -> dict[str, Any]:
    """What the page can offer: the stored run (`saved`, see `run.saved_run`), whether it was
    interrupted (the page reloaded or closed while training) and whether a trained model is in
    memory."""
    from pyrite.demos.train import run

    from . import page_run

    _mount()
    saved = run.saved_run(RUN)
    notes = page_run.read(RUN)
    # the page went away while it trained: the run stands at its last checkpoint
    interrupted = bool(saved and not saved["done"] and notes and notes["state"] == "running")
    return {"saved": saved, "trained": _state["model"] is not None,
            "interrupted": interrupted}


def history() -> list[dict[str, Any]]:
    """The stored run's curve as training events (from its metric logs), so the dashboard
    shows the steps before a reload."""
    from pyrite.demos.train import run

    from . import page_run

    saved = run.saved_run(RUN)
    if saved is None:
        return []
    settings = run.TrainSettings.from_dict(saved["settings"])
    per_epoch = settings.steps_per_epoch
    events: list[dict[str, Any]] = []
    for epoch in range(1, saved["epoch"] + 1):
        train = _read_logs(epoch, "train")
        count = len(next(iter(train.values()), []))
        for i in range(count):
            events.append({"type": "step", "split": "train", "epoch": epoch,
                           "epochs": settings.epochs, "iteration": i + 1,
                           "iterations": per_epoch, "step": (epoch - 1) * per_epoch + i + 1,
                           "metrics": {k: v[i] for k, v in train.items()}})
        valid = _read_logs(epoch, "valid")
        if valid:
            means = {k: sum(v) / len(v) for k, v in valid.items() if v}
            events.append({"type": "epoch", "split": "valid", "epoch": epoch,
                           "epochs": settings.epochs, "step": epoch * per_epoch,
                           "metrics": means})
    return page_run.with_notes(events, page_run.read(RUN))


def _read_logs(epoch: int, split: str) -> dict[str, list[float]]:
    """Each metric's values in the run's log of `split` in `epoch` (the Learner's layout)."""
    from pyrite.train import FileMetricLogger

    logger = FileMetricLogger(RUN)
    folder = logger.path("", epoch, split).parent
    names = sorted(p.stem for p in folder.glob("*.log")) if folder.is_dir() else []
    return {name: [value for value, _ in logger.read(name, epoch, split)] for name in names}


def start(settings: dict[str, Any], data_url: str, resume: bool = False) -> dict[str, Any]:
    """Train (or, `resume=True`, continue the stored run) on the page's device; posts training
    events while it runs and returns how it ended: `{"state", "saved", "accuracy"}`."""
    from pyrite.demos.train import run
    from pyrite.train import EventRenderer, start_event

    from . import page_run

    _mount()
    _js().pyriteSignals.stop = False
    ad = _device()
    saved = run.saved_run(RUN) if resume else None
    chosen = run.TrainSettings.from_dict(
        _local_data(saved["settings"] if saved else settings, data_url)).check()
    notes = page_run.PageRun(RUN, resume)

    def post(event: dict[str, Any]) -> None:
        notes.observe(event)
        _post(event)

    def checkpointed(epoch: int, steps: int | None) -> None:
        notes.save("running")  # stored with the checkpoint: a reload finds the run as it was
        _flush()

    renderer = EventRenderer(post, memory=lambda: _memory(ad.inner),  # type: ignore[attr-defined]
                             interval_s=0.2)
    _post(start_event(chosen.epochs, chosen.to_dict(), chosen.model))
    _state["model"] = None
    model = run.train(chosen, ad, RUN, root=DATA, renderer=renderer, resume=resume,
                      stop=_stop_requested, on_checkpoint=checkpointed)
    stopped = _stop_requested()
    notes.save("stopped" if stopped else "done")
    _flush()
    _state["model"] = model.valid()
    return {"state": "stopped" if stopped else "done", "saved": run.saved_run(RUN),
            "accuracy": run.evaluate(_state["model"], chosen, DATA)}


def use_saved(data_url: str) -> dict[str, Any]:
    """Load the stored run's last checkpoint as the model to draw with (after a reload):
    `{"saved", "accuracy"}` (on the run's validation digits)."""
    from pyrite.demos.train import run

    _mount()
    _state["model"] = run.load_checkpoint(RUN, _device().inner)  # type: ignore[attr-defined]
    saved = run.saved_run(RUN)
    assert saved is not None  # load_checkpoint found it
    settings = run.TrainSettings.from_dict(_local_data(saved["settings"], data_url))
    return {"saved": saved, "accuracy": run.evaluate(_state["model"], settings, DATA)}


def _model() -> Module:
    model = _state["model"]
    if model is None:
        raise RuntimeError("no model has been trained in this page yet: press Start first")
    return model  # type: ignore[no-any-return]


def predict(pixels: Any) -> dict[str, object]:
    """Classify a drawing (784 grey levels, as the MNIST page sends) with the trained model:
    `{"label", "probabilities", "ms", "backend"}`."""
    import time

    from pyrite.demos.mnist.predict import predict as classify

    values = pixels.to_py() if hasattr(pixels, "to_py") else pixels
    model = _model()
    start = time.perf_counter()
    out = classify(model, list(values))  # type: ignore[arg-type]
    out["ms"] = (time.perf_counter() - start) * 1000
    out["backend"] = f"{model.devices()[0].name} (page)"
    return out


def export() -> bytes:
    """The trained model's record, as the bytes of a `.bin` file."""
    from pyrite.demos.train import run

    return run.export_record(_model())


def forget() -> None:
    """Delete the stored run (the page's "Start over")."""
    import shutil

    _mount()
    shutil.rmtree(RUN, ignore_errors=True)
    _flush()
    _state["model"] = None


__all__ = ["export", "forget", "history", "predict", "start", "status", "use_saved"]
