"""Convolutions, pooling, normalisation, Gemm/MatMul and Dropout."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ....nn import functional as F
from ....tensor import Tensor
from ..registry import op


def spatial_pads(pads: Sequence[int] | None, n: int) -> list[tuple[int, int]]:
    """ONNX pads [b1, b2, ..., e1, e2, ...] as one (before, after) pair per spatial dim."""
    if not pads:
        return [(0, 0)] * n
    return [(int(pads[i]), int(pads[i + n])) for i in range(n)]


def auto_pads(auto_pad: str, size: Sequence[int], kernel: Sequence[int],
              strides: Sequence[int], dilations: Sequence[int],
              pads: Sequence[int] | None) -> list[tuple[int, int]]:
    """The padding an ONNX `auto_pad` setting asks for, per spatial dim."""
    n = len(kernel)
    if auto_pad in ("NOTSET", ""):
        return spatial_pads(pads, n)
    if auto_pad == "VALID":
        return [(0, 0)] * n
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"auto_pad {auto_pad!r} is not one of NOTSET, SAME_UPPER, "
                         f"SAME_LOWER, VALID")
    out = []
    for s, k, st, d in zip(size, kernel, strides, dilations, strict=True):
        want = math.ceil(s / st)
        total = max(0, (want - 1) * st + (k - 1) * d + 1 - s)
        small, big = total // 2, total - total // 2
        out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return out


def _to_2d(x: Tensor) -> Tensor:
    return x.unsqueeze_dim(2)  # (N, C, L) -> (N, C, 1, L)


@op("Conv")
def conv(x: Tensor, w: Tensor, b: Tensor | None = None, *, auto_pad: str = "NOTSET",
         dilations: Sequence[int] | None = None, group: int = 1,
         kernel_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None,
         strides: Sequence[int] | None = None) -> Tensor:
    """N-d convolution (1-d and 2-d), ONNX layout: x (N, C, *), w (M, C/group, *k)."""
    n = w.ndim - 2
    kernel = list(kernel_shape or w.shape[2:])
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    pairs = auto_pads(auto_pad, x.shape[2:], kernel, st, dl, pads)
    if n == 1:
        y = F.conv2d(_to_2d(x), _to_2d(w), b, stride=(1, st[0]), dilation=(1, dl[0]),
                     padding=((0, 0), pairs[0]), groups=group)
        return y.squeeze_dims([2])
    if n == 2:
        return F.conv2d(x, w, b, stride=st, dilation=dl, padding=tuple(pairs), groups=group)
    raise ValueError(f"Conv with {n} spatial dims is not supported (1-d and 2-d are)")


def _pool_args(x: Tensor, kernel_shape: Sequence[int], strides: Sequence[int] | None,
               pads: Sequence[int] | None, auto_pad: str, dilations: Sequence[int] | None
               ) -> tuple[list[int], list[int], list[tuple[int, int]], list[int]]:
    n = len(kernel_shape)
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    pairs = auto_pads(auto_pad, x.shape[2:], kernel_shape, st, dl, pads)
    return list(kernel_shape), st, pairs, dl


@op("MaxPool")
def max_pool(x: Tensor, *, kernel_shape: Sequence[int], strides: Sequence[int] | None = None,
             pads: Sequence[int] | None = None, auto_pad: str = "NOTSET", ceil_mode: int = 0,
             dilations: Sequence[int] | None = None, storage_order: int = 0) -> Tensor:
    """Max pooling over 1 or 2 spatial dims (the Indices output is not produced)."""
    k, st, pairs, dl = _pool_args(x, kernel_shape, strides, pads, auto_pad, dilations)
    if storage_order:
        raise ValueError("MaxPool storage_order=1 (column-major indices) is not supported")
    if len(k) == 1:
        y = F.max_pool2d(_to_2d(x), (1, k[0]), stride=(1, st[0]), padding=((0, 0), pairs[0]),
                         dilation=(1, dl[0]), ceil_mode=bool(ceil_mode))
        return y.squeeze_dims([2])
    if len(k) == 2:
        return F.max_pool2d(x, k, stride=st, padding=tuple(pairs), dilation=dl,
                            ceil_mode=bool(ceil_mode))
    raise ValueError(f"MaxPool over {len(k)} spatial dims is not supported (1-d and 2-d are)")


@op("AveragePool")
def average_pool(x: Tensor, *, kernel_shape: Sequence[int],
                 strides: Sequence[int] | None = None, pads: Sequence[int] | None = None,
                 auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
                 dilations: Sequence[int] | None = None) -> Tensor:
    """Average pooling over 1 or 2 spatial dims."""
    k, st, pairs, dl = _pool_args(x, kernel_shape, strides, pads, auto_pad, dilations)
    if any(d != 1 for d in dl):
        raise ValueError("AveragePool with dilations is not supported")
    if len(k) == 1:
        y = F.avg_pool2d(_to_2d(x), (1, k[0]), stride=(1, st[0]), padding=((0, 0), pairs[0]),
                         count_include_pad=bool(count_include_pad), ceil_mode=bool(ceil_mode))
        return y.squeeze_dims([2])
    if len(k) == 2:
        return F.avg_pool2d(x, k, stride=st, padding=tuple(pairs),
                            count_include_pad=bool(count_include_pad),
                            ceil_mode=bool(ceil_mode))
    raise ValueError(f"AveragePool over {len(k)} spatial dims is not supported")


@op("GlobalAveragePool")
def global_average_pool(x: Tensor) -> Tensor:
    """Mean over every spatial dim, kept as size 1."""
    for d in range(2, x.ndim):
        x = x.mean_dim(d)
    return x


@op("GlobalMaxPool")
def global_max_pool(x: Tensor) -> Tensor:
    """Max over every spatial dim, kept as size 1."""
    for d in range(2, x.ndim):
        x = x.max_dim(d)
    return x
