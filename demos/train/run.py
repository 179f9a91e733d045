"""One training run of the page's MNIST models with the Learner: the same code natively and
in a page's worker (pyrite.wasm.training), so a run's loss curve is the same in both places.

    settings = TrainSettings(model="mlp", epochs=2, train_items=6000)
    model = train(settings, "autodiff<webgpu>", "/tmp/run", renderer=...)

A run keeps the Learner's artifacts in its folder (settings.json, checkpoints, metric logs,
experiment.log); `saved_run(folder)` says where a stopped run can resume, and
`train(..., resume=True)` resumes it. A new run deletes an earlier run's files only, and refuses
a folder pyrite did not make (pyrite.train.artifacts). Data: MNIST's first `train_items`
training digits, in an order shuffled by `seed` each epoch, and its first `valid_items` test
digits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY
from pathlib import Path
from typing import Any

import pyrite
from pyrite.errors import ConfigError
from pyrite.module import Config, Module

from ..mnist.data import MnistBatcher
from .models import MODELS, build

SETTINGS = "settings.json"
PAGE_RUN = "page-run.json"  # the training page's notes on the run (pyrite.wasm.page_run)
SCHEDULES = ("constant", "cosine")


class TrainSettings(Config):
    """What the training page lets a person choose (the Learner's options for a run)."""

    _: KW_ONLY
    model: str = "mlp"
    epochs: int = 2
    batch_size: int = 64
    learning_rate: float = 1.0e-3
    lr_schedule: str = "constant"  # or "cosine": down to 1 % of the rate over the whole run
    train_items: int = 6000
    valid_items: int = 1000
    seed: int = 42
    checkpoint_every: int = 25  # steps; a reload loses at most this many
    #: "" for MNIST, or a dataset source of 28x28 digits (`pyrite.demos.mnist.sources`: a
    #: Hugging Face dataset, Parquet, SQLite, or the .pyds pack a page downloaded)
    dataset: str = ""

    def check(self) -> TrainSettings:
        """These settings, or a ConfigError naming the bad one and its valid range."""
        if self.model not in MODELS:
            raise ConfigError(f"model must be one of {', '.join(sorted(MODELS))}, "
                              f"got {self.model!r}")
        ranges = {"epochs": (1, 100), "batch_size": (1, 1024), "train_items": (1, 60_000),
                  "valid_items": (1, 10_000), "checkpoint_every": (1, 100_000)}
        for name, (lo, hi) in ranges.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ConfigError(f"{name} must be a whole number from {lo} to {hi}, "
                                  f"got {value!r}")
        if self.lr_schedule not in SCHEDULES:
            raise ConfigError(f"lr_schedule must be one of {', '.join(SCHEDULES)}, "
                              f"got {self.lr_schedule!r}")
        if not 0 < self.learning_rate <= 1:
            raise ConfigError(f"learning_rate must be in (0, 1], got {self.learning_rate!r}")
        return self

    @property
    def steps_per_epoch(self) -> int:
        """Training steps in an epoch (the last batch may be smaller)."""
        return -(-min(self.train_items, 60_000) // self.batch_size)


def datasets(settings: TrainSettings, root: str | Path | None = None) -> tuple[Any, Any]:
    """The run's (train, valid) datasets: the first items of MNIST's two splits, or of the
    source `settings.dataset` names (its validation part: see `mnist.sources`)."""
    from pyrite.dataset import MnistDataset
    from pyrite.dataset.transform import PartialDataset

    if settings.dataset:
        from ..mnist.sources import datasets as sources

        train, valid = sources(settings.dataset)
    else:
        train = MnistDataset("train", root=root, download=root is None)
        valid = MnistDataset("test", root=root, download=root is None)
    return (PartialDataset(train, 0, min(settings.train_items, train.len())),
            PartialDataset(valid, 0, min(settings.valid_items, valid.len())))


def loaders(settings: TrainSettings, device: pyrite.Backend,
            root: str | Path | None = None) -> tuple[Any, Any]:
    """(train, valid) loaders: train batches on the autodiff `device`, valid ones on its
    inner device (the Learner validates `model.valid()`)."""
    from pyrite.dataset import DataLoaderBuilder

    train, valid = datasets(settings, root)
    inner = device.inner if device.is_autodiff else device  # type: ignore[attr-defined]
    return ((DataLoaderBuilder(MnistBatcher(device)).batch_size(settings.batch_size)
             .shuffle(settings.seed).build(train)),
            (DataLoaderBuilder(MnistBatcher(inner)).batch_size(settings.batch_size)
             .build(valid)))


def saved_run(folder: str | Path) -> dict[str, Any] | None:
    """What a run in `folder` left: `{"settings", "epoch", "steps", "step", "done"}` (its last
    checkpoint: epoch, steps of that epoch it holds or None for all, global step, whether
    every epoch is done), or None when there is no checkpoint to resume from."""
    from pyrite.record import BinFileRecorder
    from pyrite.train.checkpoint import PositionFile
    from pyrite.train.checkpoint_index import CheckpointIndex

    folder = Path(folder)
    if not (folder / SETTINGS).exists():
        return None
    settings = TrainSettings.load(folder / SETTINGS)
    # complete epochs only: a kill -9 during a checkpoint leaves an incomplete one behind
    epochs = CheckpointIndex(folder / "checkpoint", BinFileRecorder.extension).complete()
    if not epochs:
        return None
    epoch = epochs[-1]
    steps = PositionFile(folder / "checkpoint").load(epoch)
    per_epoch = settings.steps_per_epoch
    return {"settings": settings.to_dict(), "epoch": epoch, "steps": steps,
            "step": (epoch - 1) * per_epoch + (per_epoch if steps is None else steps),
            "done": steps is None and epoch >= settings.epochs}


def train(settings: TrainSettings, device: str | pyrite.Backend, folder: str | Path, *,
          root: str | Path | None = None, renderer: Any = None, resume: bool = False,
          stop: Callable[[], bool] | None = None,
          on_checkpoint: Callable[[int, int | None], None] | None = None) -> Module:
    """Train `settings.model` on `device` (an autodiff device, or a plain one to wrap) with
    the Learner, keeping the run in `folder`; the trained model.

    `renderer` shows progress (default: the Learner's); `stop()` is polled after each step (a
    page's Stop button); `on_checkpoint(epoch, steps)` runs after each checkpoint (a page
    flushes browser storage there); `resume=True` continues the run `folder` holds, with the
    settings it was started with.
    """
    from pyrite.optim import AdamConfig
    from pyrite.record import BinFileRecorder
    from pyrite.train import Accuracy, LearnerBuilder, LearningRate, Loss
    from pyrite.train.artifacts import prepare_artifact_dir

    folder = Path(folder)
    saved = saved_run(folder) if resume else None
    if resume:
        if saved is None:
            raise ConfigError(f"{folder} holds no checkpoint to resume from; start a new run")
        settings = TrainSettings.from_dict(saved["settings"])
    settings.check()
    ad = pyrite.device(device)
    if not ad.is_autodiff:
        ad = pyrite.device(f"autodiff<{ad.name}>")
    # a new run deletes an earlier run's files (only those), so curves do not mix
    prepare_artifact_dir(folder, [SETTINGS, PAGE_RUN], clear=not resume)
    settings.save(folder / SETTINGS)
    pyrite.seed(settings.seed, device=ad)  # the training device's generator: init, dropout
    train_loader, valid_loader = loaders(settings, ad, root)
    builder = (LearnerBuilder(folder)
               .metric_train_numeric(Loss()).metric_valid_numeric(Loss())
               .metric_train_numeric(Accuracy()).metric_valid_numeric(Accuracy())
               .metric_train(LearningRate())
               .with_file_checkpointer(BinFileRecorder())
               .checkpoint_every(settings.checkpoint_every)
               .num_epochs(settings.epochs))
    if renderer is not None:
        builder = builder.renderer(renderer)
    if stop is not None:
        builder.interrupter().watch(stop, "stopped from the page")
    if on_checkpoint is not None:
        builder = builder.on_checkpoint(on_checkpoint)
    if saved is not None:
        builder = builder.checkpoint(saved["epoch"])
    learner = builder.build(build(settings.model, ad), AdamConfig().init(), _schedule(settings))
    model: Module = learner.fit(train_loader, valid_loader)
    return model


def _schedule(settings: TrainSettings) -> Any:
    """The learning rate of each step: constant, or a half cosine over the whole run."""
    from pyrite.optim import CosineAnnealingLrSchedulerConfig

    if settings.lr_schedule == "constant":
        return settings.learning_rate
    steps = settings.epochs * settings.steps_per_epoch
    return CosineAnnealingLrSchedulerConfig(settings.learning_rate, steps,
                                            min_lr=settings.learning_rate / 100)


def load_checkpoint(folder: str | Path, device: str | pyrite.Backend) -> Module:
    """The model of the run's last checkpoint, on `device` (for inference)."""
    from pyrite.record import BinFileRecorder
    from pyrite.train import FileCheckpointer

    saved = saved_run(folder)
    if saved is None:
        raise ConfigError(f"{folder} holds no trained model; train one first")
    checkpointer = FileCheckpointer(Path(folder) / "checkpoint", BinFileRecorder(), "model")
    model = build(saved["settings"]["model"], device)
    return model.load_record(checkpointer.restore(saved["epoch"]))


def export_record(model: Module) -> bytes:
    """The model's record as the bytes of a full-precision `.bin` file: what the page offers
    for download and `pyrite infer mnist --record FILE` loads."""
    from pyrite.record import BinBytesRecorder

    return bytes(BinBytesRecorder().to_bytes(model.into_record()))


def evaluate(model: Any, settings: TrainSettings, root: str | Path | None = None) -> float:
    """Accuracy in percent of `model` (one of models.MODELS) on the run's validation digits."""
    from ..mnist.inference import evaluate as accuracy

    return accuracy(model, dataset=datasets(settings, root)[1])


__all__ = ["SETTINGS", "TrainSettings", "datasets", "evaluate", "export_record",
           "load_checkpoint", "loaders", "saved_run", "train"]
