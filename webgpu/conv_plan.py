"""Launch plans of the conv ops: the host side of a conv call worked out once per description.

A conv call on its ordinary path (`conv.py`) makes the same decisions every time for the same
shapes: direct kernel or GEMM and its tile, K slices, metadata words packed and looked up,
pipeline keys built and looked up. On the H100 that path cost 18-46 us more per call than
launching the chosen kernel by hand, while cuDNN's whole op took 20-60 us on most layers of
the MNIST model and SqueezeNet (benchmarks/results/conv_layers_h100_s4_final.json).

Here the second call of a description (the first may time autotune's candidates) runs the
ordinary path under the recorder that `pyrite.compile`'s captures use (`recording.Recorder`,
set as `Kernels.recorder` and the pool's `watch`), and the record becomes a `Plan`: each
dispatch's pipeline and workgroups, and for each binding whether it is one of the call's
tensors, a block the call allocated (its size) or a constant buffer (metadata, kept alive by
the plan). Later calls replay the plan: allocate the output and any temporaries, bind the
call's buffers, launch. One recorder, two readers: a capture keeps a whole step's record as a
`capture.Program`, a plan keeps one conv call's.

This module owns the cache and the reading of the record, not the kernels or the choice
between them. The ordinary path runs instead while a step is captured (the capture's recorder
then sees every launch). Copies (a non-contiguous input, a grouped or flipped weight) are
recorded like any launch; a call the record cannot describe (an upload or a readback, kernels
timed meanwhile, a binding that is none of the call's buffers) is never cached. `clear`
empties the cache; a change to the rule that `conv.py` follows (a test forcing a kernel) must
call it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from weakref import WeakKeyDictionary

from ..dtype import DType
from .kernels import Kernels
from .recording import Recorder
from .runtime import Buffer, Pipeline
from .tensor import GpuTensor

MAX_PLANS = 1024  # descriptions kept per device (a model has a few dozen conv ops)
_SEEN = object()  # a description seen once: its plan is recorded on the next call
_NEVER = object()  # a description whose call could not be planned: always the ordinary path


class Plan:
    """What one call of a description launches. `temps` are the blocks the call allocates, in
    order (size, op name); each step's `slots` pair a binding with an index into the call's
    buffers: operands first, then temporaries, then `constants`. `result` is the temporary
    returned, as a dense tensor of `shape` and `dtype`, or None where the call returns None
    (an epilogue declined)."""

    __slots__ = ("constants", "dtype", "result", "shape", "steps", "temps")

    def __init__(self, temps: tuple[tuple[int, str], ...],
                 steps: tuple[tuple[Pipeline, tuple[int, ...], tuple[int, int, int], float], ...],
                 constants: list[Buffer], result: int | None, shape: tuple[int, ...],
                 dtype: DType) -> None:
        self.temps = temps
        self.steps = steps
        self.constants = constants
        self.result = result
        self.shape = shape
        self.dtype = dtype

    def replay(self, k: Kernels, operands: list[Buffer]) -> GpuTensor | None:
        if self.result is None:
            return None
        alloc = k.pool.alloc
        blocks = [alloc(size, op) for size, op in self.temps]
        bufs = operands + [b.buffer for b in blocks] + self.constants
        for pipeline, slots, workgroups, cost in self.steps:
            k.launch(pipeline, [bufs[i] for i in slots], workgroups, cost)
        return GpuTensor.dense(blocks[self.result], self.shape, self.dtype)


def _plan(rec: Recorder, operands: list[Buffer], op: str,
          result: GpuTensor | None) -> Plan | None:
    """The plan of what `rec` recorded; None where the record holds an upload or a refusal, a
    binding is none of the call's buffers (work launched outside the record), operands share
    a buffer (a later call's need not), a dispatch binds other than in order, or the result
    is not a whole temporary that a recorded kernel bound."""
    if rec.refusal is not None or len({id(b) for b in operands}) != len(operands):
        return None
    known = {id(b): i for i, b in enumerate(operands)}
    first_constant = len(operands) + len(rec.allocs)
    constants: list[Buffer] = []
    live: dict[int, int] = {}  # buffer id -> slot of the temporary holding it now
    allocs = iter(enumerate(rec.allocs))
    pending = next(allocs, None)
    steps = []
    for at, command in enumerate(rec.commands):
        while pending is not None and pending[1][3] <= at:
            live[id(pending[1][1])] = len(operands) + pending[0]
            pending = next(allocs, None)
        if command[0] != "d":
            return None  # an upload: not this reader's to replay
        _, pipeline, pairs, workgroups, cost = command
        slots = []
        for i, (binding, b) in enumerate(pairs):
            slot = live.get(id(b), known.get(id(b)))
            if slot is None and id(b) in rec.constants:
                slot = known[id(b)] = first_constant + len(constants)
                constants.append(b)
            if slot is None or binding != i:
                return None
            slots.append(slot)
        steps.append((pipeline, tuple(slots), workgroups, cost))
    while pending is not None:
        live[id(pending[1][1])] = len(operands) + pending[0]
        pending = next(allocs, None)
    temps = tuple((size, op) for _, _, size, _ in rec.allocs)
    if result is None:
        return Plan(temps, tuple(steps), constants, None, (), DType.F32)
    found = live.get(id(result.block.buffer))
    if found is None or result.offset != 0 or not result.is_contiguous or \
            not any(found in slots for _, slots, _, _ in steps):  # no recorded kernel wrote it
        return None
    return Plan(temps, tuple(steps), constants, found - len(operands), result.shape,
                result.dtype)


_PLANS: WeakKeyDictionary[Kernels, dict[Hashable, object]] = WeakKeyDictionary()


def clear() -> None:
    """Forget every plan (after a change to the rule conv.py follows)."""
    _PLANS.clear()


def planned(k: Kernels, key: Hashable, operands: list[Buffer],
            call: Callable[[Kernels], GpuTensor | None]) -> GpuTensor | None:
    """`call(k)`'s result: replayed from the plan of `key` where there is one. `key` must
    determine everything `call` decides and every metadata word it writes (shapes, views,
    conv parameters, an epilogue's structure and words); `operands` are the buffers of the
    call's tensors, in a fixed order."""
    if k.recorder is not None:
        return call(k)
    plans = _PLANS.get(k)
    if plans is None:
        plans = _PLANS[k] = {}
    found = plans.get(key)
    if isinstance(found, Plan):
        return found.replay(k, operands)
    if found is not _SEEN:
        if found is None:
            if len(plans) >= MAX_PLANS:
                del plans[next(iter(plans))]
            plans[key] = _SEEN
        return call(k)
    rec = Recorder(k)
    pool = k.pool
    k.recorder, pool.watch = rec, rec.allocated
    try:
        result = call(k)
    finally:
        k.recorder, pool.watch = None, None
    plan = _plan(rec, operands, str(key[0]) if isinstance(key, tuple) else "conv", result)
    if plan is not None:
        plans[key] = plan
    elif rec.refusal is None or not rec.refusal.retry:
        plans[key] = _NEVER  # (kernels timed meanwhile: recorded again on the next call)
    return result


__all__ = ["MAX_PLANS", "Plan", "clear", "planned"]
