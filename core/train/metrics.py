"""Task metrics: Accuracy, TopKAccuracy, Loss, LearningRate (Burn's names and units)."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ShapeError
from .metric import Metric, MetricMetadata, batch_size


def _classification(metric: str, item: Any) -> tuple[Any, Any]:
    output, targets = getattr(item, "output", None), getattr(item, "targets", None)
    if output is None or targets is None:
        raise AttributeError(f"{metric}: the step output {type(item).__name__} has no 'output' "
                             f"and 'targets'; return a ClassificationOutput or give it those")
    if output.ndim != 2:
        raise ShapeError(f"{metric}: output must be (batch, classes), got {output.shape}")
    return output, targets.reshape((output.shape[0],))


def _percent(hits: Any, targets: Any, pad_token: int | None) -> tuple[float, int]:
    """(percent of rows hit, rows counted), leaving out rows whose target is `pad_token`."""
    if pad_token is None:
        total = int(hits.shape[0])
        correct = int(hits.int().sum().into_scalar())
    else:
        keep = targets != pad_token
        total = int(keep.int().sum().into_scalar())
        correct = int((hits & keep).int().sum().into_scalar())
    if total == 0:
        return math.nan, 0
    return 100.0 * correct / total, total


class Accuracy(Metric):
    """Percent of rows whose largest logit is the target class; targets equal to
    `pad_token` are left out, as in Burn's `AccuracyMetric::with_pad_token`."""

    name = "Accuracy"
    unit = "%"
    precision = 2

    def __init__(self, *, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token

    def _measure(self, item: Any, metadata: MetricMetadata) -> tuple[float, int]:
        output, targets = _classification(self.name, item)
        hits = output.argmax(1).reshape((output.shape[0],)) == targets
        return _percent(hits, targets, self.pad_token)


class TopKAccuracy(Metric):
    """Percent of rows whose target is among the `k` largest logits."""

    unit = "%"
    precision = 2

    def __init__(self, k: int, *, pad_token: int | None = None) -> None:
        super().__init__()
        if k < 1:
            raise ValueError(f"TopKAccuracy: k must be at least 1, got {k}")
        self.k, self.pad_token = k, pad_token
        self.name = f"Top{k}Accuracy"

    def _measure(self, item: Any, metadata: MetricMetadata) -> tuple[float, int]:
        output, targets = _classification(self.name, item)
        k = min(self.k, output.shape[1])
        top = output.topk_with_indices(k, 1)[1]  # (batch, k)
        hits = (top == targets.reshape((output.shape[0], 1))).any_dim(1).reshape(
            (output.shape[0],))
        return _percent(hits, targets, self.pad_token)

    def __repr__(self) -> str:
        return f"TopKAccuracy({self.k})"


class Loss(Metric):
    """The step's loss (the mean of `item.loss`), weighted by the batch size."""

    name = "Loss"

    def _measure(self, item: Any, metadata: MetricMetadata) -> tuple[float, int]:
        loss = getattr(item, "loss", None)
        if loss is None:
            raise AttributeError(f"Loss: the step output {type(item).__name__} has no 'loss'")
        value = float(loss.mean().into_scalar()) if loss.numel() != 1 else float(loss)
        return value, batch_size(item)


class LearningRate(Metric):
    """The learning rate the step's optimizer update used."""

    name = "LearningRate"
    precision = 3

    def _measure(self, item: Any, metadata: MetricMetadata) -> tuple[float, int]:
        return (math.nan if metadata.lr is None else float(metadata.lr)), 1

    def format_value(self, value: float) -> str:
        return f"{value:.3e}"

    def format(self, value: float, epoch: float) -> str:
        return self.format_value(value)
