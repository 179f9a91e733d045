"""`DataParallel`: one training step over several devices, the Learner's step when it has
several (`LearnerBuilder.devices([...])`) or runs as one of several Ray workers.

Each step cuts the batch into one slice per device (`batches.slice_sizes`: nearly equal, the
larger first), runs the model's `train_step` on each slice with that device's replica, sums the
gradients weighted by the slices' sizes and divides by the batch size (for a mean loss: the
gradient of the whole batch), and every replica takes the same optimizer step with its own copy
of the optimizer, so the replicas stay equal. Across processes a `Collective` adds the sums of
the ranks. Sums are formed in a fixed order (devices, then ranks), so a run repeats bit for bit.

Replica 0 is the Learner's model and the Learner's optimizer; the others are forks made from
them at the first step and again whenever the Learner's model was replaced from outside (a
checkpoint restored). Random streams: at the first step one number is drawn from device 0's
generator (which the run seeded) and each device r is reseeded with `rank_seed(number, r)`, so
dropout masks differ between slices yet repeat on every run with the same seed.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Sequence
from typing import Any

from ..backend.base import Backend
from ..creation import int_random
from ..data import TensorData
from ..distribution import Uniform
from ..dtype import DType
from ..errors import ConfigError
from ..optim.grads import GradientsParams
from ..optim.optimizer import Optimizer
from ..tensor import Tensor, from_data
from .batches import (
    batch_length,
    merge_items,
    replace_tensors,
    slice_sizes,
    split_batch,
    tensors_in,
)
from .collective import Collective
from .compiled import CompiledReplicas

log = logging.getLogger("pyrite.distributed")


def rank_seed(base: int, rank: int) -> int:
    """The seed of rank `rank`'s device, derived from the run's `base` (31 bits, so every
    backend takes it).

    >>> rank_seed(7, 0) != rank_seed(7, 1)
    True
    """
    digest = hashlib.sha256(f"pyrite.rank:{base}:{rank}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFF_FFFF


def _inner(dev: Backend) -> Backend:
    return dev.inner if dev.is_autodiff else dev  # type: ignore[attr-defined]


def _copy_optimizer(optim: Optimizer, record: Any) -> Optimizer:
    """An optimizer with `optim`'s rule and the state of `record` (moved to each param's
    device at its first step)."""
    twin = copy.copy(optim)
    twin._states, twin._pending = {}, {}
    return twin.load_record(record)


class DataParallel:
    """Steps a model on several `devices` (autodiff devices, device 0 the model's), optionally
    as one `collective` rank of several processes."""

    def __init__(self, devices: Sequence[Backend], collective: Collective | None = None,
                 *, compiled: bool = False) -> None:
        if not devices:
            raise ConfigError("DataParallel: give at least one device")
        names = [d.name for d in devices]
        if len(set(names)) != len(names):
            raise ConfigError(f"DataParallel: a device is named twice in {names}; each replica "
                              f"needs its own device ('numpy:0', 'numpy:1', 'webgpu:1')")
        self.devices = list(devices)
        self.collective = collective
        self.replicas: list[Any] = []
        self.optims: list[Optimizer] = []
        self._synced: Any = None  # the rank-0 model the replicas match
        self._seeded = False
        #: across processes: every rank validates its slice of each validation batch and
        #: `valid_item` gathers the whole batch's item (set by the Ray worker)
        self.shards_valid = False
        #: the compiled half-steps (`compiled.py`); None: every step eager, as below
        self.compiled = CompiledReplicas(self.devices, collective) if compiled else None

    @property
    def world_size(self) -> int:
        """How many replicas in all: devices here times processes."""
        return len(self.devices) * (self.collective.world_size if self.collective else 1)

    # ---- replicas ----------------------------------------------------------------------------
    def _sync(self, model: Any, optim: Optimizer) -> None:
        if model is self._synced and self.optims and self.optims[0] is optim:
            return
        if not self._seeded:
            model = self._first_sync(model)
        self.replicas = [model] + [model.fork(d) for d in self.devices[1:]]
        record = optim.to_record() if len(self.devices) > 1 else None
        self.optims = [optim] + [_copy_optimizer(optim, record) for _ in self.devices[1:]]
        self._synced = model

    def _first_sync(self, model: Any) -> Any:
        """Seed each device's stream from the run's; across processes, start every rank from
        rank 0's parameters and seed."""
        draw = int_random((2,), Uniform(0, 1 << 15), device=_inner(self.devices[0]))
        values = [draw.to_data()]
        params = model.named_params()
        if self.collective is not None:
            values = self.collective.broadcast(values + [p.val.to_data() for _, p in params])
            loaded = dict(zip((path for path, _ in params), values[1:], strict=True))
            model = model.map(lambda path, p: p.with_val(
                from_data(loaded[path], device=p.device).detach()))
        a, b = (int(v) for v in values[0].to_list())
        base = (a << 15) | b
        rank0 = self.collective.rank * len(self.devices) if self.collective else 0
        for r, dev in enumerate(self.devices):
            dev.seed(rank_seed(base, rank0 + r))
        self._seeded = True
        return model

    # ---- the step ----------------------------------------------------------------------------
    def step(self, model: Any, batch: Any, lr: float, optim: Optimizer) -> tuple[Any, Any]:
        """(the stepped model on device 0, the whole batch's item); every replica is stepped
        alike."""
        from ..train.epoch import _train_output

        self._sync(model, optim)
        sizes = slice_sizes(batch_length(batch), len(self.devices))
        parts = split_batch(batch, sizes, self.devices)
        if self.compiled is not None:
            return self._compiled_step(parts, sizes, lr)
        outs = [None if part is None else _train_output(replica, part)
                for replica, part in zip(self.replicas, parts, strict=True)]
        grads = self._reduce(outs, sizes)
        stepped = []
        for replica, opt, dev in zip(self.replicas, self.optims, self.devices, strict=True):
            target = _inner(dev)
            mine = GradientsParams({p.id: grads[path].to_device(target)
                                    for path, p in replica.named_params() if path in grads})
            stepped.append(opt.step(lr, replica, mine))
        self.replicas = stepped
        self._synced = stepped[0]
        return stepped[0], self._item([None if o is None else o.item for o in outs], sizes)

    def _compiled_step(self, parts: list[Any], sizes: list[int], lr: float
                       ) -> tuple[Any, Any]:
        assert self.compiled is not None
        stepped, items = self.compiled.step(self.replicas, parts, sizes, lr, self.optims)
        home = self.compiled.home
        if self.compiled.fell_back:
            log.info("data parallel: a device's step cannot be captured; the next steps run "
                     "eagerly")
            self.compiled = None
        self.replicas = stepped
        self._synced = stepped[0]
        return stepped[0], self._item(items, sizes, home)

    def _item(self, items: list[Any], sizes: list[int], home: Backend | None = None) -> Any:
        """The merged item of the whole batch, its tensors on `home` (default device 0)."""
        home = self.devices[0] if home is None else home
        done = [(i, n) for i, n in zip(items, sizes, strict=True) if i is not None]
        item = merge_items([i for i, _ in done], [n for _, n in done], home)
        if self.collective is not None:
            item = self._gather_item(item, sum(n for _, n in done), home)
        return item

    def _reduce(self, outs: list[Any], sizes: list[int]) -> dict[str, Tensor]:
        """Each param's gradient for the whole batch (across ranks too), on device 0."""
        home = _inner(self.devices[0])
        sums: dict[str, Tensor] = {}
        for replica, out, n in zip(self.replicas, outs, sizes, strict=True):
            if out is None:
                continue
            for path, p in replica.named_params():
                g = out.grads.get(p.id)
                if g is None:
                    continue
                g = g.to_device(home) * float(n)
                sums[path] = g if path not in sums else sums[path] + g
        count = float(sum(sizes))
        if self.collective is not None:
            # every rank must send the same list: a param without a gradient here sends zeros
            paths = [path for path, p in self.replicas[0].named_params() if p.require_grad]
            zeros = {path: p.val.inner().detach() * 0.0
                     for path, p in self.replicas[0].named_params() if path not in sums}
            values = [(sums[path] if path in sums else zeros[path]).to_data() for path in paths]
            values.append(TensorData([count]).convert(DType.F32))
            reduced = self.collective.all_reduce(values)
            count = float(reduced[-1].to_list()[0])
            sums = {path: from_data(data, device=home)
                    for path, data in zip(paths, reduced[:-1], strict=True)}
        return {path: g / count for path, g in sums.items()}

    def valid_item(self, item: Any) -> Any:
        """The item of the whole validation batch when every rank validated its slice
        (`shards_valid`), on device 0; else `item` itself."""
        if self.collective is None or not self.shards_valid:
            return item
        from ..train.metric import batch_size
        return self._gather_item(item, batch_size(item), _inner(self.devices[0]))

    def _gather_item(self, item: Any, size: int, home: Backend) -> Any:
        """The item of the whole global batch: every rank's merged item, merged again."""
        assert self.collective is not None
        mine = [t.detach().to_data() for t in tensors_in(item)]
        mine.append(TensorData([float(size)]).convert(DType.F32))
        ranks = self.collective.gather(mine)
        items, sizes = [], []
        for values in ranks:
            items.append(replace_tensors(item, [from_data(v, device=home) for v in values[:-1]]))
            sizes.append(int(float(values[-1].to_list()[0])))
        return merge_items(items, sizes, home)
