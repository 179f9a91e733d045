"""`CompiledFunction`: what `pyrite.compile(fn)` returns.

Each call flattens its arguments (and the optimizers the function reaches through its closure or
globals, whose state it updates) into tensors, changing numbers and a structure
(`tree.py`). The structure and the tensors' layouts are the call's *signature*. For a signature
first seen, the call runs eagerly while the device's capture engine records it; the second call
with it is captured again and must give the same program (a host value that changes between
calls without being traced would show here); later calls replay. A program is kept per
signature, least recently used dropped past `cache_size`.

A step that cannot be captured (it reads a tensor back in its middle, keeps a tensor made inside
it, takes raw `Gradients`) runs eagerly from then on, with one warning naming why and where. A
device without a capture engine (numpy) simply calls `fn`: there is nothing to replay.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import checks, config
from ..backend.autodiff import Tracked
from ..backend.base import layers
from ..tensor import Tensor
from . import traced
from .counters import STATS
from .tree import Refused, Spec, flatten, optimizers_in

log = logging.getLogger("pyrite.compile")


class CompileWarning(UserWarning):
    """A step pyrite.compile runs eagerly instead of replaying, and why."""


_EAGER = "eager"  # a signature that runs eagerly for good
_LOCK = threading.Lock()  # one capture at a time in a process (the trace is global)


def _reached_optimizers(fn: Callable[..., Any]) -> list[Any]:
    """Optimizers `fn` reaches through its closure or the globals it names (their state is
    updated by the step, so it is an input and an output)."""
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is None:
        return []
    values: list[Any] = [c.cell_contents for c in (target.__closure__ or ())
                         if _filled(c)]
    glob = getattr(target, "__globals__", {})
    values += [glob[n] for n in _names(code) if n in glob]
    bound = getattr(fn, "__self__", None)
    if bound is not None:
        values += list(getattr(bound, "__dict__", {}).values())
    return list(optimizers_in(*values))  # pyrite.optim is not imported for it


@functools.lru_cache(maxsize=256)
def _names(code: Any) -> tuple[str, ...]:
    """The global names `code` and the functions defined in it may read (fixed per code
    object, so found once: a compiled call looks them up on every call)."""
    names = dict.fromkeys(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names.update(dict.fromkeys(const.co_names))
    return tuple(names)


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


class CompiledFunction:
    """`fn` captured once per signature and replayed (see the module doc)."""

    def __init__(self, fn: Callable[..., Any], *, cache_size: int = 8,
                 enabled: bool | None = None, warn: bool = True,
                 inference: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"pyrite.compile: expects a function, got {type(fn).__name__}")
        if cache_size < 1:
            raise ValueError(f"pyrite.compile: cache_size must be at least 1, got {cache_size}")
        self.fn = fn
        self.cache_size = cache_size
        self.enabled = enabled
        self.warn = warn  # False: fallbacks are logged (pyrite.compile), not warned
        #: True: a call given a tensor autodiff tracks runs eagerly (its results keep their
        #: graph); a replay's results are detached, which only a training step may accept
        self.inference = inference
        self._programs: OrderedDict[Any, Any] = OrderedDict()
        #: signature -> the fingerprint of its first capture, awaiting the second's check
        self._pending: OrderedDict[Any, Any] = OrderedDict()
        self._warned: set[str] = set()
        self.captures = self.replays = self.fallbacks = 0
        self._last_engine: tuple[Any, Any] | None = None  # (backend, its engine's layer)
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        """As a method (`@pyrite.compile` on `def forward(self, ...)`): bound to `obj`."""
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return (f"CompiledFunction({getattr(self.fn, '__qualname__', self.fn)!r}, "
                f"{len(self._programs)} programs)")

    def clear(self) -> None:
        """Forget every program (their buffers go back to the pool)."""
        for program in self._programs.values():
            if program is not _EAGER:
                program.release()
        self._programs.clear()
        self._pending.clear()

    def __del__(self) -> None:
        try:
            self.clear()
        except Exception:  # noqa: BLE001, S110 - at interpreter exit the device may be gone
            pass

    # ---- calls ---------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        on = self.enabled if self.enabled is not None else config.compile_enabled()
        if not on or traced.active() is not None:
            # inside another function's capture this one's ops are part of that capture: a
            # replay here would bypass its recorder
            return self.fn(*args, **kwargs)
        given = optimizers_in(*args, *kwargs.values())
        reached = [o for o in _reached_optimizers(self.fn) if all(o is not g for g in given)]
        optimizers = given + reached  # their state is an input and, updated, an output
        leaves: list[Any] = []
        try:
            spec = flatten((args, kwargs, tuple(reached)), leaves)
        except Refused as why:
            self._fall_back(str(why), None)
            return self.fn(*args, **kwargs)
        tensors = [x for x in leaves if isinstance(x, Tensor)]
        if self.inference and any(_tracked(t) for t in tensors):
            return self.fn(*args, **kwargs)  # gradients must reach what the result came from
        engine = self._engine(tensors)
        if engine is None:
            return self.fn(*args, **kwargs)  # nothing to replay on this device
        numbers = [x for x in leaves if not isinstance(x, Tensor)]
        try:
            # the engine too: two devices of one name (a page's recorder, two adapters)
            key = (spec.signature(), id(engine), engine.layout(tensors))
        except Exception as why:  # noqa: BLE001 - a tensor the engine cannot describe
            self._fall_back(str(why), None)
            return self.fn(*args, **kwargs)
        program = self._programs.get(key)
        if program is _EAGER:
            return self.fn(*args, **kwargs)
        if program is not None:
            self._programs.move_to_end(key)
            out = program.replay(tensors, numbers)
            if out is not None:
                self.replays += 1
                STATS.replays += 1
                built = program.out_spec.build(out)
                checks.PENDING.extend(built[2])
                return built[0]
            STATS.guard_misses += 1  # a guard answered otherwise: capture this path anew
            self._drop(key)
        if _LOCK.locked():
            return self.fn(*args, **kwargs)  # another thread is capturing: run eagerly
        with _LOCK:
            return self._capture(key, spec, leaves, engine, args, kwargs, optimizers)

    def _capture(self, key: Any, spec: Spec, leaves: list[Any], engine: Any,
                 args: tuple[Any, ...], kwargs: dict[str, Any], optimizers: list[Any]) -> Any:
        trace = traced.Trace()
        given_args, given_kwargs = args, kwargs
        new_leaves = [trace.input(x) if not isinstance(x, Tensor) else x for x in leaves]
        args, kwargs, _ = spec.build(new_leaves)
        tensors = [x for x in leaves if isinstance(x, Tensor)]
        try:
            session = engine.begin(trace, tensors)
        except Exception as why:  # noqa: BLE001 - an input the engine cannot take as it is
            self._fall_back(str(why), None)
            return self.fn(*given_args, **given_kwargs)
        traced._ACTIVE.append(trace)
        checks_before = len(checks.PENDING)
        try:
            result = self.fn(*args, **kwargs)
        except BaseException:
            traced._ACTIVE.pop()
            session.abandon()
            raise
        # index checks the step left pending are results of the step, kept pending again
        made = checks.PENDING[checks_before:]
        del checks.PENDING[checks_before:]
        try:
            out_leaves: list[Any] = []
            out_spec = flatten((result, tuple(optimizers), made), out_leaves)
        except Refused as why:
            traced._ACTIVE.pop()
            session.abandon()
            _untrace_optimizers(optimizers)
            checks.PENDING.extend(made)
            self._fall_back(str(why), key)
            return traced.plain(result)
        del result
        try:  # the trace stays active: the final flush turns traced scalars into kernel words
            program, given = session.finish(tensors[0]._backend, out_leaves)
        finally:
            traced._ACTIVE.pop()
        del out_leaves
        built = out_spec.build(given)  # also puts the optimizers' (plain) state back
        checks.PENDING.extend(built[2])
        if not hasattr(program, "replay"):  # a Refusal
            if program.retry:
                log.debug("compile: capturing again later: %s", program.reason)
            else:
                self._fall_back(program.reason, key)
            return built[0]
        program.out_spec = out_spec
        self.captures += 1
        STATS.captures += 1
        first = self._pending.pop(key, None)
        if first is None:  # the first capture: keep its fingerprint only, not its buffers
            program.release()
            self._pending[key] = program.fingerprint
            while len(self._pending) > self.cache_size:
                self._pending.popitem(last=False)
        elif first != program.fingerprint:
            program.release()
            self._fall_back("the step differs from call to call in a way no traced value "
                            "explains (a host value read outside its arguments changes, or a "
                            "tensor is uploaded with other contents)", key)
        else:
            self._programs[key] = program
            while len(self._programs) > self.cache_size:
                _, old = self._programs.popitem(last=False)
                if old is not _EAGER:
                    old.release()
        return built[0]

    def _engine(self, tensors: list[Tensor]) -> Any:
        """The capture engine of the first tensor's device (the layer that has it is kept for
        the last device: a reset device makes a new engine, so it is asked each time)."""
        if not tensors:
            return None
        backend = tensors[0]._backend
        last = self._last_engine
        if last is None or last[0] is not backend:
            last = self._last_engine = (backend, engine_layer(backend))
        return last[1].capture_engine() if last[1] is not None else None

    def _drop(self, key: Any) -> None:
        program = self._programs.pop(key, None)
        if program is not None and program is not _EAGER:
            program.release()

    def _fall_back(self, reason: str, key: Any) -> None:
        self.fallbacks += 1
        STATS.fallbacks += 1
        STATS.reasons[reason] = STATS.reasons.get(reason, 0) + 1
        if key is not None:
            self._programs[key] = _EAGER
        if reason not in self._warned:
            self._warned.add(reason)
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            if not self.warn:
                log.info("pyrite.compile: %s runs eagerly: %s", name, reason)
                return
            warnings.warn(f"pyrite.compile: {name} runs eagerly: {reason}", CompileWarning,
                          stacklevel=_caller_level())


def _caller_level() -> int:
    """The stack level of the frame that called the compiled function (for warnings)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


def engine_layer(backend: Any) -> Any:
    """The layer of `backend` that captures and replays (has `capture_engine`), or None."""
    return next((b for b in layers(backend) if hasattr(b, "capture_engine")), None)


def _tracked(t: Tensor) -> bool:
    """Whether autodiff tracks `t` (it requires grad or came from one that does)."""
    prim = t._prim
    return prim.__class__ is Tracked and prim.node is not None


def _untrace_optimizers(optimizers: list[Any]) -> None:
    for optim in optimizers:
        for state in optim._states.values():
            for k, v in state.items():
                if traced.is_traced(v):
                    state[k] = traced.plain(v)


__all__ = ["CompileWarning", "CompiledFunction"]
