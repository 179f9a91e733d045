"""LearnerBuilder and Learner: Burn's training loop with metrics, logs, checkpoints, resume.

    learner = (LearnerBuilder("/tmp/guide")
               .metric_train_numeric(Accuracy()).metric_valid_numeric(Accuracy())
               .metric_train_numeric(Loss()).metric_valid_numeric(Loss())
               .with_file_checkpointer(NamedMpkFileRecorder())
               .num_epochs(10)
               .summary()
               .build(model, AdamConfig().init(), 1e-4))
    model = learner.fit(train_loader, valid_loader)

The model brings `train_step(batch) -> TrainOutput` and `valid_step(batch) -> item` (see
`output.py`); validation runs on `model.valid()`, so the valid loader's batches live on the
inner (non-autodiff) device. Artifacts follow the book:

    <artifact_dir>/experiment.log
    <artifact_dir>/checkpoint/{model,optim,scheduler}-<epoch><ext>
    <artifact_dir>/checkpoint/position-<epoch>.json   (a checkpoint taken inside its epoch)
    <artifact_dir>/checkpoint/checkpoints.json        (the complete epochs: checkpoint_index.py)
    <artifact_dir>/{train,valid}/epoch-<N>/<Metric>.log
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

from ..dataset.dataloader import DataLoader
from ..device import device as resolve_device
from ..errors import ConfigError, RecordError
from ..optim.optimizer import Optimizer
from ..optim.scheduler import LrScheduler, as_scheduler
from ..record import FileRecorder
from .artifacts import remove_temporaries
from .checkpoint import (
    CheckpointingStrategy,
    FileCheckpointer,
    KeepLastNCheckpoints,
    PositionFile,
)
from .checkpoint_index import CheckpointIndex
from .epoch import EpochRunner, loader_length
from .interrupt import Interrupter, SigintHandler
from .logger import FileApplicationLoggerInstaller, FileMetricLogger, MetricLogger, epoch_value
from .metric import Metric
from .renderer import Renderer, default_renderer
from .summary import LearnerSummary

log = logging.getLogger("pyrite.train")

#: called after each checkpoint is written: (epoch, steps of it the checkpoint holds or None
#: for a whole epoch)
CheckpointCallback = Callable[[int, int | None], None]
#: `LearnerBuilder.checkpoint()` without an epoch: resume from the newest complete one
NEWEST = -1


class LearnerBuilder:
    """Configures a `Learner`; every option returns the builder (see the module docstring)."""

    def __init__(self, artifact_dir: str | Path) -> None:
        self.artifact_dir = Path(artifact_dir)
        self._compile = True
        self._metrics: dict[str, list[tuple[Metric, bool]]] = {"train": [], "valid": []}
        self._loggers: list[MetricLogger] | None = None
        self._renderer: Renderer | None = None
        self._grad_accumulation: int | None = None
        self._recorder: FileRecorder | None = None
        self._strategies: list[CheckpointingStrategy] = [KeepLastNCheckpoints(2)]
        self._num_epochs = 1
        self._devices: list[Any] = []
        self._checkpoint: int | None = None  # NEWEST: the newest complete one
        self._checkpoint_every: int | None = None
        self._on_checkpoint: list[CheckpointCallback] = []
        self._app_logger: Any = FileApplicationLoggerInstaller(
            self.artifact_dir / "experiment.log")
        self._summary = False
        self._interrupter = Interrupter()

    # ---- metrics -----------------------------------------------------------------------------
    def metric_train(self, metric: Metric) -> LearnerBuilder:
        """Compute, show and log `metric` on training steps."""
        self._metrics["train"].append((metric, False))
        return self

    def metric_valid(self, metric: Metric) -> LearnerBuilder:
        """Compute, show and log `metric` on validation steps."""
        self._metrics["valid"].append((metric, False))
        return self

    def metric_train_numeric(self, metric: Metric) -> LearnerBuilder:
        """Like `metric_train`, and the metric's epoch values go in the summary table."""
        self._metrics["train"].append((metric, True))
        return self

    def metric_valid_numeric(self, metric: Metric) -> LearnerBuilder:
        """Like `metric_valid`, and the metric's epoch values go in the summary table."""
        self._metrics["valid"].append((metric, True))
        return self

    def metric_loggers(self, *loggers: MetricLogger) -> LearnerBuilder:
        """Replace the default `FileMetricLogger(artifact_dir)` with these loggers."""
        self._loggers = list(loggers)
        return self

    # ---- display and logs --------------------------------------------------------------------
    def renderer(self, renderer: Renderer) -> LearnerBuilder:
        """How progress is shown (default: live view on a TTY, log lines otherwise)."""
        self._renderer = renderer
        return self

    def with_application_logger(self, installer: Any | None) -> LearnerBuilder:
        """What receives the "pyrite" logger during fit (default: `experiment.log` in the
        artifact dir); None leaves logging alone. An installer has install() / uninstall()."""
        self._app_logger = installer
        return self

    def summary(self) -> LearnerBuilder:
        """Print the summary table of the numeric metrics when `fit` ends."""
        self._summary = True
        return self

    # ---- training ----------------------------------------------------------------------------
    def compile(self, enabled: bool = True) -> LearnerBuilder:
        """Capture the train and valid steps and replay them (`pyrite.compile`; on by default,
        PYRITE_COMPILE=off turns it off everywhere). `compile(False)` runs them eagerly."""
        self._compile = enabled
        return self

    def grad_accumulation(self, steps: int) -> LearnerBuilder:
        """Sum the gradients of `steps` batches before each optimizer step."""
        if steps < 1:
            raise ConfigError(f"LearnerBuilder.grad_accumulation: steps must be >= 1, got {steps}")
        self._grad_accumulation = steps
        return self

    def num_epochs(self, num_epochs: int) -> LearnerBuilder:
        if num_epochs < 1:
            raise ConfigError(f"LearnerBuilder.num_epochs: must be >= 1, got {num_epochs}")
        self._num_epochs = num_epochs
        return self

    def devices(self, devices: list[Any]) -> LearnerBuilder:
        """The devices to train on (a plain backend is wrapped in autodiff<...>). Several train
        data-parallel (`pyrite.distributed.DataParallel`): each step's batch is cut into one
        slice per device, the gradients summed, every replica stepped alike; the model lives
        on the first, where validation runs."""
        if not devices:
            raise ConfigError("LearnerBuilder.devices: give at least one device")
        names = [d if isinstance(d, str) else d.name for d in devices]
        if len(set(names)) != len(names):
            raise ConfigError(f"LearnerBuilder.devices: a device is named twice in {names}; "
                              f"each replica needs its own device ('numpy:0', 'numpy:1')")
        self._devices = list(devices)
        return self

    def interrupter(self) -> Interrupter:
        """The handle that stops training after the current step (Ctrl-C uses it too)."""
        return self._interrupter

    # ---- checkpoints -------------------------------------------------------------------------
    def with_file_checkpointer(self, recorder: FileRecorder) -> LearnerBuilder:
        """Save model, optimizer and scheduler records with `recorder` after each epoch, in
        `<artifact_dir>/checkpoint/`. Use a full-precision recorder for an exact resume."""
        self._recorder = recorder
        return self

    def with_checkpointing_strategy(self, *strategies: CheckpointingStrategy) -> LearnerBuilder:
        """Which checkpoints to keep (default: `KeepLastNCheckpoints(2)`); a checkpoint that
        any strategy keeps stays."""
        if not strategies:
            raise ConfigError("LearnerBuilder.with_checkpointing_strategy: give at least one")
        self._strategies = list(strategies)
        return self

    def checkpoint(self, epoch: int | None = None) -> LearnerBuilder:
        """Resume from the checkpoint of `epoch` (None: the newest complete one, or from the
        start when there is none): training continues at epoch + 1, or with the next step of
        `epoch` when its checkpoint was taken inside it (a stop, or `checkpoint_every`). An
        epoch whose checkpoint a crash left incomplete is refused, naming the newest complete
        one (see checkpoint_index.py)."""
        self._checkpoint = NEWEST if epoch is None else epoch
        return self

    def checkpoint_every(self, steps: int) -> LearnerBuilder:
        """Also checkpoint every `steps` training steps inside an epoch (each overwrites the
        epoch's previous one), so little is lost when the process dies: a web page reloaded,
        a machine preempted. Steps that are mid-way through a gradient accumulation wait for
        its end."""
        if steps < 1:
            raise ConfigError(f"LearnerBuilder.checkpoint_every: steps must be >= 1, got {steps}")
        self._checkpoint_every = steps
        return self

    def on_checkpoint(self, callback: CheckpointCallback) -> LearnerBuilder:
        """Call `callback(epoch, steps)` after each checkpoint is written (`steps`: how many
        steps of the epoch it holds, None for all of them). A page uses it to flush its files
        to the browser's storage."""
        self._on_checkpoint.append(callback)
        return self

    # ---- build -------------------------------------------------------------------------------
    def build(self, model: Any, optim: Optimizer,
              lr_scheduler: float | LrScheduler | Any) -> Learner:
        """The learner for `model`, stepped by `optim` at the rates of `lr_scheduler` (a float
        is a constant rate; a scheduler config is `.init()`-ed)."""
        if self._checkpoint is not None and self._recorder is None:
            raise ConfigError("LearnerBuilder.checkpoint: resuming needs the recorder the "
                              "checkpoints were saved with; add .with_file_checkpointer(...)")
        if self._checkpoint_every is not None and self._recorder is None:
            raise ConfigError("LearnerBuilder.checkpoint_every: checkpoints need a recorder; "
                              "add .with_file_checkpointer(...)")
        for name in ("train_step", "valid_step"):
            if not callable(getattr(model, name, None)):
                raise ConfigError(f"LearnerBuilder.build: {type(model).__name__} has no "
                                  f"{name}(batch) method; see pyrite.train.TrainOutput")
        targets = [_autodiff(d) for d in self._devices]
        if targets and model.devices() != targets[:1]:
            model = model.fork(targets[0])
        learner = Learner(self, model, optim, as_scheduler(lr_scheduler))
        if len(targets) > 1:
            if self._grad_accumulation is not None:
                raise ConfigError("LearnerBuilder: grad_accumulation with several devices is not "
                                  "supported yet; raise the batch size instead")
            from ..distributed.parallel import DataParallel
            learner.parallel = DataParallel(targets, compiled=self._compile)
        return learner


def _autodiff(spec: Any) -> Any:
    target = resolve_device(spec)
    return target if target.is_autodiff else resolve_device(f"autodiff<{target.name}>")


class Learner:
    """Trains a model: `learner.fit(train_loader, valid_loader) -> model`. Built by
    `LearnerBuilder`; after `fit`, `learner.summary` holds the summary table."""

    def __init__(self, builder: LearnerBuilder, model: Any, optim: Optimizer,
                 scheduler: LrScheduler) -> None:
        self.artifact_dir = builder.artifact_dir
        self.model, self.optim, self.scheduler = model, optim, scheduler
        self.metrics = builder._metrics
        self.loggers: list[MetricLogger] = (builder._loggers if builder._loggers is not None
                                            else [FileMetricLogger(self.artifact_dir)])
        self.renderer = builder._renderer if builder._renderer is not None else default_renderer()
        self.grad_accumulation = builder._grad_accumulation
        self.num_epochs = builder._num_epochs
        self.resume_from = builder._checkpoint
        self.strategies = builder._strategies
        self.app_logger = builder._app_logger
        self.print_summary = builder._summary
        self.compile = builder._compile
        self.interrupter = builder._interrupter
        self.summary: LearnerSummary | None = None
        self.checkpoint_every = builder._checkpoint_every
        self.on_checkpoint = list(builder._on_checkpoint)
        #: the data-parallel step over several devices or processes (pyrite.distributed)
        self.parallel: Any = None
        #: whether this process writes checkpoints (only rank 0 of several processes does)
        self.writes_checkpoints = True
        self.checkpointers: dict[str, FileCheckpointer] | None = None
        self.positions: PositionFile | None = None
        if builder._recorder is not None:
            folder = self.artifact_dir / "checkpoint"
            self.checkpointers = {name: FileCheckpointer(folder, builder._recorder, name)
                                  for name in ("model", "optim", "scheduler")}
            self.positions = PositionFile(folder)
            self.index = CheckpointIndex(folder, builder._recorder.extension)

    # ---- checkpoints -------------------------------------------------------------------------
    def _save_checkpoint(self, epoch: int, steps: int | None = None,
                         iterations: int | None = None) -> None:
        """Checkpoint `epoch`: whole, or (`steps`) its first `steps` of `iterations` steps."""
        if self.checkpointers is None or self.positions is None or not self.writes_checkpoints:
            return
        cp = self.checkpointers
        for logger in self.loggers:  # a killed process keeps the lines up to the checkpoint
            flush = getattr(logger, "flush", None)
            if flush is not None:
                flush()
        # the epoch leaves the index first and joins it last, once all its files are written:
        # a crash in between leaves it incomplete, and a resume takes an older one
        self.index.withdraw(epoch)
        files = []
        if steps is not None:
            files.append(self.positions.save(epoch, steps, iterations).name)
        files.append(cp["model"].save(epoch, self.model.into_record()).name)
        files.append(cp["optim"].save(epoch, self.optim.to_record()).name)
        files.append(cp["scheduler"].save(epoch, self.scheduler.to_record()).name)
        if steps is None:
            self.positions.delete(epoch)
        self.index.publish(epoch, files)
        if steps is None:
            log.info("checkpoint: saved epoch %d in %s", epoch, cp["model"].directory)
        else:
            log.info("checkpoint: saved epoch %d at step %d/%s in %s", epoch, steps,
                     iterations if iterations is not None else "?", cp["model"].directory)
        epochs = cp["model"].epochs()
        keep: set[int] = set()
        for strategy in self.strategies:
            keep |= strategy.keep(epochs, self._read_metric)
        for old in epochs:
            if old not in keep:
                self.index.withdraw(old)
                for checkpointer in cp.values():
                    checkpointer.delete(old)
                self.positions.delete(old)
                log.info("checkpoint: deleted epoch %d", old)
        for callback in self.on_checkpoint:
            callback(epoch, steps)

    def step_done(self, epoch: int, iteration: int, iterations: int | None,
                  accumulating: bool) -> None:
        """After each training step: the periodic checkpoint of `checkpoint_every`."""
        every = self.checkpoint_every
        if (every is None or accumulating or iteration % every
                or (iterations is not None and iteration >= iterations)):
            return  # the end of the epoch has its own checkpoint
        self._save_checkpoint(epoch, iteration, iterations)

    def _restore_checkpoint(self, epoch: int) -> None:
        assert self.checkpointers is not None  # build() checked
        cp = self.checkpointers
        complete = self.index.complete()
        if epoch not in complete:
            newest = f"; resume from epoch {complete[-1]}, the newest complete one" \
                if complete else ("; there is no complete checkpoint to resume from: train "
                                  "from the start instead (without resuming)")
            raise RecordError(f"{cp['model'].directory}: the checkpoint of epoch {epoch} is "
                              f"missing or incomplete (complete epochs: {complete or 'none'})"
                              f"{newest}")
        source = str(cp["model"].path(epoch))
        self.model = self.model.load_record(cp["model"].restore(epoch), source=source)
        self.optim.load_record(cp["optim"].restore(epoch))
        self.scheduler.load_record(cp["scheduler"].restore(epoch))
        log.info("checkpoint: resumed from epoch %d", epoch)

    def _read_metric(self, name: str, split: str, epoch: int) -> float:
        for logger in self.loggers:
            values = logger.read(name, epoch, split)
            if values:
                return epoch_value(values)
        return float("nan")

    # ---- fit ---------------------------------------------------------------------------------
    def fit(self, train_loader: Any, valid_loader: Any | None = None) -> Any:
        """Train for the configured epochs (from the resumed checkpoint + 1); return the model.

        Ctrl-C (or `interrupter.stop()`) ends training after the current step: the
        checkpoint of the current epoch is written and the model is returned.
        """
        self.artifact_dir.mkdir(parents=True, exist_ok=True)
        if self.app_logger is not None:
            self.app_logger.install()
        for path in remove_temporaries(self.artifact_dir):  # what a kill -9 left
            log.info("checkpoint: removed %s, left by an interrupted write", path)
        try:
            with SigintHandler(self.interrupter):
                return self._fit(train_loader, valid_loader)
        finally:
            for logger in self.loggers:
                logger.close()
            self.renderer.close()
            if self.app_logger is not None:
                self.app_logger.uninstall()

    def _resume_point(self) -> tuple[int, int]:
        """(first epoch, training steps of it already done) after restoring the checkpoint."""
        if self.resume_from == NEWEST:
            newest = self.index.newest()
            if newest is None:
                log.info("checkpoint: no complete checkpoint in %s; starting from epoch 1",
                         self.index.directory)
                self.resume_from = None
            else:
                log.info("checkpoint: resuming from epoch %d, the newest complete checkpoint",
                         newest)
                self.resume_from = newest
        if self.resume_from is None:
            return 1, 0
        self._restore_checkpoint(self.resume_from)
        assert self.positions is not None  # build() checked there is a recorder
        done = self.positions.load(self.resume_from)
        if done is None:
            return self.resume_from + 1, 0
        log.info("checkpoint: epoch %d resumes after step %d", self.resume_from, done)
        return self.resume_from, done

    def _fit(self, train_loader: Any, valid_loader: Any | None) -> Any:
        start, skip = self._resume_point()
        if self.resume_from is not None:
            # what was logged after the checkpoint (the process went on, then died) goes
            for logger in self.loggers:
                rewind = getattr(logger, "rewind", None)
                if rewind is not None:
                    rewind(start, "train", skip)
                    rewind(start, "valid", 0)
        for loader in (train_loader, valid_loader):
            # each epoch's shuffle order continues as if training had not stopped
            if loader is not None and hasattr(loader, "set_epoch"):
                loader.set_epoch(start - 1)
        batches = train_loader
        if skip and isinstance(train_loader, DataLoader):
            train_loader.set_epoch(start - 1, skip=skip)  # the seen batches are not even made
        elif skip:
            batches = islice(iter(train_loader), skip, None)  # any other iterable
        log.info("fit: epochs %d..%d, optimizer %r, scheduler %r, metrics train %s valid %s",
                 start, self.num_epochs, self.optim, self.scheduler,
                 [m.name for m, _ in self.metrics["train"]],
                 [m.name for m, _ in self.metrics["valid"]])
        runner = EpochRunner(self)
        last = start - 1  # the last epoch that ran (stays below `start` if none did)
        for epoch in range(start, self.num_epochs + 1):
            last = epoch
            first = epoch == start
            self.model = runner.train(epoch, batches if first else train_loader,
                                      skip=skip if first else 0,
                                      total=loader_length(train_loader))
            stopped = self.interrupter.should_stop()
            partial = stopped and runner.stopped_early
            if valid_loader is not None and not stopped:
                runner.valid(epoch, valid_loader)
            for logger in self.loggers:
                logger.end_epoch(epoch)
            if partial:
                self._save_checkpoint(epoch, runner.iteration, runner.iterations)
            else:
                self._save_checkpoint(epoch)
            if stopped or self.interrupter.should_stop():  # during validation, too
                log.warning("fit: %s during epoch %d; checkpoint %d holds the model so far",
                            self.interrupter.reason, epoch, epoch)
                break
        self._summarize(range(1, last + 1))  # an interrupted fit sums up what it ran
        log.info("fit: done")
        return self.model

    def _summarize(self, epochs: range) -> None:
        numeric = {split: [m.name for m, is_numeric in metrics if is_numeric]
                   for split, metrics in self.metrics.items()}
        if not any(numeric.values()):
            return
        reader = next((lg for lg in self.loggers), None)
        if reader is None:
            return
        self.summary = LearnerSummary.from_logger(reader, numeric, epochs)
        log.info("summary:\n%s", self.summary.table())
        if self.print_summary:
            print(self.summary)
