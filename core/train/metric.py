"""The metric contract: `update(item, metadata) -> MetricEntry` per batch, `clear()` per epoch.

A metric reads what it needs from a step's item (see `output.py`), keeps a running value for
the epoch, and returns an entry: its name, a formatted text for the renderer, and the batch's
value and weight for the loggers. Numeric metrics (all pyrite's) also give the epoch value.

This module owns the contract and the running average; the metrics are in `metrics.py` and
`system.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MetricMetadata:
    """Where training is when a metric updates (1-based epoch and iteration)."""

    epoch: int
    epoch_total: int
    iteration: int
    iterations: int | None
    lr: float | None = None


@dataclass(frozen=True)
class MetricEntry:
    """One update of one metric: `value` for this batch (weighted by `count` items) and the
    epoch's running `epoch_value`; `formatted` is what a renderer shows."""

    name: str
    formatted: str
    value: float
    count: int
    epoch_value: float

    def serialize(self) -> str:
        """The line a metric log file holds: `value,count`."""
        return f"{self.value!r},{self.count}"


class Metric:
    """Base class: subclasses set `name` (and `unit`) and implement `_measure(item, metadata)
    -> (value, count)`. The running epoch value is a count-weighted mean."""

    name = "Metric"
    unit = ""
    precision = 4

    def __init__(self) -> None:
        self._sum = 0.0
        self._count = 0

    def _measure(self, item: Any, metadata: MetricMetadata) -> tuple[float, int]:
        raise NotImplementedError

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        value, count = self._measure(item, metadata)
        if not math.isnan(value):
            self._sum += value * count
            self._count += count
        epoch = self.value()
        return MetricEntry(self.name, self.format(value, epoch), value, count, epoch)

    def value(self) -> float:
        """The epoch's value so far (NaN before the first update)."""
        return self._sum / self._count if self._count else math.nan

    def format_value(self, value: float) -> str:
        """One value with its unit: `97.25 %`."""
        unit = f" {self.unit}" if self.unit else ""
        return f"{value:.{self.precision}f}{unit}"

    def format(self, value: float, epoch: float) -> str:
        """A batch value and the epoch's: `96.88 % (epoch 95.12 %)`."""
        return f"{self.format_value(value)} (epoch {self.format_value(epoch)})"

    def clear(self) -> None:
        self._sum = 0.0
        self._count = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def batch_size(item: Any) -> int:
    """The number of items a step's output covers (its `batch_size`, else output's rows)."""
    size = getattr(item, "batch_size", None)
    if isinstance(size, int):
        return size
    output = getattr(item, "output", None)
    return int(output.shape[0]) if output is not None and output.shape else 1
