"""`CommandBatch`: what both runtimes (native.py over wgpu-py, browser.py over navigator.gpu) do
the same way, written once over a few calls each spells in its own API.

- One pending command encoder; consecutive dispatches share one compute pass (WebGPU makes
  each dispatch its own usage scope, so a dispatch still sees the writes of the ones before);
  a copy ends the pass (copies are encoder commands); `flush` submits.
- The submit policy (`SubmitPolicy`, `POLICY`): besides at a sync, a batch is submitted once it
  holds `commands` commands, or right after a dispatch that brings the work it holds to `work`
  (a launch may say what its kernel costs: `dispatch(..., cost=FLOPs)`). Without such a point
  the GPU idles while the host records many steps (a training loop of few long kernels); with
  it the GPU runs a long kernel while the host records what follows. A replayed program
  (`replay`) is one submit: the rule is deliberately not applied there unless
  `split_replays` (see its measurement below).
- Bind groups cached per (pipeline, bindings), least recently used dropped first: training
  repeats the same bindings every step (the pool hands back the same buffers), and a bind
  group costs a driver call to make. Pipelines live as long as the runtime, so their ids key
  the cache; the key holds the buffers, so their ids stay unique while cached. Destroying a
  buffer must empty the cache (`_groups.clear()`).
- `stats`: dispatches and submits counted (the page reports them per prediction).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .runtime import BindGroup, Bindings, Buffer, Dispatch, Pipeline, Write

MAX_PENDING = 256  # commands per batch before an automatic submit
MAX_BIND_GROUPS = 4096  # cached bind groups


@dataclass
class SubmitPolicy:
    """When a batch is submitted before a sync: after `commands` commands, or after the
    dispatch that brings the estimated work (FLOPs, each launch's `cost`) of the batch to
    `work` (`math.inf`: never by work). 1 GFLOP is about 50 us of an H100 at the attention
    kernels' pace, so the submit (tens of microseconds of host time) is paid only where the GPU
    has that much to do; on lavapipe it is about a second. Kernels that say nothing cost 0.

    Measured on the H100 (an attention forward + backward at (8, 8, 1024, 64), 9 dispatches,
    three of them long; benchmarks/results/attention_steps_h100_s6_*.json, two runs): eager,
    3.40-3.44 ms a step with the work rule, 4.05-4.30 ms without it. A replayed step
    (pyrite.compile) records in 0.24 ms of host time, so a loop of replays keeps the queue full
    without it: one submit took 3.32-3.33 ms a step, the replay split by the rule
    (`split_replays`) 3.36-3.37 ms and waited longer for one step (3.65-3.69 against
    3.59-3.62 ms). Replays are one submit by default."""

    commands: int = MAX_PENDING
    work: float = 1e9
    #: whether a replayed program (capture.py) is submitted in the parts `chunks` cuts
    split_replays: bool = False

    def chunks(self, costs: Sequence[float]) -> list[int]:
        """Where a program of dispatches costing `costs` is cut into submits: the end index
        of each part (the last is len(costs)), each part ending with the dispatch that brings
        its work to `work`, as an eager batch would be submitted."""
        ends, work = [], 0.0
        for i, cost in enumerate(costs):
            work += cost
            if work >= self.work:
                ends.append(i + 1)
                work = 0.0
        if not ends or ends[-1] != len(costs):
            ends.append(len(costs))
        return ends


#: the policy every runtime's batch follows (change its fields, not the object: runtimes read it
#: at each dispatch)
POLICY = SubmitPolicy()


class CommandBatch:
    """Batching and bind-group caching over the hooks a runtime implements."""

    def __init__(self) -> None:
        self._groups: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._layouts: dict[int, Any] = {}
        self._encoder: Any = None
        self._pass: Any = None
        self._pending = 0
        self._work = 0.0  # estimated FLOPs of the pending batch (SubmitPolicy)
        self.stats: dict[str, float] = {"dispatches": 0, "submits": 0, "readbacks": 0,
                                        "readback_ms": 0.0}

    # ---- what each runtime spells in its own API -------------------------------------------
    def _new_encoder(self) -> Any:
        raise NotImplementedError

    def _begin_pass(self, encoder: Any) -> Any:
        raise NotImplementedError

    def _record(self, cpass: Any, pipeline: Pipeline, group: BindGroup,
                workgroups: tuple[int, int, int]) -> None:
        raise NotImplementedError

    def _record_copy(self, encoder: Any, src: Buffer, src_offset: int, dst: Buffer,
                     dst_offset: int, size: int) -> None:
        raise NotImplementedError

    def _submit(self, encoder: Any) -> None:
        raise NotImplementedError

    def _layout_of(self, pipeline: Pipeline) -> Any:
        raise NotImplementedError

    def _create_group(self, layout: Any, pairs: tuple[tuple[int, Buffer], ...]) -> BindGroup:
        raise NotImplementedError

    def _before_submit(self) -> None:
        """Raise what is known to be wrong before submitting (the browser's errors)."""

    # ---- shared ----------------------------------------------------------------------------
    def bind_group(self, pipeline: Pipeline, bindings: Bindings) -> BindGroup:
        pairs = tuple(bindings.items() if isinstance(bindings, Mapping) else enumerate(bindings))
        key = (id(pipeline), *pairs)
        found = self._groups.get(key)
        if found is not None:
            self._groups.move_to_end(key)
            return found
        layout = self._layouts.get(id(pipeline))
        if layout is None:
            layout = self._layouts[id(pipeline)] = self._layout_of(pipeline)
        found = self._create_group(layout, pairs)
        self._groups[key] = found
        if len(self._groups) > MAX_BIND_GROUPS:
            self._groups.popitem(last=False)
        return found

    def _batch(self) -> Any:
        if self._encoder is None:
            self._encoder = self._new_encoder()
        return self._encoder

    def _end_pass(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None

    def dispatch(self, pipeline: Pipeline, bind_group: BindGroup,
                 workgroups: tuple[int, int, int], cost: float = 0.0) -> None:
        if self._pass is None:
            self._pass = self._begin_pass(self._batch())
        self._record(self._pass, pipeline, bind_group, workgroups)
        self._pending += 1
        self.stats["dispatches"] += 1
        if cost:
            self._work += cost
            if self._work >= POLICY.work:
                self.flush()
                return
        if self._pending >= POLICY.commands:
            self.flush()

    def replay(self, dispatches: Sequence[Dispatch], writes: Sequence[Write] = ()) -> None:
        """Write `writes` (buffer, offset, bytes), then record a captured program's dispatches
        in order and submit them: one call for the whole of a replayed step (pyrite.compile)."""
        if writes:
            self.flush()  # recorded work that reads the old contents goes first
            self._write_many(writes)
        if dispatches:
            if self._pass is None:
                self._pass = self._begin_pass(self._batch())
            self._record_many(self._pass, dispatches)
            self._pending += len(dispatches)
            self.stats["dispatches"] += len(dispatches)
        self.flush()

    def _write_many(self, writes: Sequence[Write]) -> None:
        for buffer, offset, data in writes:
            self.write_buffer(buffer, offset, data)  # type: ignore[attr-defined]

    def _record_many(self, cpass: Any, dispatches: Sequence[Dispatch]) -> None:
        for pipeline, group, workgroups in dispatches:
            self._record(cpass, pipeline, group, workgroups)

    def copy_buffer(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int,
                    size: int) -> None:
        self._end_pass()
        self._record_copy(self._batch(), src, src_offset, dst, dst_offset, size)
        self._pending += 1

    def flush(self) -> None:
        self._before_submit()
        if self._encoder is not None:
            self._end_pass()
            encoder, self._encoder, self._pending, self._work = self._encoder, None, 0, 0.0
            self._submit(encoder)
            self.stats["submits"] += 1


__all__ = ["MAX_BIND_GROUPS", "MAX_PENDING", "POLICY", "CommandBatch", "SubmitPolicy"]
