"""Launch plans of the conv ops: the host side of a conv call worked out once per description.

A conv call on its ordinary path (`conv.py`) makes the same decisions every time for the same
shapes: direct kernel or GEMM and its tile, K slices, metadata words packed and looked up,
pipeline keys built and looked up. On the H100 that path cost 18-46 us more per call than
launching the chosen kernel by hand, while cuDNN's whole op took 20-60 us on most layers of
the MNIST model and SqueezeNet (benchmarks/results/conv_layers_h100_s4_final.json).

Here the second call of a description (the first may time autotune's candidates) runs the
ordinary path through a `_Recorder`, which notes what it launches: each dispatch's pipeline and
workgroups, and for each binding whether it is one of the call's tensors, a buffer the call
allocated (its shape) or a constant buffer (metadata, kept alive by the plan). Later calls
replay the plan: allocate the output and any temporaries, bind the call's buffers, launch.

This module owns the cache and the recording, not the kernels or the choice between them. The
ordinary path runs instead while a step is captured (`pyrite.compile`'s recorder must see
every metadata buffer). Copies (a non-contiguous input, a grouped or flipped weight) are
recorded like any launch; a call that binds a buffer the recorder cannot place is never
cached. `clear` empties the cache; a change to the rule that `conv.py` follows (a test
forcing a kernel) must call it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from types import FunctionType, MethodType
from typing import Any, cast
from weakref import WeakKeyDictionary

from ..dtype import DType
from .kernels import Kernels
from .runtime import Bindings, Buffer, Pipeline
from .tensor import GpuTensor

MAX_PLANS = 1024  # descriptions kept per device (a model has a few dozen conv ops)
_SEEN = object()  # a description seen once: its plan is recorded on the next call
_NEVER = object()  # a description whose call could not be planned: always the ordinary path


class Plan:
    """What one call of a description launches. `temps` are the tensors the call allocates,
    in order (shape, dtype, op name); each step's `slots` index the call's buffers: operands
    first, then temporaries, then `constants`. `result` is the temporary returned (as
    `shape`: a reshaped view of it), or None where the call returns None (an epilogue
    declined)."""

    __slots__ = ("constants", "result", "shape", "steps", "temps")

    def __init__(self, temps: tuple[tuple[tuple[int, ...], DType, str], ...],
                 steps: tuple[tuple[Pipeline, tuple[int, ...], tuple[int, int, int]], ...],
                 constants: list[Buffer], result: int | None, shape: tuple[int, ...]) -> None:
        self.temps = temps
        self.steps = steps
        self.constants = constants
        self.result = result
        self.shape = shape

    def replay(self, k: Kernels, operands: list[Buffer]) -> GpuTensor | None:
        if self.result is None:
            return None
        blocks = [k.empty(shape, dtype, op) for shape, dtype, op in self.temps]
        bufs = operands + [t.block.buffer for t in blocks] + self.constants
        for pipeline, slots, workgroups in self.steps:
            k.launch(pipeline, [bufs[i] for i in slots], workgroups)
        out = blocks[self.result]
        return out if out.shape == self.shape else out.reshaped(self.shape)


class _Recorder:
    """Stands in for `Kernels` during one ordinary call: forwards every call, and notes the
    allocations and launches in order, and the constant buffers."""

    def __init__(self, inner: Kernels, operands: list[Buffer]) -> None:
        self._inner = inner
        self.operands = operands
        self.temps: list[tuple[tuple[int, ...], DType, str]] = []
        self.constants: list[Buffer] = []
        # in order: a temporary's buffer (allocated), or a launch
        self.events: list[Buffer | tuple[Pipeline, list[Buffer], tuple[int, int, int]]] = []

    def __getattr__(self, name: str) -> Any:
        # Kernels' methods run on this recorder (a copy's allocation and launch are seen);
        # everything else (the runtime, autotune, the caches) is the inner object's
        method = getattr(Kernels, name, None)
        if isinstance(method, FunctionType):
            return MethodType(method, self)
        return getattr(self._inner, name)

    @property
    def copies(self) -> int:
        return self._inner.copies

    @copies.setter
    def copies(self, value: int) -> None:
        self._inner.copies = value

    def empty(self, shape: tuple[int, ...], dtype: DType, op: str) -> GpuTensor:
        out = self._inner.empty(shape, dtype, op)
        self.temps.append((tuple(shape), dtype, op))
        self.events.append(out.block.buffer)
        return out

    def meta(self, words: Sequence[int]) -> Buffer:
        found = self._inner.meta(words)
        self.constants.append(found)
        return found

    def constant(self, data: bytes, uniform: bool = False) -> Buffer:
        found = self._inner.constant(data, uniform)
        self.constants.append(found)
        return found

    def launch(self, pipeline: Pipeline, bindings: Bindings,
               workgroups: tuple[int, int, int], cost: float = 0.0) -> None:
        assert not isinstance(bindings, dict), "conv kernels bind in order"
        self.events.append((pipeline, list(bindings), workgroups))
        self._inner.launch(pipeline, bindings, workgroups, cost)

    def plan(self, result: GpuTensor | None) -> Plan | None:
        """The plan of what was recorded; None where a binding is none of the call's buffers
        (work launched outside the recorder), operands share a buffer (a later call's need
        not), or the result is not a whole temporary."""
        operands = self.operands
        if len({id(b) for b in operands}) != len(operands):
            return None
        first_constant = len(operands) + len(self.temps)
        known = {id(b): i for i, b in enumerate(operands)}
        constants: list[Buffer] = []
        for c in self.constants:
            if id(c) not in known:
                known[id(c)] = first_constant + len(constants)
                constants.append(c)
        live: dict[int, int] = {}  # buffer id -> slot of the temporary holding it now
        steps = []
        allocated = 0
        for event in self.events:
            if not isinstance(event, tuple):
                live[id(event)] = len(operands) + allocated
                allocated += 1
                continue
            slots = []
            for b in event[1]:
                slot = live.get(id(b), known.get(id(b)))
                if slot is None:
                    return None
                slots.append(slot)
            steps.append((event[0], tuple(slots), event[2]))
        result_slot = None
        if result is not None:
            found = live.get(id(result.block.buffer))
            if found is None or result.offset != 0 or not result.is_contiguous or \
                    result.numel != math.prod(self.temps[found - len(operands)][0]):
                return None
            result_slot = found - len(operands)
        return Plan(tuple(self.temps), tuple(steps), constants, result_slot,
                    result.shape if result is not None else ())


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
    recorder = _Recorder(k, operands)
    result = call(cast(Kernels, recorder))
    plans[key] = recorder.plan(result) or _NEVER
    return result


__all__ = ["MAX_PLANS", "Plan", "clear", "planned"]
