"""The table printed when training ends: each numeric metric's best and worst epoch value.

    | Split | Metric   | Min.    | Epoch | Max.    | Epoch |
    |-------|----------|---------|-------|---------|-------|
    | Train | Loss     | 0.0523  | 3     | 0.3121  | 1     |
    | Valid | Accuracy | 97.9400 | 1     | 98.9100 | 3     |

Epoch values are read back from the metric loggers (count-weighted means of the logged
batches), so the table covers the epochs of earlier runs too when training was resumed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .logger import MetricLogger, epoch_value


@dataclass(frozen=True)
class SummaryRow:
    split: str
    metric: str
    min: float
    min_epoch: int
    max: float
    max_epoch: int


@dataclass(frozen=True)
class LearnerSummary:
    """Rows for each (split, metric) with at least one logged epoch."""

    rows: tuple[SummaryRow, ...]
    epochs: int
    model: str = ""

    @classmethod
    def from_logger(cls, logger: MetricLogger, metrics: Mapping[str, Sequence[str]],
                    epochs: Iterable[int], *, model: str = "") -> LearnerSummary:
        epochs = list(epochs)
        rows = []
        for split, names in metrics.items():
            for name in names:
                values = [(epoch_value(logger.read(name, e, split)), e) for e in epochs]
                values = [(v, e) for v, e in values if not math.isnan(v)]
                if not values:
                    continue
                lo = min(values, key=lambda ve: ve[0])
                hi = max(values, key=lambda ve: ve[0])
                rows.append(SummaryRow(split.capitalize(), name, lo[0], lo[1], hi[0], hi[1]))
        return cls(tuple(rows), len(epochs), model)

    def table(self) -> str:
        head = ("Split", "Metric", "Min.", "Epoch", "Max.", "Epoch")
        body = [(r.split, r.metric, f"{r.min:.4f}", str(r.min_epoch), f"{r.max:.4f}",
                 str(r.max_epoch)) for r in self.rows]
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
        rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
        return "\n".join([line(head), rule, *(line(r) for r in body)])

    def __str__(self) -> str:
        parts = ["TRAINING"]
        if self.model:
            parts.append(f"Model:\n{self.model}")
        parts.append(f"Total epochs: {self.epochs}")
        parts.append(self.table())
        return "\n".join(parts)
