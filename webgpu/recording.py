"""Recording what a webgpu device does: the one recorder under `pyrite.compile`'s captures
(`capture.py`) and the conv ops' launch plans (`conv_plan.py`).

A `Recorder` set as `Kernels.recorder` (with `allocated` as the pool's `watch`) is told, in
order, of every dispatch (pipeline, the buffers bound, workgroup counts, its estimated cost),
every upload, every readback, every block the pool hands out (with the number of commands
before it, so a reader can interleave allocations and commands) and the contents of every
constant buffer bound;
`meta` gives metadata words holding a traced host number (`pyrite.capture.traced`) a buffer of
their own. What cannot be replayed (a readback, kernels timed by autotune meanwhile) is noted
as a `Refusal`. Readers turn the record into what they replay: capture's `Program` (a whole
step), conv_plan's `Plan` (one conv call).
"""

from __future__ import annotations

import struct
import sys
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from ..capture import traced
from .kernels import Kernels


class Refusal(Exception):
    """Why a step cannot be captured; `retry`: capturing again on a later call may work."""

    def __init__(self, reason: str, *, retry: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


def user_line() -> str:
    """'op at file:line': the innermost frame outside pyrite's own code (a model in
    `pyrite.demos` counts as the user's) and the pyrite call it made there."""
    frame = sys._getframe(1)
    op = tensor_op = "?"
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        inside = (name == "pyrite" or name.startswith("pyrite.")) and not name.startswith(
            "pyrite.demos")
        if not inside:
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            return f"{tensor_op} at {where}" if tensor_op == op else \
                f"{tensor_op} in {op} at {where}"
        op = frame.f_code.co_name
        if name in _FRONT_END:
            tensor_op = op  # the outermost tensor method: what the user or a module called
        elif tensor_op == "?":
            tensor_op = op
        frame = frame.f_back  # type: ignore[assignment]
    return op


_FRONT_END = frozenset({"pyrite.tensor", "pyrite.ops_basic", "pyrite.ops_numeric",
                        "pyrite.ops_kind"})


# ---- recording ---------------------------------------------------------------------------------
class Recorder:
    """Sits on `Kernels` (and its pool) while a step is captured or a conv call is planned."""

    def __init__(self, kernels: Kernels) -> None:
        self.kernels = kernels
        self.commands: list[tuple[Any, ...]] = []
        # (the block, its buffer, its size, the number of commands recorded before it)
        self.allocs: list[tuple[weakref.ref[Any], Any, int, int]] = []
        self.dynamic: dict[int, tuple[Any, list[Any]]] = {}  # id(buffer) -> (buffer, words)
        self.refusal: Refusal | None = None
        self.constants: dict[int, bytes] = {}  # id(buffer) -> contents of metadata bound

    def refuse(self, reason: str, *, retry: bool = False) -> None:
        if self.refusal is None:
            self.refusal = Refusal(reason, retry=retry)

    def dispatch(self, pipeline: Any, bindings: Any, workgroups: tuple[int, int, int],
                 cost: float = 0.0) -> None:
        tuner = self.kernels.__dict__.get("autotune")
        if tuner is not None and tuner.tuning:
            self.refuse("kernels were being tuned during the capture", retry=True)
            return
        pairs = tuple(bindings.items() if isinstance(bindings, Mapping) else enumerate(bindings))
        # cost: the kernel's estimated FLOPs, which the submit policy reads (batch.POLICY)
        self.commands.append(("d", pipeline, pairs, tuple(workgroups), cost))

    def write(self, buffer: Any, offset: int, data: bytes) -> None:
        self.commands.append(("w", buffer, offset, bytes(data)))

    def readback(self) -> None:
        self.refuse(f"it reads a tensor back in the middle ({user_line()})")

    def allocated(self, block: Any) -> None:
        self.allocs.append((weakref.ref(block), block.buffer, block.size, len(self.commands)))

    def meta(self, words: Sequence[Any]) -> Any | None:
        """A fresh metadata buffer when `words` hold a traced number (None: none does)."""
        if not any(isinstance(w, traced.Traced) for w in words):
            return None
        data = struct.pack(f"<{len(words)}i", *(traced.plain(w) for w in words))
        runtime = self.kernels.runtime
        buffer = runtime.create_buffer(len(data))  # writable: each replay rewrites it
        runtime.write_buffer(buffer, 0, data)
        self.dynamic[id(buffer)] = (buffer, list(words))
        return buffer


__all__ = ["Recorder", "Refusal", "user_line"]
