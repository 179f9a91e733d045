"""One training worker of `pyrite.distributed.fit`: a Ray actor owning one device, running the
user's Learner setup on it with its shard of the data.

The setup is any function `setup(context) -> Run`: it builds the model on `context.device`,
the loaders and the Learner exactly as a single process would (same seed on every rank: the
ranks then start equal, and rank 0's parameters are broadcast anyway). The worker then makes
the Learner data-parallel over the Ray collective, gives it its rank's slice of each batch,
and lets only rank 0 write checkpoints, metric logs and progress (Ray forwards rank 0's output
to the driver). Every rank validates its slice of each validation batch (a DataLoader whose
batches hold an item per rank) and rank 0 records the gathered items; other validation
loaders run on rank 0 alone.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..dataset.dataloader import DataLoader
from ..device import device as resolve_device
from ..errors import ConfigError
from ..train.learner import Learner
from ..train.renderer import NoRenderer
from .parallel import DataParallel
from .reducer import RayCollective
from .shard import ShardedDataLoader

log = logging.getLogger("pyrite.distributed")


@dataclass(frozen=True)
class WorkerContext:
    """What a setup function learns about its worker: its rank, how many there are, and the
    device it owns ("numpy" on a CPU worker, "webgpu:N" on the worker of GPU N)."""

    rank: int
    world_size: int
    device: str


@dataclass
class Run:
    """What a setup function returns: the Learner and its loaders (a `DataLoader` to train
    on, so it can be sharded; any iterable to validate on)."""

    learner: Learner
    train: DataLoader[Any, Any]
    valid: Any = None


Setup = Callable[[WorkerContext], Run]


def latest_checkpoint(learner: Learner) -> int | None:
    """The newest epoch whose checkpoint is complete (None: none, or no checkpointer). A worker
    killed while rank 0 was writing one leaves it incomplete: the one before counts."""
    if learner.checkpointers is None:
        return None
    return learner.index.newest()


def _shardable(loader: Any, world_size: int) -> bool:
    """Whether every rank can validate a slice of each of `loader`'s batches: a DataLoader
    whose batches (the last one too) hold an item per rank. Otherwise rank 0 validates alone
    and the others wait for it in the next epoch's first sum."""
    if not isinstance(loader, DataLoader) or loader.batch_size < world_size:
        return False
    last = loader.dataset.len() % loader.batch_size
    return loader.drop_last or last == 0 or last >= world_size


class TrainWorker:
    """The actor (`ray.remote(TrainWorker)`): `start()` claims the device, `train(...)` runs."""

    def __init__(self, rank: int, world_size: int, device: str) -> None:
        if device == "webgpu":  # the GPU Ray gave this worker; Vulkan numbers GPUs as Ray does
            import ray
            gpus = ray.get_gpu_ids()
            device = f"webgpu:{int(gpus[0])}" if gpus else device
        self.context = WorkerContext(rank, world_size, device)

    def start(self) -> int:
        """Build the device now, so a missing one fails the start; the worker's process id."""
        resolve_device(self.context.device)
        return os.getpid()

    def train(self, setup: Setup, reducer: Any, *, resume_latest: bool,
              timeout_s: float) -> Any:
        """Run the setup's Learner to its end; rank 0 returns the model's record."""
        ctx = self.context
        run = setup(ctx)
        ln = run.learner
        if not isinstance(run.train, DataLoader):
            raise ConfigError(f"pyrite.distributed: the setup's train loader is a "
                              f"{type(run.train).__name__}; workers shard a pyrite DataLoader")
        if resume_latest:
            ln.resume_from = latest_checkpoint(ln)
            if ctx.rank == 0 and ln.resume_from is not None:
                print(f"pyrite.distributed: resuming from checkpoint {ln.resume_from}",
                      flush=True)
            elif ctx.rank == 0:
                print("pyrite.distributed: no checkpoint yet, starting over", flush=True)
                for logger in ln.loggers:  # what the failed attempt logged goes
                    rewind = getattr(logger, "rewind", None)
                    if rewind is not None:
                        rewind(1, "train", 0)
                        rewind(1, "valid", 0)
        ln.parallel = DataParallel(ln.model.devices()[:1],
                                   RayCollective(reducer, ctx.rank, ctx.world_size, timeout_s),
                                   compiled=ln.compile)
        if ctx.rank != 0:
            ln.writes_checkpoints = False
            ln.loggers, ln.renderer = [], NoRenderer()
            ln.app_logger, ln.print_summary = None, False
        valid = run.valid if ctx.rank == 0 else None
        if _shardable(run.valid, ctx.world_size):  # every rank validates its slice
            valid = ShardedDataLoader(run.valid, ctx.rank, ctx.world_size)
            ln.parallel.shards_valid = True
        model = ln.fit(ShardedDataLoader(run.train, ctx.rank, ctx.world_size), valid)
        return model.into_record() if ctx.rank == 0 else None
