"""Conv and ConvTranspose over any number of spatial dims, and ONNX's padding rules
(`pads`, `auto_pad`) that the pools and the code generator use too."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ....errors import OnnxError
from ....nn import functional as F
from ....tensor import Tensor
from ..registry import op
from ._util import pad_dim, to_2d


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
        raise OnnxError(f"auto_pad {auto_pad!r} is not one of NOTSET, SAME_UPPER, "
                         f"SAME_LOWER, VALID")
    out = []
    for s, k, st, d in zip(size, kernel, strides, dilations, strict=True):
        want = math.ceil(s / st)
        total = max(0, (want - 1) * st + (k - 1) * d + 1 - s)
        small, big = total // 2, total - total // 2
        out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return out


def _conv(x: Tensor, w: Tensor, st: list[int], dl: list[int], pairs: list[tuple[int, int]],
          group: int) -> Tensor:
    """Convolution without bias over any number of spatial dims (3-d and up as sums of 2-d)."""
    n = w.ndim - 2
    if n == 1:
        y = F.conv2d(to_2d(x), to_2d(w), None, stride=(1, st[0]), dilation=(1, dl[0]),
                     padding=((0, 0), pairs[0]), groups=group)
        return y.squeeze_dims([2])
    if n == 2:
        return F.conv2d(x, w, None, stride=st, dilation=dl, padding=tuple(pairs), groups=group)
    x = pad_dim(x, 2, *pairs[0])
    batch, k = x.shape[0], w.shape[2]
    out = (x.shape[2] - dl[0] * (k - 1) - 1) // st[0] + 1
    total: Tensor | None = None
    for j in range(k):
        start = j * dl[0]
        planes = x.slice([None, None, slice(start, start + (out - 1) * st[0] + 1, st[0])])
        planes = planes.movedim(2, 1).reshape((batch * out,) + x.shape[1:2] + x.shape[3:])
        y = _conv(planes, w.narrow(2, j, 1).squeeze_dims([2]), st[1:], dl[1:], pairs[1:],
                  group)
        total = y if total is None else total + y
    assert total is not None
    return total.reshape((batch, out) + total.shape[1:]).movedim(1, 2)


def _bias(y: Tensor, b: Tensor | None) -> Tensor:
    """y plus a per-channel bias (dim 1)."""
    if b is None:
        return y
    return y + b.cast(y.dtype).reshape([-1] + [1] * (y.ndim - 2))


def _check_kernel(kernel_shape: Sequence[int] | None, w: Tensor) -> None:
    """The attribute, when given, must say what the weight's shape says (ONNX infers it from
    the weight; a file where they disagree is corrupt or hand-edited)."""
    if kernel_shape is not None and list(kernel_shape) != list(w.shape[2:]):
        raise OnnxError(f"kernel_shape {list(kernel_shape)} disagrees with the weight's "
                        f"spatial shape {list(w.shape[2:])} (weight {list(w.shape)}); the "
                        f"file is corrupt")


@op("Conv")
def conv(x: Tensor, w: Tensor, b: Tensor | None = None, *, auto_pad: str = "NOTSET",
         dilations: Sequence[int] | None = None, group: int = 1,
         kernel_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None,
         strides: Sequence[int] | None = None) -> Tensor:
    """N-d convolution, ONNX layout: x (N, C, *), w (M, C/group, *k)."""
    n = w.ndim - 2
    _check_kernel(kernel_shape, w)
    kernel = list(kernel_shape or w.shape[2:])
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    pairs = auto_pads(auto_pad, x.shape[2:], kernel, st, dl, pads)
    if n == 2:
        return F.conv2d(x, w, b, stride=st, dilation=dl, padding=tuple(pairs), groups=group)
    return _bias(_conv(x, w, st, dl, pairs, group), b)


def _conv_transpose(x: Tensor, w: Tensor, st: list[int], dl: list[int], group: int
                    ) -> Tensor:
    """Unpadded transposed convolution, no bias, any rank: (in-1)*stride + (k-1)*dil + 1."""
    n = w.ndim - 2
    if n == 1:
        y = F.conv_transpose2d(to_2d(x), to_2d(w), None, stride=(1, st[0]),
                               dilation=(1, dl[0]), groups=group)
        return y.squeeze_dims([2])
    if n == 2:
        return F.conv_transpose2d(x, w, None, stride=st, dilation=dl, groups=group)
    batch, depth, k = x.shape[0], x.shape[2], w.shape[2]
    planes = x.movedim(2, 1).reshape((batch * depth,) + x.shape[1:2] + x.shape[3:])
    size = (depth - 1) * st[0] + (k - 1) * dl[0] + 1
    total: Tensor | None = None
    for j in range(k):
        y = _conv_transpose(planes, w.narrow(2, j, 1).squeeze_dims([2]), st[1:], dl[1:],
                            group)
        y = y.reshape((batch, depth) + y.shape[1:])
        if st[0] > 1:  # spread the planes stride apart: zeros in between
            y = pad_dim(y.unsqueeze_dim(2), 2, 0, st[0] - 1)
            y = y.reshape((batch, depth * st[0]) + y.shape[3:]).narrow(1, 0, (depth - 1)
                                                                       * st[0] + 1)
        y = pad_dim(y, 1, j * dl[0], size - y.shape[1] - j * dl[0])
        total = y if total is None else total + y
    assert total is not None
    return total.movedim(1, 2)


@op("ConvTranspose")
def conv_transpose(x: Tensor, w: Tensor, b: Tensor | None = None, *, auto_pad: str = "NOTSET",
                   dilations: Sequence[int] | None = None, group: int = 1,
                   kernel_shape: Sequence[int] | None = None,
                   output_padding: Sequence[int] | None = None,
                   output_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None,
                   strides: Sequence[int] | None = None) -> Tensor:
    """N-d transposed convolution, ONNX layout: w (C, M/group, *k)."""
    n = w.ndim - 2
    _check_kernel(kernel_shape, w)
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    extra = list(output_padding or [0] * n)
    y = _conv_transpose(x, w, st, dl, group)
    full_size = list(y.shape[2:])
    if output_shape or (auto_pad in ("SAME_UPPER", "SAME_LOWER") and not pads):
        want = list(output_shape or [s * t for s, t in zip(x.shape[2:], st, strict=True)])
        want = want[-n:]
        pairs = []
        for f, e, o in zip(full_size, extra, want, strict=True):
            total = f + e - o
            small, big = total // 2, total - total // 2
            pairs.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    else:
        pairs = [(0, 0)] * n if auto_pad == "VALID" else spatial_pads(pads, n)
    for i, ((lo, hi), e) in enumerate(zip(pairs, extra, strict=True)):
        y = pad_dim(y, 2 + i, -lo, e - hi)
    return _bias(y, b)


__all__ = ["auto_pads", "conv", "conv_transpose", "spatial_pads"]
