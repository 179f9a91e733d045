"""Capture and replay on a webgpu device: the engine under `pyrite.compile`.

A capture runs the step eagerly while a `Recorder` (`recording.py`, shared with the conv ops'
launch plans) sits on the device's `Kernels` and notes, in order, every dispatch (pipeline, the
buffers bound, workgroup counts), every upload, every buffer the pool hands out and every
metadata block holding a traced host number (see `pyrite.capture.traced`). When the step
returns, each buffer the dispatches touched is sorted into one of four roles:

- an *input*: the buffer of a tensor the step was given (its args, the optimizer's state);
  a replay binds the buffer of the tensor given then;
- an *output*: made during the step and held by what it returned; a replay takes a fresh
  buffer from the pool for it, since the caller keeps the previous step's results;
- a *temporary*: made during the step and dead at its end; the program keeps these buffers for
  itself (the pool already reused them by liveness while the step ran, so the program's arena is
  exactly eager's peak), and they are bound once;
- *fixed*: anything else (metadata, constants made before the step): bound as it is, and kept.

A `Program` is those commands over a table of buffers. `replay` fills the table's input and
output slots, writes the metadata words whose formulas changed, records every dispatch into one
command encoder and submits once; no module code, autodiff or fusion runs. The eager batch's
submit policy (`batch.POLICY`: submit after a long kernel) is replaced by one submit a replay
(measured faster: `SubmitPolicy`'s doc); with `POLICY.split_replays` a program is submitted in
the parts an eager batch would be (the kernels' costs are recorded for it).

What cannot be captured is refused by name (a readback inside the step, a tensor made inside
the step that outlives it without being returned), and the caller runs the step eagerly.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Sequence
from typing import Any, cast

from ..backend.autodiff import Tracked
from ..backend.base import layers
from ..capture import traced
from ..capture.traced import Formulas, Trace
from ..tensor import Tensor
from .batch import POLICY
from .fusion import FusedTensor, Fusion
from .kernels import Kernels
from .recording import Recorder, Refusal, user_line
from .tensor import GpuTensor

_SEGMENT_SETS = 8  # sets of buffers whose bind groups a program keeps


# ---- unwrapping tensors to device views and back -------------------------------------------------
def device_view(prim: Any) -> GpuTensor:
    """The device view under an autodiff and/or fusion primitive (flushed when pending)."""
    while True:
        cls = prim.__class__
        if cls is GpuTensor:
            return prim  # type: ignore[no-any-return]
        if cls is Tracked:
            prim = prim.value
        elif cls is FusedTensor:
            if prim.value is None:
                raise Refusal("a tensor was still pending after the step's flush")
            prim = prim.value
        else:
            raise Refusal(f"a tensor of another backend ({cls.__name__}) is among its values")


def _layers(prim: Any) -> tuple[type, ...]:
    found = []
    while prim.__class__ is not GpuTensor:
        found.append(prim.__class__)
        prim = prim.value
    return tuple(found)


def rewrap(layers: tuple[type, ...], view: GpuTensor) -> Any:
    """`view` inside the same layers (autodiff leaves come back untracked)."""
    prim: Any = view
    for cls in reversed(layers):
        prim = FusedTensor(view.shape, view.dtype, prim) if cls is FusedTensor else Tracked(prim)
    return prim


def fusions(backend: Any) -> list[Fusion]:
    return [b for b in layers(backend) if isinstance(b, Fusion)]


# ---- the program -------------------------------------------------------------------------------
class Program:
    """A captured step: commands over a table of buffers; see the module doc."""

    def __init__(self, engine: CaptureEngine, table: list[Any], inputs: list[tuple[int, int]],
                 fresh: list[tuple[int, int]], commands: list[tuple[Any, ...]],
                 dynamic: list[tuple[Any, list[Any]]], outputs: list[tuple[Any, ...]],
                 formulas: Formulas, draws: int, claimed: list[Any], fingerprint: Any) -> None:
        self.engine = engine
        self.table = table
        self.inputs = inputs  # (slot, input leaf index)
        self.fresh = fresh  # (slot, bytes): a new pool buffer each replay
        self.commands = commands
        self.dynamic = dynamic  # (buffer, words): metadata rewritten each replay
        self.outputs = outputs
        self.formulas = formulas
        self.draws = draws
        self.claimed = claimed
        self.fingerprint = fingerprint
        self.last: dict[int, tuple[Any, Any]] = {}  # fresh slot -> (buffer before, last buffer)
        self.varying = tuple(s for s, _ in inputs) + tuple(s for s, _ in fresh)
        self._segments: dict[tuple[float, ...], list[tuple[list[Any], Any]]] = {}

    def replay(self, tensors: Sequence[Tensor], numbers: Sequence[Any]) -> list[Any] | None:
        """The output leaves (tensors, numbers) for new inputs, or None when a guard of the
        capture answers differently for them (the caller then runs the step eagerly)."""
        engine = self.engine
        raw = engine.backend
        values = self.formulas([*numbers, raw._seed, raw._counter])
        if values is None:
            return None
        views = [device_view(t._prim) for t in tensors]
        table = list(self.table)
        for slot, leaf in self.inputs:
            table[slot] = views[leaf].block.buffer
        pool = engine.kernels.pool
        blocks = {}
        last = self.last
        for slot, size in self.fresh:
            # the buffer this slot had two replays ago is usually free again: taking it back
            # makes the bind groups of the replay before last match (cached)
            history = last.get(slot)
            block = pool.alloc(size, "compiled step", history[0] if history else None)
            blocks[slot] = block
            table[slot] = block.buffer
            last[slot] = (history[1], block.buffer) if history else (None, block.buffer)
        runtime = engine.kernels.runtime
        at = 0
        writes = []
        for buffer, words in self.dynamic:
            now = list(words)
            for i, w in enumerate(words):
                if w is None:
                    now[i] = values[at]
                    at += 1
            writes.append((buffer, 0, struct.pack(f"<{len(now)}i", *now)))
        # the segments (dispatches between uploads) for these buffers: made once per set of
        # input and output buffers (a training loop alternates between two), then reused
        key = (POLICY.split_replays and POLICY.work, *(id(table[s]) for s in self.varying))
        segments = self._segments.get(key)
        if segments is None:
            segments = self._segments[key] = self._segment(table)
            if len(self._segments) > _SEGMENT_SETS:
                self._segments.pop(next(iter(self._segments)))
        for items, upload in segments:
            if upload is not None:  # an upload between dispatches: what came before runs first
                _, slot, offset, data = upload
                writes.append((table[slot], offset, data))
            runtime.replay(items, writes)  # the metadata (and uploads) written, then the kernels
            writes = []
        raw._counter += self.draws
        leaves: list[Any] = []
        for out in self.outputs:
            if out[0] == "n":
                leaves.append(values[out[1]])
            elif out[0] == "fixed":
                leaves.append(out[1])
            else:
                _, source, where, shape, strides, offset, dtype, layers, backend, kind = out
                block = blocks[where] if source == "fresh" else views[where].block
                view = GpuTensor(block, shape, strides, offset, dtype)
                leaves.append(Tensor._wrap(rewrap(layers, view), backend, kind))
        return leaves

    def _segment(self, table: list[Any]) -> list[tuple[list[Any], Any]]:
        """The commands as runs of dispatches (pipeline, bind group, workgroups), each run
        after the upload that opens it (None: no upload), each submitted on its own; with
        `POLICY.split_replays` a run is also cut where the submit policy cuts an eager batch
        (`SubmitPolicy.chunks`)."""
        bind_group = self.engine.kernels.runtime.bind_group
        runs: list[tuple[list[Any], list[float], Any]] = [([], [], None)]
        for command in self.commands:
            if command[0] == "d":
                _, pipeline, group, slots, workgroups, cost = command
                if group is None:
                    group = bind_group(pipeline, {b: table[s] for b, s in slots})
                runs[-1][0].append((pipeline, group, workgroups))
                runs[-1][1].append(cost)
            else:
                runs.append(([], [], command))
        segments: list[tuple[list[Any], Any]] = []
        for items, costs, upload in runs:
            start = 0
            for end in POLICY.chunks(costs) if POLICY.split_replays else [len(costs)]:
                segments.append((items[start:end], upload if start == 0 else None))
                start = end
        return segments

    def release(self) -> None:
        self._segments.clear()
        pool = self.engine.kernels.pool
        for buffer in self.claimed:
            pool.unclaim(buffer)
        self.claimed = []


class Session:
    """One capture in progress (`CaptureEngine.begin`)."""

    def __init__(self, engine: CaptureEngine, trace: Trace, tensors: Sequence[Tensor]) -> None:
        self.engine = engine
        self.trace = trace
        raw = engine.backend
        self.recorder = Recorder(engine.kernels)
        self.views = [device_view(t._prim) for t in tensors]
        # the generator's seed and counter are the capture's last two traced inputs
        self.counter0 = raw._counter
        self.n_numbers = len(trace.inputs)
        raw._traced_rng = (trace.input(raw._seed), trace.input(raw._counter), raw._counter)
        engine.kernels.recorder = self.recorder
        engine.kernels.pool.watch = self.recorder.allocated

    def _stop(self) -> None:
        kernels = self.engine.kernels
        kernels.recorder = None
        kernels.pool.watch = None
        self.engine.backend._traced_rng = None

    def abandon(self) -> None:
        self._stop()

    def finish(self, top: Any, leaves: list[Any]) -> tuple[Program | Refusal, list[Any]]:
        """Flush the step's pending work, stop recording and build the program. Returns it (or
        why not) and the output leaves to give the caller: detached tensors, plain numbers."""
        for fusion in fusions(top):
            fusion.flush()
        self._stop()
        rec, engine = self.recorder, self.engine
        raw = engine.backend
        draws = raw._counter - self.counter0
        # the caller's leaves: the same device views, without their autodiff graph
        given: list[Any] = []
        describe: list[tuple[Any, ...]] = []
        for leaf in leaves:
            if isinstance(leaf, Tensor):
                try:
                    view = device_view(leaf._prim)
                except Refusal as why:
                    rec.refuse(why.reason)
                    given.append(leaf)
                    describe.append(("?",))
                    continue
                layers = _layers(leaf._prim)
                given.append(Tensor._wrap(rewrap(layers, view), leaf._backend, leaf._kind))
                describe.append(("t", view, layers, leaf._backend, leaf._kind))
            else:
                given.append(traced.plain(leaf))
                describe.append(("n", leaf))
        leaves.clear()  # the caller's list too: the step's graph must die before the check
        leaf = None
        if rec.refusal is not None:
            return rec.refusal, given
        try:
            return self._program(describe, draws), given
        except Refusal as why:
            return why, given

    def _program(self, describe: list[tuple[Any, ...]], draws: int) -> Program:
        rec, engine = self.recorder, self.engine
        gc.collect()  # the step's autodiff graph may hold temporaries in reference cycles
        inputs = {id(v.block.buffer): i for i, v in reversed(list(enumerate(self.views)))}
        allocated: dict[int, tuple[Any, int]] = {}
        for _, buffer, size, _ in rec.allocs:
            allocated[id(buffer)] = (buffer, size)
        out_buffers = {id(d[1].block.buffer) for d in describe if d[0] == "t"}
        for ref, buffer, _, _ in rec.allocs:
            if ref() is not None and id(buffer) not in out_buffers and id(buffer) not in inputs:
                raise Refusal("a tensor made inside the step outlives it without being returned "
                              "(kept in a global, a cache or an object the step does not return)")
        table: list[Any] = []
        slots: dict[int, int] = {}
        input_slots: list[tuple[int, int]] = []
        fresh: list[tuple[int, int]] = []
        claimed: list[Any] = []
        pool = engine.kernels.pool

        def slot_of(buffer: Any) -> int:
            key = id(buffer)
            found = slots.get(key)
            if found is not None:
                return found
            found = slots[key] = len(table)
            table.append(buffer)
            if key in inputs:
                input_slots.append((found, inputs[key]))
            elif key in allocated and key in out_buffers:
                fresh.append((found, allocated[key][1]))
            elif key not in rec.dynamic:
                pool.claim(buffer)  # a temporary (or a buffer from before): the program's now
                claimed.append(buffer)
            return found

        formulas_of: list[traced.Expr] = []
        dynamic: list[tuple[Any, list[Any]]] = []
        for buffer, words in rec.dynamic.values():
            template: list[Any] = []
            for w in words:
                if isinstance(w, traced.Traced):
                    formulas_of.append(w._expr)
                    template.append(None)
                else:
                    template.append(w)
            dynamic.append((buffer, template))
        commands: list[tuple[Any, ...]] = []
        print_: list[Any] = []
        for command in rec.commands:
            if command[0] == "d":
                _, pipeline, pairs, workgroups, cost = command
                bound = tuple((b, slot_of(buf)) for b, buf in pairs)
                varies = any(s in {i for i, _ in input_slots} or s in {i for i, _ in fresh}
                             for _, s in bound)
                group = None if varies else engine.kernels.runtime.bind_group(
                    pipeline, {b: table[s] for b, s in bound})
                commands.append(("d", pipeline, group, bound, workgroups, cost))
                print_.append((id(pipeline), workgroups, tuple(
                    _role(table[s], inputs, allocated, rec) for _, s in bound)))
            else:
                _, buffer, offset, data = command
                commands.append(("w", slot_of(buffer), offset, data))
                print_.append(("w", offset, data))
        outputs: list[tuple[Any, ...]] = []
        for d in describe:
            if d[0] == "n":
                if isinstance(d[1], traced.Traced):
                    outputs.append(("n", len(formulas_of)))
                    formulas_of.append(d[1]._expr)
                else:
                    outputs.append(("fixed", d[1]))
                continue
            _, view, layers, backend, kind = d
            key = id(view.block.buffer)
            if key in inputs:
                source, where = "input", inputs[key]
            elif key in allocated:
                source, where = "fresh", slot_of(view.block.buffer)
                if (where, allocated[key][1]) not in fresh:  # returned, never bound by a kernel
                    raise Refusal("it returns a tensor no kernel of the step wrote")
            else:  # made before the step (a constant): the same tensor every time
                outputs.append(("fixed", Tensor._wrap(rewrap(layers, view), backend, kind)))
                continue
            outputs.append(("t", source, where, view.shape, view.strides, view.offset,
                            view.dtype, layers, backend, kind))
        dyn_print = tuple((tuple(w for w in words), ) for _, words in dynamic)
        formulas = Formulas(formulas_of, self.trace.guards)
        fingerprint = (tuple(print_), dyn_print, formulas.source, draws)
        return Program(engine, table, input_slots, fresh, commands, dynamic, outputs, formulas,
                       draws, claimed, fingerprint)


def _role(buffer: Any, inputs: dict[int, int], allocated: dict[int, Any],
          rec: Recorder) -> Any:
    """What a bound buffer is, as two captures of one step must agree on it."""
    key = id(buffer)
    if key in inputs:
        return ("in", inputs[key])
    if key in allocated:
        return ("made",)
    if key in rec.dynamic:
        return ("dyn",)
    if key in rec.constants:
        return ("meta", rec.constants[key])
    return ("fixed", key)


class CaptureEngine:
    """Capture and replay on one `WebGpu` backend (`WebGpu.capture_engine()`)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.kernels: Kernels = backend.kernels
        #: id -> backend, for the backends (decorators of this device) `layout` has checked
        self._backends: dict[int, Any] = {}

    def begin(self, trace: Trace, tensors: Sequence[Tensor]) -> Session:
        for t in tensors:
            for fusion in fusions(t._backend):
                fusion.flush()
        return Session(self, trace, tensors)

    def layout(self, tensors: Sequence[Tensor]) -> tuple[Any, ...]:
        """What of the tensors a program depends on: views, dtypes, which share a buffer."""
        seen: dict[int, int] = {}
        out = []
        known = self._backends
        for i, t in enumerate(tensors):
            backend = t._backend
            if known.get(id(backend)) is not backend:
                if engine_of(backend) is not self:
                    raise Refusal(f"its tensors are on several devices ({backend.name} and "
                                  f"{self.backend.name} ...); compile a step per device")
                known[id(backend)] = backend  # the backends are few and live long
            prim = t._prim
            if prim.__class__ is Tracked:
                prim = prim.value
            if prim.__class__ is FusedTensor and prim.node is not None:
                for fusion in fusions(backend):
                    fusion.flush()
            view = device_view(prim)
            first = seen.setdefault(id(view.block), i)
            out.append((backend.name, view.shape, view.strides, view.offset, view.dtype, first))
        return tuple(out)


def engine_of(backend: Any) -> CaptureEngine | None:
    from .backend import WebGpu
    raw = next((b for b in layers(backend) if isinstance(b, WebGpu)), None)
    return cast(CaptureEngine, raw.capture_engine()) if raw is not None else None


__all__ = ["CaptureEngine", "Program", "Recorder", "Refusal", "engine_of", "user_line"]
