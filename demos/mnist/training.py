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
from pathlib import Path
from typing import Any

import pyrite
from pyrite.argtypes import check_fields
from pyrite.dataset import DataLoaderBuilder, Dataset, MnistDataset, PartialDataset
from pyrite.module import Config
from pyrite.optim import AdamConfig
from pyrite.record import BinFileRecorder, HalfPrecision
from pyrite.train import (
    Accuracy,
    CpuMemory,
    CpuUse,
    EventRenderer,
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
          dataset: str | None = None) -> Model:
    """Train on MNIST's 60,000 training digits, validating on the 10,000 test digits (as the
    book does, for simplicity), or on the source `dataset` names (`sources.py`: a Hugging Face
    dataset, Parquet or SQLite). `resume=N` continues from checkpoint N instead of starting over;
    `limit=N` uses the first N digits of each split. `renderers` show progress beside the
    default view; an `EventRenderer` among them first gets the run's `start` event, and reports
    a stopped run as stopped.
    """
    artifact_dir = Path(artifact_dir)
    if resume is None:
        create_artifact_dir(artifact_dir)
    else:  # the folder must be a run's: its files are kept, the run goes on writing them
        prepare_artifact_dir(artifact_dir, ARTIFACT_FILES, clear=False)
    config.save(artifact_dir / "config.json")
    ad = pyrite.device(device)
    pyrite.seed(config.seed, device=ad)  # the training device: init and dropout
    inner = ad.inner if ad.is_autodiff else ad  # type: ignore[attr-defined]
    train_items: Dataset[Any]
    valid_items: Dataset[Any]
    if dataset is None:
        train_items, valid_items = MnistDataset.train(), MnistDataset.test()
    else:
        train_items, valid_items = datasets(dataset)

    train_loader = (DataLoaderBuilder(MnistBatcher(ad)).batch_size(config.batch_size)
                    .shuffle(config.seed).num_workers(config.num_workers)
                    .build(_first(train_items, limit)))
    valid_loader = (DataLoaderBuilder(MnistBatcher(inner)).batch_size(config.batch_size)
                    .shuffle(config.seed).num_workers(config.num_workers)
                    .build(_first(valid_items, limit)))

    builder = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(Accuracy()).metric_valid_numeric(Accuracy())
               .metric_train_numeric(Loss()).metric_valid_numeric(Loss())
               .metric_train(LearningRate()).metric_train(CpuUse()).metric_train(CpuMemory())
               .with_file_checkpointer(BinFileRecorder())
               .devices([ad])
               .num_epochs(config.num_epochs)
               .summary())
    if resume is not None:
        builder = builder.checkpoint(resume)
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
    model: Model = learner.fit(train_loader, valid_loader)
    model.save_file(artifact_dir / "model", BinFileRecorder())
    return model


def export_record(model: Model, path: str | Path) -> Path:
    """Save `model` as the shipped record is saved: pyrite's binary format, half precision
    (about 1 MB; loads without msgpack or numpy, in the browser too)."""
    return model.save_file(path, BinFileRecorder(HalfPrecision()))
