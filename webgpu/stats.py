"""`pyrite.webgpu.stats()`: what a webgpu device has done, in one dictionary.

Counters come from three places, each owning its own: the runtime's command batch
(dispatches, submits, readbacks and the time spent waiting for them; and the copy
kernels among the dispatches), the buffer pool (bytes
allocated, reused, peak) and, when the device is fused, `Fusion` (ops recorded, flushes, fused
kernels and the ops inside them, plan and pipeline cache hits, outputs written in place, bytes
the generated kernels moved). All are totals since the device was built.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..backend.base import Backend, layers
from ..device import device as resolve
from ..errors import BackendUnavailable


def stats(device: str | Backend | None = None) -> dict[str, Any]:
    """Counters of a webgpu device (default "webgpu"), including its decorators'.

    >>> import pyrite, pyrite.webgpu
    >>> sorted(pyrite.webgpu.stats("webgpu"))  # doctest: +SKIP
    ['device', 'fusion', 'memory', 'runtime']
    """
    from .backend import WebGpu
    from .fusion import Fusion

    backend = resolve(device if device is not None else "webgpu")
    stack = layers(backend)
    raw = next((b for b in stack if isinstance(b, WebGpu)), None)
    if raw is None:
        raise BackendUnavailable(f"stats: {backend.name} is not a webgpu device; pass "
                                 f"'webgpu' or a stack over it")
    out: dict[str, Any] = {"device": backend.name}
    runtime = raw.kernels.runtime
    batch = getattr(runtime, "inner", runtime)
    out["runtime"] = dict(getattr(batch, "stats", {}))
    out["runtime"]["copies"] = raw.kernels.copies  # strided views made dense by a copy kernel
    out["memory"] = asdict(raw.memory_stats())
    fused = next((b for b in stack if isinstance(b, Fusion)), None)
    out["fusion"] = fused.stats.as_dict() if fused is not None else None
    from .custom import LAUNCHES
    out["custom_kernels"] = dict(LAUNCHES)
    from ..capture.counters import STATS
    out["compile"] = STATS.as_dict()
    return out
