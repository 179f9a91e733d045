"""Training the guide model with the Learner, as the book's `training.rs` does.

`train(artifact_dir, TrainingConfig(ModelConfig(10, 512), AdamConfig()))` writes the book's
artifacts (config.json, experiment.log, checkpoints, metric logs) and the trained model
(`<artifact_dir>/model.bin`, full precision), and returns the model. A new run first deletes
an earlier run's files there and keeps any other file; a folder pyrite did not make is refused
(pyrite.train.artifacts). `renderers=` adds views beside the terminal's (the live dashboard's
`DashboardRenderer`); `limit=` trains and validates on the first items only, for a quick run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY
from functools import partial
from pathlib import Path
from typing import Any

import pyrite
from pyrite.argtypes import check_fields
from pyrite.dataset import DataLoader, DataLoaderBuilder, Dataset, MnistDataset, PartialDataset
from pyrite.distributed.worker import Run, Setup, WorkerContext
from pyrite.module import Config
from pyrite.optim import AdamConfig
from pyrite.record import BinFileRecorder, HalfPrecision
from pyrite.train import (
    Accuracy,
    CpuMemory,
    CpuUse,
    EventRenderer,
    Learner,
    LearnerBuilder,
    LearningRate,
    Loss,
    MultiRenderer,
    Renderer,
    start_event,
)
from pyrite.train.artifacts import prepare_artifact_dir
from pyrite.train.renderer import default_renderer

from .data import MnistBatcher
from .model import Model, ModelConfig
from .sources import datasets


class TrainingConfig(Config):
    """The book's TrainingConfig (its defaults; `learning_rate` is the constant Adam rate)."""

    model: ModelConfig
    optimizer: AdamConfig
    _: KW_ONLY
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    learning_rate: float = 1.0e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_fields(self)  # epochs, batch size, seed, learning rate: as the options


#: what a run writes in its artifact folder besides the Learner's files
ARTIFACT_FILES = ("config.json", "model.bin")


def create_artifact_dir(artifact_dir: Path) -> None:
    """Make `artifact_dir` ready for a new run: an earlier run's files go, so the summary
    covers this run only; ConfigError for a folder holding files pyrite did not write."""
    prepare_artifact_dir(artifact_dir, ARTIFACT_FILES)


def _first(dataset: Dataset[Any], limit: int | None) -> Dataset[Any]:
    if limit is None or limit >= dataset.len():
        return dataset
    return PartialDataset(dataset, 0, limit)


def train(artifact_dir: str | Path, config: TrainingConfig,
          device: str = "autodiff<numpy>", *, resume: int | None = None,
          limit: int | None = None, renderers: Sequence[Renderer] = (),
          dataset: str | None = None, checkpoint_every: int | None = None,
          workers: int | None = None, ray_address: str | None = None) -> Model:
    """Train on MNIST's 60,000 training digits, validating on the 10,000 test digits (as the
    book does, for simplicity), or on the source `dataset` names (`sources.py`: a Hugging Face
    dataset, Parquet or SQLite). `resume=N` continues from checkpoint N instead of starting over;
    `limit=N` uses the first N digits of each split. `renderers` show progress beside the
    default view; an `EventRenderer` among them first gets the run's `start` event, and reports
    a stopped run as stopped. `workers=N` trains data-parallel on N Ray workers (at
    `ray_address`, else a local cluster), restarted from the last checkpoint when one dies
    (`checkpoint_every` steps inside an epoch, default 100 there).
    """
    artifact_dir = Path(artifact_dir)
    if resume is None:
        create_artifact_dir(artifact_dir)
    else:  # the folder must be a run's: its files are kept, the run goes on writing them
        prepare_artifact_dir(artifact_dir, ARTIFACT_FILES, clear=False)
    config.save(artifact_dir / "config.json")
    if workers is not None:
        return _train_on_workers(artifact_dir, config, device, workers, ray_address,
                                 resume=resume, limit=limit,
                                 checkpoint_every=checkpoint_every or 100, dataset=dataset)
    learner, train_loader, valid_loader = build_learner(
        artifact_dir, config, device, resume=resume, limit=limit, renderers=renderers,
        checkpoint_every=checkpoint_every, data=datasets(dataset) if dataset else None)
    model: Model = learner.fit(train_loader, valid_loader)
    model.save_file(artifact_dir / "model", BinFileRecorder())
    return model


def build_learner(artifact_dir: Path, config: TrainingConfig, device: str, *,
                  resume: int | None, limit: int | None, renderers: Sequence[Renderer] = (),
                  checkpoint_every: int | None = None,
                  data: tuple[Dataset[Any], Dataset[Any]] | None = None, compiled: bool = True
                  ) -> tuple[Learner, DataLoader[Any, Any], DataLoader[Any, Any]]:
    """The guide's Learner on `device` (seeded with the config's seed) and its train and
    valid loaders: what `train` runs, in one process or on each Ray worker. Several devices,
    comma-separated ("numpy:0,numpy:1"), train data-parallel; the first holds the model.
    `data`: (train, valid) datasets of MNIST's item layout instead of MNIST's own. `compiled`:
    False runs every step eagerly (`LearnerBuilder.compile`)."""
    first, *more = [name.strip() for name in device.split(",")]
    ad = pyrite.device(first)
    pyrite.seed(config.seed, device=ad)  # the training device: init and dropout
    inner = ad.inner if ad.is_autodiff else ad  # type: ignore[attr-defined]
    # several devices: batches made on the host, so each device's slice is uploaded once
    batches_on = pyrite.device("numpy") if more else ad
    train_loader = (DataLoaderBuilder(MnistBatcher(batches_on)).batch_size(config.batch_size)
                    .shuffle(config.seed).num_workers(config.num_workers)
                    .build(_first(data[0] if data else MnistDataset.train(), limit)))
    valid_loader = (DataLoaderBuilder(MnistBatcher(inner)).batch_size(config.batch_size)
                    .shuffle(config.seed).num_workers(config.num_workers)
                    .build(_first(data[1] if data else MnistDataset.test(), limit)))

    builder = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(Accuracy()).metric_valid_numeric(Accuracy())
               .metric_train_numeric(Loss()).metric_valid_numeric(Loss())
               .metric_train(LearningRate()).metric_train(CpuUse()).metric_train(CpuMemory())
               .with_file_checkpointer(BinFileRecorder())
               .devices([ad, *more])
               .compile(compiled)
               .num_epochs(config.num_epochs)
               .summary())
    if resume is not None:
        builder = builder.checkpoint(resume)
    if checkpoint_every is not None:
        builder = builder.checkpoint_every(checkpoint_every)
    if renderers:
        builder = builder.renderer(MultiRenderer(default_renderer(), *renderers))
        run = {"device": device, "batch_size": config.batch_size,
               "learning_rate": config.learning_rate, "seed": config.seed,
               "train_items": train_loader.dataset.len(),
               "valid_items": valid_loader.dataset.len()}
        if resume is not None:
            run["resumed_from_epoch"] = resume
        for renderer in renderers:
            if isinstance(renderer, EventRenderer):
                renderer.interrupter = renderer.interrupter or builder.interrupter()
                renderer.sink(start_event(config.num_epochs, run, "mnist: the Burn guide's CNN"))
    learner = builder.build(config.model.init(ad), config.optimizer.init(),
                            config.learning_rate)
    return learner, train_loader, valid_loader


def _worker_run(artifact_dir: Path, config: TrainingConfig, resume: int | None,
                limit: int | None, checkpoint_every: int, dataset: str | None,
                context: WorkerContext) -> Run:
    """One Ray worker's guide Learner, on the device the worker owns (each worker opens the
    `dataset` source itself: sources hold open files, which do not travel)."""
    learner, train_loader, valid_loader = build_learner(
        artifact_dir, config, f"autodiff<{context.device}>", resume=resume, limit=limit,
        checkpoint_every=checkpoint_every, data=datasets(dataset) if dataset else None)
    return Run(learner, train_loader, valid_loader)


def worker_setup(artifact_dir: Path, config: TrainingConfig, *, resume: int | None = None,
                 limit: int | None = None, checkpoint_every: int = 100,
                 dataset: str | None = None) -> Setup:
    """The guide as a `pyrite.distributed.fit` setup (the artifact folder made ready already:
    `train` does that, or `create_artifact_dir`)."""
    return partial(_worker_run, artifact_dir, config, resume, limit, checkpoint_every, dataset)


def _train_on_workers(artifact_dir: Path, config: TrainingConfig, device: str, workers: int,
                      ray_address: str | None, *, resume: int | None, limit: int | None,
                      checkpoint_every: int, dataset: str | None = None) -> Model:
    """`train` on Ray workers: CPU workers on numpy, GPU workers on webgpu (`device` says
    which); the driver saves rank 0's final model as `model.bin`."""
    from pyrite.distributed import fit

    kind = "webgpu" if "webgpu" in device else "numpy"
    setup = worker_setup(artifact_dir, config, resume=resume, limit=limit,
                         checkpoint_every=checkpoint_every, dataset=dataset)
    record = fit(setup, workers, device=kind, address=ray_address)
    ad = pyrite.device(device.split(",")[0])
    model: Model = config.model.init(ad).load_record(record)
    model.save_file(artifact_dir / "model", BinFileRecorder())
    return model


def export_record(model: Model, path: str | Path) -> Path:
    """Save `model` as the shipped record is saved: pyrite's binary format, half precision
    (about 1 MB; loads without msgpack or numpy, in the browser too)."""
    return model.save_file(path, BinFileRecorder(HalfPrecision()))
