"""Deformable convolution (DCN v1, and v2 with a mask) as a composite of primitives.

`Backend` inherits `deform_conv2d` from here, as it inherits the other module ops from
`module_ops.py`: the composite is written with front-end tensors on the backend itself, so
Autodiff differentiates it (input, offset, mask, weight and bias) and WebGPU and Fusion run it
unchanged. It reads nothing back to the host: index bounds are guaranteed by clamping, so it
calls the `select` primitive directly rather than the checked front-end `Tensor.select`.

How it computes, for offset group g, kernel tap t = i*kw + j and output pixel (oy, ox):

1. the sampling point is the convolution's regular grid plus the learned offset,
   y = oy*stride - pad_top + i*dilation + dy, x likewise with dx (torchvision's layout:
   offset channel (g*K + t)*2 is dy, the next one dx);
2. bilinear sampling gathers the four neighbours (floor(y) + {0, 1}, floor(x) + {0, 1}) as rows
   of the input laid out (N*G*H*W, C/G), with one `select` of all four index sets; a neighbour
   outside the input contributes zero, as in torchvision (so a point at y <= -1 or y >= H reads
   zero), and the mask (DCN v2) scales the four weights;
3. the sampled columns (N, C*K, OH*OW) meet the weight in one batched matmul per weight group,
   as `conv2d`'s im2col does.

Arguments arrive validated by `pyrite.nn.functional.deform_conv2d`: padding is one
(before, after) pair per spatial dim, the offset and mask have the output's spatial size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..dtype import Kind

if TYPE_CHECKING:
    from ..data import TensorData
    from ..dtype import DType
    from ..tensor import Tensor

Prim = Any
Pair = tuple[int, ...]  # one entry per spatial dim
Pads = tuple[tuple[int, int], ...]  # (before, after) per spatial dim


class DeformOps:
    """Mixin of `Backend`: the default composition of `deform_conv2d`."""

    if TYPE_CHECKING:  # primitives of `Backend` (abstract there) that the composite calls
        int_dtype: DType

        def from_data(self, data: TensorData) -> Prim: ...

        def arange(self, start: int, stop: int, step: int, dtype: DType) -> Prim: ...

        def select(self, x: Prim, dim: int, index: Prim) -> Prim: ...

    def deform_conv2d(self, x: Prim, offset: Prim, weight: Prim, mask: Prim | None,
                      bias: Prim | None, stride: Pair, padding: Pads, dilation: Pair,
                      weight_groups: int, offset_groups: int) -> Prim:
        """(N, C_in, H, W) sampled at (N, 2*G*kh*kw, OH, OW) offsets, optionally scaled by the
        (N, G*kh*kw, OH, OW) mask, times weight (C_out, C_in/weight_groups, kh, kw) ->
        (N, C_out, OH, OW)."""
        xt, ot, wt = _wrap(self, x), _wrap(self, offset), _wrap(self, weight)
        n, c_in, h, w = xt.shape
        c_out, cwg, kh, kw = wt.shape
        oh, ow = ot.shape[2:]
        g, k = offset_groups, kh * kw
        cg, pixels = c_in // g, oh * ow

        # 1. sampling points (N, G, K, OH, OW): the regular grid plus the offsets
        off = ot.reshape([n, g, k, 2, oh, ow])
        rows = _grid(self, xt, kh, kw, oh, stride[0], padding[0][0], dilation[0], taps_dim=0)
        cols = _grid(self, xt, kh, kw, ow, stride[1], padding[1][0], dilation[1], taps_dim=1)
        # clamped to [-1, size]: beyond that every neighbour is outside (the value and its
        # gradient are zero either way), and the int indices below stay small
        y = (off.narrow(3, 0, 1).squeeze(3) + rows.reshape([1, 1, k, oh, 1])).clamp(-1.0, float(h))
        x_ = (off.narrow(3, 1, 1).squeeze(3) + cols.reshape([1, 1, k, 1, ow])).clamp(-1.0, float(w))

        # 2. bilinear weights of the four neighbours, zero for those outside the input
        (y_lo, y_hi), (wy_lo, wy_hi) = _axis(y, h)
        (x_lo, x_hi), (wx_lo, wx_hi) = _axis(x_, w)
        coef = [wy * wx for wy in (wy_lo, wy_hi) for wx in (wx_lo, wx_hi)]
        if mask is not None:
            m = _wrap(self, mask).reshape([n, g, k, oh, ow])
            coef = [c * m for c in coef]
        # row of (n, g, pixel) in the (N*G*H*W, C/G) layout of the input
        base = _wrap(self, self.arange(0, n * g * h * w, h * w, self.int_dtype), Kind.INT)
        base = base.reshape([n, g, 1, 1, 1])
        index = [base + yy * w + xx for yy in (y_lo, y_hi) for xx in (x_lo, x_hi)]
        flat = _stack(index).reshape([4 * n * g * k * pixels])
        table = xt.reshape([n, g, cg, h * w]).swap_dims(2, 3).reshape([n * g * h * w, cg])
        picked = _wrap(self, self.select(table.into_primitive(), 0, flat.into_primitive()))
        picked = picked.reshape([4, n, g, k, pixels, cg])
        sampled = (picked * _stack(coef).reshape([4, n, g, k, pixels, 1])).sum_dim(0)

        # 3. columns (N, weight groups, C_in/wg * K, OH*OW), channel-major as conv2d's im2col
        columns = sampled.reshape([n, g, k, pixels, cg]).permute([0, 1, 4, 2, 3])
        columns = columns.reshape([n, weight_groups, cwg * k, pixels])
        kernel = wt.reshape([1, weight_groups, c_out // weight_groups, cwg * k])
        out = (kernel @ columns).reshape([n, c_out, oh, ow])
        if bias is not None:
            out = out + _wrap(self, bias).reshape([1, c_out, 1, 1])
        return out.into_primitive()


def _wrap(backend: Any, prim: Prim, kind: Kind = Kind.FLOAT) -> Tensor:
    from ..tensor import Tensor
    return Tensor._wrap(prim, backend, kind)


def _stack(parts: list[Tensor]) -> Tensor:
    from ..tensor import Tensor
    return Tensor.cat([p.unsqueeze_dim(0) for p in parts], 0)


def _grid(backend: Any, like: Tensor, kh: int, kw: int, out: int, stride: int, pad: int,
          dilation: int, taps_dim: int) -> Tensor:
    """(kh*kw, out) positions `o*stride - pad + tap*dilation` of one axis on the regular grid:
    the tap is i (rows, taps_dim 0) or j (columns, taps_dim 1) of tap t = i*kw + j. A constant,
    uploaded once in the input's float dtype."""
    from ..data import TensorData
    values = [float(o * stride - pad + (t // kw if taps_dim == 0 else t % kw) * dilation)
              for t in range(kh * kw) for o in range(out)]
    data = TensorData(values, shape=(kh * kw, out), dtype=like.dtype)
    return _wrap(backend, backend.from_data(data))


def _axis(pos: Tensor, size: int) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
    """Along one axis of `size` samples: the int indices of the two neighbours of `pos`
    (clamped into range, to be used only where their weight is non-zero) and their bilinear
    weights, zero for a neighbour outside [0, size)."""
    lo = pos.floor()  # floor has a zero gradient: d(frac)/d(pos) = 1
    frac = pos - lo
    inside_lo = lo.greater_equal(0.0).bool_and(lo.lower_equal(size - 1.0)).cast(pos.dtype)
    inside_hi = lo.lower_equal(size - 2.0).cast(pos.dtype)  # lo + 1 >= 0 as lo >= -1
    index_lo = lo.clamp(0.0, size - 1.0).int()
    index_hi = (lo + 1.0).clamp(0.0, size - 1.0).int()
    return (index_lo, index_hi), ((1.0 - frac) * inside_lo, frac * inside_hi)
