"""What `Fusion` records for a conv, worked out once per layer description.

An eager step records the same convs with the same parameters and shapes on every call, and a
flush's plan is looked up by the recorded ops' names. A conv's op (`ConvOp`, whose name keys
plans) and its output shape depend only on the parameters and the two shapes, so they are
memoised here by those (a layer's call then costs one dict lookup instead of building the op,
formatting its name and computing the output size).
"""

from __future__ import annotations

from typing import Any

from ..backend.module_ops import conv_out_size
from .fusion_plan import ConvOp

MAX_CONV_RECORDS = 256  # descriptions kept (a model has a few dozen conv layers)
_CONV_RECORDS: dict[tuple[Any, ...], tuple[ConvOp, tuple[int, int, int, int]]] = {}


def conv_record(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Any, padding: Any,
                dilation: Any, groups: int, bias: bool) -> tuple[ConvOp, tuple[int, int, int, int]]:
    """The `ConvOp` of a conv2d call and its output's shape (N, C_out, OH, OW)."""
    key: tuple[Any, ...] = (x_shape, w_shape, stride, padding, dilation, groups, bias)
    try:
        found = _CONV_RECORDS.get(key)
    except TypeError:  # lists among the parameters: not a key
        key, found = (), None
    if found is not None:
        return found
    n, _, h, w = x_shape
    c_out, _, kh, kw = w_shape
    padded = (h + sum(padding[0]), w + sum(padding[1]))
    oh, ow = conv_out_size(padded, (kh, kw), tuple(stride), tuple(dilation))
    op = ConvOp(tuple(stride), tuple(tuple(p) for p in padding),  # type: ignore[arg-type]
                tuple(dilation), groups, bias)
    found = op, (n, c_out, oh, ow)
    if key and len(_CONV_RECORDS) < MAX_CONV_RECORDS:
        _CONV_RECORDS[key] = found
    return found


__all__ = ["MAX_CONV_RECORDS", "conv_record"]
