"""Interpolation (resizing) in 1-D and 2-D."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import ShapeError
from ...tensor import Tensor
from ._check import (
    IntOrSeq,
    _rank,
    _tensor,
    tuple_of,
)


def _resize(op: str, x: Tensor, dims: int, output_size: IntOrSeq | None,
            scale_factor: float | Sequence[float] | None) -> tuple[int, ...]:
    _tensor(op, "input", x)
    _rank(op, "input", x, dims + 2, "NCHW" if dims == 2 else "NCL")
    if (output_size is None) == (scale_factor is None):
        raise ShapeError(f"{op}: give exactly one of output_size and scale_factor")
    if output_size is not None:
        return tuple_of(op, "output_size", output_size, dims)
    scales = (float(scale_factor),) * dims if isinstance(scale_factor, (int, float)) \
        else tuple(scale_factor or ())
    if len(scales) != dims or any(f <= 0 for f in scales):
        raise ShapeError(f"{op}: scale_factor must be a positive number or {dims} of them, "
                         f"got {scale_factor!r}")
    # floor(size * scale), as PyTorch and Burn compute it
    size = tuple(int(n * f) for n, f in zip(x.shape[2:], scales, strict=True))
    if any(v < 1 for v in size):
        raise ShapeError(f"{op}: scale_factor {scale_factor} gives an empty output {size}")
    return size


def interpolate2d(x: Tensor, output_size: IntOrSeq | None = None, *,
                  scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                  align_corners: bool = True) -> Tensor:
    """Resize H and W. Shapes: (N, C, H, W) -> (N, C, OH, OW).

    mode "nearest" takes src = floor(dst * in / out); "bilinear" blends the two nearest rows and
    columns, with the corner samples aligned when `align_corners` (Burn's default) or half-pixel
    centres otherwise (PyTorch's default).
    """
    op = "interpolate2d"
    size = _resize(op, x, 2, output_size, scale_factor)
    if mode not in ("nearest", "bilinear"):
        raise ShapeError(f"{op}: mode must be 'nearest' or 'bilinear', got {mode!r}")
    return x._new(x.device.interpolate2d(x.into_primitive(), size, mode, bool(align_corners)))


def interpolate1d(x: Tensor, output_size: int | None = None, *,
                  scale_factor: float | None = None, mode: str = "nearest",
                  align_corners: bool = True) -> Tensor:
    """Resize L. Shapes: (N, C, L) -> (N, C, OL); modes "nearest" and "linear"."""
    op = "interpolate1d"
    (size,) = _resize(op, x, 1, output_size, scale_factor)
    if mode not in ("nearest", "linear"):
        raise ShapeError(f"{op}: mode must be 'nearest' or 'linear', got {mode!r}")
    return x._new(x.device.interpolate1d(x.into_primitive(), size, mode, bool(align_corners)))
