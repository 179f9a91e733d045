"""Inference with the trained guide model: the artifact dir's model when there is one, else
the record shipped with pyrite (`mnist.bin`, half precision)."""

from __future__ import annotations

from pathlib import Path

import pyrite
from pyrite.dataset import Dataset, MnistDataset
from pyrite.dataset.mnist import MnistItem
from pyrite.errors import ConfigError, PyriteError, RecordError
from pyrite.module import init_from_record
from pyrite.record import BinFileRecorder

from ..records import read_bin
from .data import MnistBatcher
from .model import Model
from .predict import CONFIG, SHIPPED, load
from .training import TrainingConfig


def load_model(artifact_dir: str | Path | None = None, device: str = "numpy", *,
               record: str | Path | None = None) -> Model:
    """The trained model: `record` if given (a `.bin` record of any of the training page's
    models, which it detects: the guide CNN or the MLP), else `<artifact_dir>/model.bin` with
    its config.json if present, else the shipped record."""
    if record is not None:
        from ..train.models import load as load_trained

        path = Path(record)
        if not path.is_file():
            raise ConfigError(f"--record {path}: no such file; give a record the training "
                              f"page's Download button saved (mnist-<model>-trained.bin)")
        try:
            return load_trained(BinFileRecorder().load(path), device)  # type: ignore[return-value]
        except ValueError as exc:
            if isinstance(exc, PyriteError) and str(path) in str(exc):  # it names the file
                raise
            raise RecordError(f"--record {path}: {exc}") from exc
    if artifact_dir is not None:
        folder = Path(artifact_dir)
        if (folder / "model.bin").exists() and (folder / "config.json").exists():
            config = TrainingConfig.load(folder / "config.json")
            rec, source = read_bin(folder / "model.bin")
            return init_from_record(lambda: config.model.init(device), rec,
                                    source=source)
    if not SHIPPED.exists():
        raise FileNotFoundError(f"no trained model: {artifact_dir or '(no artifact dir)'} holds "
                                f"no model.bin and {SHIPPED} is missing; run `pyrite train mnist`")
    return load(device)


def default_config() -> TrainingConfig:
    """The committed training config (its model is the shipped record's)."""
    return TrainingConfig.load(CONFIG)


def infer(index: int, artifact_dir: str | Path | None = None, device: str = "numpy", *,
          record: str | Path | None = None) -> tuple[int, int]:
    """(predicted, expected) for MNIST test image `index`; prints them as the book does."""
    model = load_model(artifact_dir, device, record=record)
    item = MnistDataset.test().get(index)
    if item is None:
        raise IndexError(f"infer: index {index} is outside the test set (0..9999)")
    batch = MnistBatcher(device)([item])
    predicted = int(model.forward(batch.images).argmax(1).reshape((1,)).into_scalar())
    expected = int(item["label"])
    print(f"Predicted {predicted} Expected {expected}")
    return predicted, expected


@pyrite.compile(warn=False)
def _correct(model: Model, images: pyrite.Tensor, targets: pyrite.Tensor) -> pyrite.Tensor:
    """How many of a batch the model gets right (captured once per batch size, replayed)."""
    hits = model.forward(images).argmax(1).reshape((targets.shape[0],)) == targets
    return hits.int().sum()


def evaluate(model: Model, device: str | pyrite.Backend | None = None, batch_size: int = 500,
             limit: int | None = None, dataset: Dataset[MnistItem] | None = None) -> float:
    """Accuracy in percent on `dataset` (default: the 10,000-image test set), its first `limit`
    images if given, with batches on `device`, by default the model's own."""
    dataset = MnistDataset.test() if dataset is None else dataset
    batcher = MnistBatcher(device if device is not None else model.devices()[0])
    total = dataset.len() if limit is None else min(limit, dataset.len())
    correct = 0
    for start in range(0, total, batch_size):
        items = [dataset.get(i) for i in range(start, min(start + batch_size, total))]
        batch = batcher(items)  # type: ignore[arg-type]
        correct += int(_correct(model, batch.images, batch.targets).into_scalar())
    return 100.0 * correct / total


__all__ = ["SHIPPED", "default_config", "evaluate", "infer", "load_model"]
