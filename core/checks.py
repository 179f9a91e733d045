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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tensor import Tensor

#: the error of an index out of range, given that index
Error = Callable[[int], Exception]
#: pending checks: ([min, max] int tensor, size, error)
PENDING: list[tuple[Tensor, int, Error]] = []


def defers(backend: Any) -> bool:
    """Whether a backend (or the one it decorates) checks indices on the device."""
    from .backend.base import layers  # the tensor front end imports this module
    return any(getattr(type(b), "defers_checks", False) for b in layers(backend))


def in_range(indices: Tensor, size: int, error: Error) -> None:
    """Raise `error(index)` for an index of `indices` outside [0, size): now, or at the next
    readback on a device that defers checks."""
    if indices.numel() == 0:
        return
    flat = indices.reshape((-1,))
    if defers(indices._backend):
        PENDING.append((type(indices).cat([flat.min(), flat.max()], 0), size, error))
        return
    _raise(int(flat.min().into_scalar()), int(flat.max().into_scalar()), size, error)


def _raise(lo: int, hi: int, size: int, error: Error) -> None:
    if lo < 0 or hi >= size:
        raise error(lo if lo < 0 else hi)


def resolve() -> None:
    """Read every pending check (one readback per device) and raise the first violation."""
    if not PENDING:
        return
    pending = list(PENDING)
    PENDING.clear()
    from .tensor import Tensor
    groups: dict[int, list[tuple[Tensor, int, Error]]] = {}
    for entry in pending:
        groups.setdefault(id(entry[0]._backend), []).append(entry)
    for entries in groups.values():
        both = Tensor.cat([e[0] for e in entries], 0) if len(entries) > 1 else entries[0][0]
        values = both._backend.to_data(both._prim).values()
        for i, (_, size, error) in enumerate(entries):
            _raise(int(values[2 * i]), int(values[2 * i + 1]), size, error)


__all__ = ["PENDING", "defers", "in_range", "resolve"]
