"""Index bounds checked on the device, reported at the next readback.

`gather`, `scatter`, `select` and `select_assign` must refuse an index out of range with the
same message on every backend. Reading the indices' smallest and largest value back to check
them costs a device round trip in the middle of a step (and makes the step impossible to
capture, see `pyrite.compile`). So on a device that says it `defers_checks` (webgpu), the front
end computes `[min, max]` of the indices on the device and leaves it here; the next readback of
any tensor (`to_data`, `into_scalar`, `to_device`) reads all pending pairs at once and raises the
first violation's `DimError` before returning anything. Until then the kernels read clamped
indices (WebGPU clamps out-of-range loads), so nothing outside the tensor is touched. numpy
checks at once, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import DimError

if TYPE_CHECKING:
    from .tensor import Tensor

#: pending checks: ([min, max] int tensor, op, size, dim)
PENDING: list[tuple[Tensor, str, int, int]] = []


def defers(backend: Any) -> bool:
    """Whether a backend (or the one it decorates) checks indices on the device."""
    while backend is not None:
        if getattr(type(backend), "defers_checks", False):
            return True
        backend = getattr(backend, "inner", None)
    return False


def message(op: str, lo: int, hi: int, size: int, dim: int) -> str | None:
    if lo < 0 or hi >= size:
        return (f"{op}: index {lo if lo < 0 else hi} is out of range for dim {dim} "
                f"of size {size}")
    return None


def resolve() -> None:
    """Read every pending check (one readback per device) and raise the first violation."""
    if not PENDING:
        return
    pending = list(PENDING)
    PENDING.clear()
    from .tensor import Tensor
    groups: dict[int, list[tuple[Tensor, str, int, int]]] = {}
    for entry in pending:
        groups.setdefault(id(entry[0]._backend), []).append(entry)
    for entries in groups.values():
        both = Tensor.cat([e[0] for e in entries], 0) if len(entries) > 1 else entries[0][0]
        values = both._backend.to_data(both._prim).values()
        for i, (_, op, size, dim) in enumerate(entries):
            text = message(op, int(values[2 * i]), int(values[2 * i + 1]), size, dim)
            if text is not None:
                raise DimError(text)


__all__ = ["PENDING", "defers", "message", "resolve"]
