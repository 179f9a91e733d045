"""Every ONNX operator pyrite runs, by its ONNX name: `functional.Slice(x, [0], [4])`.

The code `pyrite import-onnx` generates calls these for the nodes that have no nn layer or
tensor method of their own (`from pyrite.interop.onnx import functional as O`). Host inputs
(shapes, axes, pads) may be plain lists there. Nothing here needs the `onnx` package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
