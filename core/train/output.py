"""What train and valid steps return: `TrainOutput` (model, gradients, item) and the items
metrics read, `ClassificationOutput` and `RegressionOutput`.

A model used with the Learner defines two methods (Burn's `TrainStep` / `ValidStep` traits):

    def train_step(self, batch) -> TrainOutput:
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch) -> ClassificationOutput:
        return self.forward_classification(batch.images, batch.targets)

Metrics read attributes of the item: `loss` (Loss), `output` and `targets` (Accuracy,
TopKAccuracy). A custom item works with a metric when it has the attributes the metric reads.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from ..backend.autodiff import Gradients
from ..optim.grads import GradientsParams
from ..tensor import Tensor

T = TypeVar("T")


class TrainOutput(Generic[T]):
    """A train step's result: the gradients (tied to `model`'s param ids) and the item the
    metrics read. Raw `Gradients` from `loss.backward()` are taken with
    `GradientsParams.from_grads(grads, model)`."""

    __slots__ = ("grads", "item")

    def __init__(self, model: Any, grads: Gradients | GradientsParams, item: T) -> None:
        self.grads = (GradientsParams.from_grads(grads, model) if isinstance(grads, Gradients)
                      else grads)
        self.item = item


class _LossOutput:
    """What the metrics' items share: a loss (shape (1,)), the model's `output` and the
    `targets`, batch first."""

    __slots__ = ("loss", "output", "targets")

    def __init__(self, loss: Tensor, output: Tensor, targets: Tensor) -> None:
        self.loss, self.output, self.targets = loss, output, targets

    @property
    def batch_size(self) -> int:
        return int(self.output.shape[0])


class ClassificationOutput(_LossOutput):
    """Loss (shape (1,)), logits `output` (batch, classes) and integer `targets` (batch,)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ClassificationOutput(batch={self.batch_size}, classes={self.output.shape[-1]})"


class RegressionOutput(_LossOutput):
    """Loss (shape (1,)), predictions `output` and `targets` of the same shape (batch, ...)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"RegressionOutput(batch={self.batch_size}, shape={self.output.shape})"
