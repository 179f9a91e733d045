"""A record's values onto the devices of the params they replace, all of a device's at once.

`Module.load_record` has checked the record against the model (names, shapes, kinds); this
turns each param's TensorData into a tensor of the param's dtype on the param's device with one
`Backend.from_data_many` call per device, so a backend can upload them together (webgpu: one
write and one submit for the whole record instead of one of each per tensor, as a page's model
load did). Each param's current value is passed as the primitive it replaces: one that
`init_from_record` built (`uninitialized`, values undefined) is written in place where the
backend can, so a model built for a record allocates nothing that is thrown away.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..backend.base import Backend
from ..data import TensorData
from ..tensor import Tensor
from .param import Param


def record_values(items: Sequence[tuple[Param, TensorData]]) -> list[Tensor]:
    """The new value of each `(param, data)`: `data` as the param's dtype on its device."""
    groups: dict[int, tuple[Backend, list[int]]] = {}
    for i, (param, _) in enumerate(items):
        groups.setdefault(id(param.device), (param.device, []))[1].append(i)
    out: list[Tensor | None] = [None] * len(items)
    for backend, indices in groups.values():
        prims = backend.from_data_many([(items[i][1], items[i][0].dtype,
                                         items[i][0].val.into_primitive()) for i in indices])
        for i, prim in zip(indices, prims, strict=True):
            out[i] = Tensor._wrap(prim, backend, items[i][0].dtype.kind)
    return [t for t in out if t is not None]


__all__ = ["record_values"]
