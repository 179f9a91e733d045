"""The compiled data-parallel step: each device's half-steps captured and replayed.

`DataParallel` runs a step in three parts when its Learner compiles (the default):

1. **Gradients, packed.** On each device, a compiled function runs the replica's `train_step`
   on its slice and returns every gradient flattened into *one* tensor (in the model's param
   order; the paths of the params that got one come back as a static tuple). Each device has
   its own `pyrite.compile` function, so its program is captured once and replayed; every
   device's replay is submitted before the first readback, so the devices run at once.
2. **One sum on the host.** One readback per device of its packed gradients, the sum weighted
   by the slices' sizes (in device order, in float32, as the eager step adds them), one
   all-reduce across processes when there are several, the division by the global batch size.
   The slices' items come to the host too and are merged there, so the metrics' reads wait
   for no device; their float tensors (loss, outputs) are packed after the gradients and come
   with the same readback.
3. **The update.** The sum is uploaded once per device, and a second compiled function per
   device cuts it back into each param's gradient and takes the optimizer step.

Every replica is given the same bytes and steps with its own copy of the same optimizer, so the
replicas stay bit-equal. On a device without a capture engine (numpy) the functions run as they
are; the host sum is the same. See docs/distributed.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from ..backend.base import Backend
from ..capture import compile
from ..creation import cat
from ..data import TensorData
from ..device import device
from ..dtype import DType
from ..errors import ConfigError
from ..optim.grads import GradientsParams
from ..tensor import Tensor, from_data
from .batches import replace_tensors, tensors_in
from .collective import Collective

log = logging.getLogger("pyrite.distributed")


def packed_gradients(model: Any, batch: Any) -> tuple[Tensor, Any, tuple[str, ...], int]:
    """A replica's first half-step: (every gradient of `model`'s `train_step` on `batch`
    flattened into one tensor, followed by the step's item tensors of the gradients' dtype
    (loss, outputs), so one readback brings both; the item; the paths of the params; how many
    of the packed numbers are gradients)."""
    from ..train.epoch import _train_output

    out = _train_output(model, batch)
    paths: list[str] = []
    flat: list[Tensor] = []
    for path, p in model.named_params():
        g = out.grads.get(p.id)
        if g is not None:
            paths.append(path)
            flat.append(g.reshape([-1]))
    if not flat:
        raise ConfigError(f"data parallel: {type(model).__name__}.train_step gave no param a "
                          f"gradient; return TrainOutput(model, loss.backward(), item)")
    size = sum(t.numel() for t in flat)
    kind = flat[0].dtype
    flat += [t.inner().reshape([-1]) for t in tensors_in(out.item) if t.dtype == kind]
    packed = flat[0] if len(flat) == 1 else cat(flat, 0)
    return packed, out.item, tuple(paths), size


def host_item(item: Any, packed: Any, start: int, home: Backend) -> Any:
    """`item` with its tensors on `home`: those `packed_gradients` packed (the packed array's
    dtype) taken from `packed` (a numpy array) after `start`, the others read back."""
    tensors = []
    for t in tensors_in(item):
        if t.dtype.np_name == packed.dtype.name:
            n = t.numel()
            tensors.append(from_data(TensorData(packed[start:start + n].reshape(t.shape)),
                                     device=home))
            start += n
        else:
            tensors.append(t.detach().to_device(home))
    return replace_tensors(item, tensors)


def apply_packed(model: Any, packed: Tensor, paths: tuple[str, ...], lr: float,
                 optim: Any) -> Any:
    """`model` stepped by `optim` with the gradients packed in `packed` (as
    `packed_gradients` lays them out): a replica's second half-step."""
    params = dict(model.named_params())
    grads = {}
    start = 0
    for path in paths:
        p = params[path]
        size = p.val.numel()
        grads[p.id] = packed.narrow(0, start, size).reshape(list(p.val.shape))
        start += size
    return optim.step(lr, model, GradientsParams(grads))


def weighted_sum(parts: Sequence[Any], sizes: Sequence[int]) -> Any:
    """Σ sizes[r] · parts[r] (numpy arrays) in float32, added in order (the eager step's
    order, so the numbers match it)."""
    import numpy as np

    total = None
    for part, n in zip(parts, sizes, strict=True):
        term = part.astype(np.float32, copy=False) * np.float32(n)
        total = term if total is None else total + term
    return total


class CompiledReplicas:
    """The per-device compiled half-steps of one `DataParallel` (see the module doc)."""

    def __init__(self, devices: Sequence[Backend], collective: Collective | None) -> None:
        self.devices = list(devices)
        self.collective = collective
        # one function per device: each keeps its own programs (cache_size per device)
        #: where the slices' items are merged: the host, so the metrics' reads wait for no
        #: device (eagerly, device 0)
        self.home = device("numpy")
        self.clock = StepClock()
        self.grads: list[Any] = [compile(packed_gradients) for _ in self.devices]
        self.apply: list[Any] = [compile(apply_packed) for _ in self.devices]

    @property
    def fell_back(self) -> bool:
        """Whether a device's half-step could not be captured (it then runs eagerly)."""
        return any(f.fallbacks for f in (*self.grads, *self.apply))

    def step(self, replicas: list[Any], parts: list[Any], sizes: list[int], lr: float,
             optims: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """(the stepped replicas, each slice's item or None)."""
        from .parallel import _inner

        clock = self.clock
        start = time.perf_counter()
        outs: list[tuple[Tensor, Any, tuple[str, ...], int] | None] = []
        for fn, replica, part in zip(self.grads, replicas, parts, strict=True):
            # submitted, not waited for: every device works while the next one is given its step
            outs.append(None if part is None else fn(replica, part))
        done = [(out, n) for out, n in zip(outs, sizes, strict=True) if out is not None]
        paths = done[0][0][2]
        if any(out[2] != paths for out, _ in done):
            raise ConfigError("data parallel: the replicas' gradients differ in which params "
                              "they cover; a train_step must give the same params a gradient "
                              "on every device")
        clock.note("submit", start)
        read = []
        for out, _ in done:
            mark = time.perf_counter()
            read.append(out[0].to_data().to_numpy())
            clock.note("read_first" if len(read) == 1 else "read_others", mark)
        mark = time.perf_counter()
        size = done[0][0][3]
        total = weighted_sum([r[:size] for r in read], [n for _, n in done])
        clock.note("sum", mark)
        mark = time.perf_counter()
        # the items to the host: their float tensors came with the gradients
        arrays = iter(read)
        items = [None if out is None else host_item(out[1], next(arrays), size, self.home)
                 for out in outs]
        clock.note("items", mark)
        count = float(sum(sizes))
        if self.collective is not None:
            mark = time.perf_counter()
            reduced = self.collective.all_reduce(
                [TensorData(total), TensorData([count]).convert(DType.F32)])
            total = reduced[0].to_numpy()
            count = float(reduced[1].to_list()[0])
            clock.note("all_reduce", mark)
        mark = time.perf_counter()
        mean = TensorData(total / total.dtype.type(count))
        stepped = []
        for update, replica, opt, dev in zip(self.apply, replicas, optims, self.devices,
                                         strict=True):
            grads = from_data(mean, device=_inner(dev))
            stepped.append(update(replica, grads, paths, lr, opt))
        clock.note("update", mark)
        clock.steps += 1
        return stepped, items


class StepClock:
    """Seconds the compiled steps spent in each part, summed over `steps` steps (for
    benchmarks: `DataParallel.compiled.clock`). `read_first` includes the wait for the first
    device to finish its backward pass; `read_others` is mostly the copies of the others."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.steps = 0

    def note(self, part: str, since: float) -> None:
        self.seconds[part] = self.seconds.get(part, 0.0) + time.perf_counter() - since

    def per_step_ms(self) -> dict[str, float]:
        return {k: round(1000 * v / max(self.steps, 1), 3) for k, v in self.seconds.items()}

    def reset(self) -> None:
        self.seconds, self.steps = {}, 0


__all__ = ["CompiledReplicas", "StepClock", "apply_packed", "host_item", "packed_gradients",
           "weighted_sum"]
