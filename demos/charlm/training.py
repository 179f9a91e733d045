"""Training the character model with the Learner: random windows of the corpus, Adam with a
cosine learning-rate schedule.

`train(artifact_dir, TrainingConfig(...))` writes the Learner's artifacts (config.json, metric
logs, checkpoints) and the trained model (`<artifact_dir>/model.bin`, full precision) and
returns it; an earlier run's files there are deleted first, any other file kept, and a folder
pyrite did not make is refused (pyrite.train.artifacts). Each training step draws
`batch_size` windows of `context + 1` characters at random offsets of the training split,
from a generator seeded by (seed, epoch), so a run repeats exactly; validation reads fixed,
evenly spaced windows of the validation split.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import KW_ONLY
from pathlib import Path

import pyrite
from pyrite import Backend, Tensor, TensorData, from_data
from pyrite.argtypes import check_fields
from pyrite.module import Config
from pyrite.optim import AdamConfig, CosineAnnealingLrSchedulerConfig
from pyrite.record import BinFileRecorder, HalfPrecision
from pyrite.train import LearnerBuilder, LearningRate, Loss
from pyrite.train.artifacts import prepare_artifact_dir

from . import corpus
from .model import Model, ModelConfig

#: what a run writes in its artifact folder besides the Learner's files
ARTIFACT_FILES = ("config.json", "model.bin")


class TrainingConfig(Config):
    """The run: model, optimizer, and the schedule `learning_rate` -> `min_learning_rate` by
    a half cosine over all the steps."""

    model: ModelConfig
    optimizer: AdamConfig
    _: KW_ONLY
    num_epochs: int = 24
    steps_per_epoch: int = 100
    batch_size: int = 16
    valid_windows: int = 64
    seed: int = 42
    learning_rate: float = 2.0e-3
    min_learning_rate: float = 1.0e-4
    corpus_size: int = corpus.SIZE
    #: where the text comes from: "" for the standard library's docstrings, or a dataset
    #: source (`pyrite.dataset.sources`) with a "text" column
    dataset: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_fields(self)  # epochs, steps, batch size, seed, rates: as the options


def text(config: TrainingConfig) -> str:
    """The run's whole text (both splits): the docstrings or the dataset's text column."""
    if config.dataset:
        return corpus.from_dataset(config.dataset, config.corpus_size)
    return corpus.corpus(config.corpus_size)


def default_config(dataset: str = "", **changes: object) -> TrainingConfig:
    """The shipped model's config (the vocabulary is the corpus's character set); with a
    `dataset`, the vocabulary is that text's."""
    whole = corpus.from_dataset(dataset) if dataset else corpus.corpus()
    model = ModelConfig(corpus.vocabulary(whole), d_model=128, n_heads=4, n_layers=3,
                        d_ff=512, context=64)
    return TrainingConfig(model, AdamConfig(), dataset=dataset).replace(**changes)


def encode(text: str, vocab: str) -> list[int]:
    index = {c: i for i, c in enumerate(vocab)}
    return [index[c] for c in text]


class WindowLoader:
    """Batches (batch, context + 1) of token windows; one pass is one epoch of `steps`."""

    def __init__(self, ids: list[int], device: Backend, *, context: int, batch_size: int,
                 steps: int, seed: int | None) -> None:
        if len(ids) <= context + 1:
            raise ValueError(f"charlm: the text has {len(ids)} characters, a window needs "
                             f"{context + 2}")
        self.ids, self.device = ids, device
        self.context, self.batch_size, self.steps, self.seed = context, batch_size, steps, seed
        self.epoch, self.skip = 0, 0

    def __len__(self) -> int:
        return self.steps

    def set_epoch(self, epoch: int, *, skip: int = 0) -> None:
        self.epoch, self.skip = epoch, skip

    def starts(self, epoch: int) -> list[list[int]]:
        """The windows' offsets per step: random (seeded) or, without a seed, evenly spaced."""
        last = len(self.ids) - self.context - 1
        if self.seed is None:
            n = self.steps * self.batch_size
            flat = [i * last // max(n - 1, 1) for i in range(n)]
        else:
            rng = random.Random(f"{self.seed}/{epoch}")
            flat = [rng.randrange(last + 1) for _ in range(self.steps * self.batch_size)]
        return [flat[i:i + self.batch_size] for i in range(0, len(flat), self.batch_size)]

    def batch(self, starts: list[int]) -> Tensor:
        width = self.context + 1
        flat = [i for s in starts for i in self.ids[s:s + width]]
        return from_data(TensorData(flat, shape=(len(starts), width), dtype="i32"),
                         device=self.device)

    def __iter__(self) -> Iterator[Tensor]:
        self.epoch += 1
        for starts in self.starts(self.epoch)[self.skip:]:
            yield self.batch(starts)
        self.skip = 0


def loaders(config: TrainingConfig, device: Backend) -> tuple[WindowLoader, WindowLoader]:
    """(train, valid) loaders over the corpus's two splits."""
    train_text, valid_text = corpus.split(text(config))
    vocab, context = config.model.vocab, config.model.context
    inner = device.inner if device.is_autodiff else device  # type: ignore[attr-defined]
    train = WindowLoader(encode(train_text, vocab), device, context=context,
                         batch_size=config.batch_size, steps=config.steps_per_epoch,
                         seed=config.seed)
    valid_batches = max(1, config.valid_windows // config.batch_size)
    valid = WindowLoader(encode(valid_text, vocab), inner, context=context,
                         batch_size=config.batch_size, steps=valid_batches, seed=None)
    return train, valid


def train(artifact_dir: str | Path, config: TrainingConfig,
          device: str = "autodiff<numpy>") -> Model:
    """Train from scratch; the Learner's artifacts go to `artifact_dir` (an earlier run's are
    deleted first, other files kept; ConfigError for a folder pyrite did not make). Several
    devices, comma-separated ("autodiff<webgpu:0>,webgpu:1"), train data-parallel."""
    artifact_dir = prepare_artifact_dir(artifact_dir, ARTIFACT_FILES)
    config.save(artifact_dir / "config.json")
    pyrite.seed(config.seed)
    first, *more = [name.strip() for name in device.split(",")]
    ad = pyrite.device(first)
    pyrite.seed(config.seed, device=ad)  # the training device too (numpy:0 has its own)
    train_loader, valid_loader = loaders(config, ad)
    if more:  # batches made on the host, so each device's slice is uploaded once
        train_loader.device = pyrite.device("numpy")
    steps = config.num_epochs * config.steps_per_epoch
    schedule = CosineAnnealingLrSchedulerConfig(config.learning_rate, steps,
                                                min_lr=config.min_learning_rate)
    learner = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(Loss()).metric_valid_numeric(Loss())
               .metric_train(LearningRate())
               .with_file_checkpointer(BinFileRecorder())
               .devices([ad, *more])
               .num_epochs(config.num_epochs)
               .summary()
               .build(config.model.init(ad), config.optimizer.init(), schedule))
    model: Model = learner.fit(train_loader, valid_loader)
    model.save_file(artifact_dir / "model", BinFileRecorder())
    return model


def validation_loss(model: Model, config: TrainingConfig, windows: int = 256) -> float:
    """The mean next-character loss (nats) over `windows` evenly spaced validation windows."""
    device = model.devices()[0]
    _, valid_text = corpus.split(text(config))
    loader = WindowLoader(encode(valid_text, model.vocab), device, context=model.context,
                          batch_size=16, steps=max(1, windows // 16), seed=None)
    losses = [float(model.loss(batch).loss.into_scalar()) for batch in loader]
    return sum(losses) / len(losses)


def export_record(model: Model, path: str | Path) -> Path:
    """Save `model` as the shipped record: pyrite's binary format at half precision."""
    return model.save_file(path, BinFileRecorder(HalfPrecision()))


__all__ = ["ARTIFACT_FILES", "TrainingConfig", "WindowLoader", "default_config", "encode",
           "export_record", "loaders", "train", "validation_loss"]
