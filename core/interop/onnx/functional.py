"""Every ONNX operator pyrite runs, by its ONNX name: `functional.Slice(x, [0], [4])`.

The code `pyrite import-onnx` generates calls these for the nodes that have no nn layer or
tensor method of their own (`from pyrite.interop.onnx import functional as O`). Host inputs
(shapes, axes, pads) may be plain lists there. Nothing here needs the `onnx` package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...tensor import Tensor


def constant(values: Any, dtype: str, device: Any = None) -> Tensor:
    """A constant of a generated module, in `dtype` or the narrower type the device stores it
    as (webgpu holds int64 as int32)."""
    from ...creation import tensor
    from ...device import device as resolve
    from ...dtype import dtype as to_dtype
    from .runtime import storable

    dev = resolve(device)
    return tensor(values, dtype=storable(to_dtype(dtype), dev), device=dev)


def zeros(shape: list[int], dtype: str, device: Any = None) -> Tensor:
    """Zeros for a param a record fills, in a type the device has."""
    from ...creation import zeros as make
    from ...device import device as resolve
    from ...dtype import dtype as to_dtype
    from .runtime import storable

    dev = resolve(device)
    return make(shape, dtype=storable(to_dtype(dtype), dev), device=dev)


def __getattr__(name: str) -> Callable[..., Any]:
    from .registry import OPS, spec

    try:
        return spec(name).fn
    except KeyError:
        raise AttributeError(f"no ONNX operator {name!r} in pyrite; supported: "
                             f"{', '.join(sorted(OPS))}") from None


def __dir__() -> list[str]:
    from .registry import supported

    return supported()
