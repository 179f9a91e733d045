"""One epoch of training or validation: the loops the Learner runs.

Training: for each batch, the scheduler gives the rate, the model's `train_step` gives the
gradients and the item, the optimizer steps (every `grad_accumulation` batches when set), the
metrics update, the loggers and the renderer receive the entries, and the interrupter is
checked. Validation runs `valid_step` on `model.valid()`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..capture import compile
from ..optim.accumulator import GradientsAccumulator
from .metric import MetricEntry, MetricMetadata, batch_size
from .output import TrainOutput
from .renderer import Progress

if TYPE_CHECKING:
    from .learner import Learner

log = logging.getLogger("pyrite.train")


def loader_length(loader: Any) -> int | None:
    try:
        return len(loader)
    except TypeError:
        return None


def _train_output(model: Any, batch: Any) -> TrainOutput[Any]:
    out = model.train_step(batch)
    if not isinstance(out, TrainOutput):
        raise TypeError(f"train_step must return a TrainOutput(model, grads, item), got "
                        f"{type(out).__name__}")
    return out


def _train_step(model: Any, batch: Any, lr: float, optim: Any) -> tuple[Any, Any]:
    """One training step without accumulation: what the Learner captures and replays."""
    out = _train_output(model, batch)
    return optim.step(lr, model, out.grads), out.item


def _valid_step(model: Any, batch: Any) -> Any:
    return model.valid_step(batch)


class EpochRunner:
    """Runs the train and valid halves of an epoch for a `Learner`."""

    def __init__(self, learner: Learner) -> None:
        self.learner = learner
        # the steps, captured and replayed (pyrite.compile) unless the learner says otherwise
        self._train_step = compile(_train_step, enabled=None if learner.compile else False)
        self._valid_step = compile(_valid_step, enabled=None if learner.compile else False)
        # where the last training epoch ended: steps done (counting resumed ones), out of
        self.iteration = 0
        self.iterations: int | None = None
        self.stopped_early = False  # whether it stopped before its last batch

    def _record(self, split: str, epoch: int, item: Any, meta: MetricMetadata
                ) -> list[MetricEntry]:
        entries = [metric.update(item, meta) for metric, _ in self.learner.metrics[split]]
        for logger in self.learner.loggers:
            for entry in entries:
                logger.log(entry, epoch, split)
        return entries

    def _end(self, split: str, progress: Progress | None) -> None:
        metrics = self.learner.metrics[split]
        values = {m.name: m.format_value(m.value()) for m, _ in metrics}
        if progress is not None:
            self.learner.renderer.end_split(progress, values)
            log.info("epoch %d %s: %s (%d iterations, %.1f s, %.0f items/s)", progress.epoch,
                     split, ", ".join(f"{k} {v}" for k, v in values.items()),
                     progress.iteration, progress.elapsed_s, progress.speed)
        for metric, _ in metrics:
            metric.clear()

    def _report(self, split: str, epoch: int, iteration: int, total: int | None, item: Any,
                lr: float | None, items: int, start: float) -> Progress:
        """Give one step's item to the metrics and its progress (`items` so far, since `start`)
        to the renderer."""
        ln = self.learner
        meta = MetricMetadata(epoch, ln.num_epochs, iteration, total, lr)
        entries = self._record(split, epoch, item, meta)
        progress = Progress(split, epoch, ln.num_epochs, iteration, total, items,
                            time.perf_counter() - start)
        ln.renderer.update(progress, entries)
        return progress

    def train(self, epoch: int, loader: Any, *, skip: int = 0, total: int | None = None
              ) -> Any:
        """The model after one epoch over `loader` (or fewer steps when interrupted).

        `skip`: the epoch's first `skip` steps were done before a resume and `loader` yields
        the rest; iterations are numbered on from there, out of `total` (default: the
        loader's length).
        """
        ln = self.learner
        model = ln.model
        total = total if total is not None else loader_length(loader)
        accumulator = GradientsAccumulator() if ln.grad_accumulation else None
        start, items, progress = time.perf_counter(), 0, None
        self.iteration, self.iterations, self.stopped_early = skip, total, False
        for iteration, batch in enumerate(loader, skip + 1):
            lr = ln.scheduler.step()
            if ln.parallel is not None:  # several devices or processes (pyrite.distributed)
                model, item = ln.parallel.step(model, batch, lr, ln.optim)
            elif accumulator is None:
                model, item = self._train_step(model, batch, lr, ln.optim)
            else:
                out = _train_output(model, batch)
                item = out.item
                accumulator.accumulate(model, out.grads)
                if accumulator.count >= (ln.grad_accumulation or 1):
                    model = ln.optim.step(lr, model, accumulator.grads())
            ln.model = model  # so an interrupt or a metric sees the stepped model
            items += batch_size(item)
            progress = self._report("train", epoch, iteration, total, item, lr, items, start)
            self.iteration = iteration
            ln.step_done(epoch, iteration, total,
                         accumulator is not None and not accumulator.is_empty())
            if ln.interrupter.should_stop():
                self.stopped_early = total is None or iteration < total
                break
        if accumulator is not None and not accumulator.is_empty():
            # the epoch's last, incomplete accumulation still counts
            model = ln.optim.step(lr, model, accumulator.grads())
            ln.model = model
        self._end("train", progress)
        return model

    def valid(self, epoch: int, loader: Any) -> None:
        ln = self.learner
        model, total = ln.model.valid(), loader_length(loader)
        start, items, progress = time.perf_counter(), 0, None
        for iteration, batch in enumerate(loader, 1):
            item = self._valid_step(model, batch)
            if ln.parallel is not None:  # ranks that validate a slice each: the whole item
                item = ln.parallel.valid_item(item)
            items += batch_size(item)
            progress = self._report("valid", epoch, iteration, total, item, None, items, start)
            if ln.interrupter.should_stop():
                break
        self._end("valid", progress)
