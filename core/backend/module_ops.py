"""Module ops (convolution, pooling, interpolation, embedding) as composites of primitives.

`Backend` inherits these; a backend may override one with a faster kernel (and then Autodiff
needs a rule for it in `autodiff_module.py`). The composites are written with front-end tensors
on the backend itself, so every op they use is one of this backend's primitives: Autodiff
differentiates them through their composition, and Fusion can fuse them.

Layouts are NCHW (NCL in 1-D). Arguments arrive validated and resolved by `pyrite.nn.functional`:
stride, dilation and kernel sizes are tuples with one entry per spatial dim, padding is one
`(before, after)` pair per spatial dim (asymmetric "same" padding needs both), `bias` may be None.

| op                       | composite                                                        |
|--------------------------|------------------------------------------------------------------|
| conv2d                   | im2col (one strided slice per kernel tap) + one batched matmul   |
| conv2d_relu              | relu(conv2d(...)); numpy applies bias and ReLU per sample in place |
| conv2d_input_grad        | conv_transpose of the output gradient                            |
| conv2d_weight_grad       | im2col(x) @ grad^T, summed over the batch                        |
| adaptive_avg_pool2d_grad | the gradient spread over each window (the resampling matrix^T)   |
| conv_transpose2d         | zero-interleaved input, conv2d with the flipped, transposed kernel |
| conv3d                   | the depth taps as extra channels of one conv2d over all depths   |
| conv_transpose3d         | zero-interleaved input, conv3d with the flipped, transposed kernel |
| max/avg pool             | the same patches, reduced (max / sum over the tap dim)           |
| adaptive avg pool, interpolate | `A_h @ x @ A_w^T` with small resampling matrices           |
| embedding                | select rows                                                      |

1-D ops are the 2-D ones on a height of 1; 3-D ops (NCDHW) reach conv2d, so a backend that
accelerates conv2d (and Autodiff's conv2d rule) serves them too.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..dtype import Kind

if TYPE_CHECKING:
    from ..dtype import DType
    from ..tensor import Tensor

Prim = Any
Pair = tuple[int, ...]  # one entry per spatial dim
Pads = tuple[tuple[int, int], ...]  # (before, after) per spatial dim


class ModuleOps:
    """Mixin of `Backend`: default compositions of the module ops."""

    if TYPE_CHECKING:  # primitives of `Backend` (abstract there) that the composites call
        def full(self, shape: tuple[int, ...], value: float | int | bool,
                 dtype: DType) -> Prim: ...

        def dtype(self, x: Prim) -> DType: ...

        def unary(self, op: Any, x: Prim) -> Prim: ...

    # ---- helpers -----------------------------------------------------------------------------
    def _ft(self, prim: Prim, kind: Kind = Kind.FLOAT) -> Tensor:
        from ..tensor import Tensor
        return Tensor._wrap(prim, self, kind)  # type: ignore[arg-type]

    def _patches(self, x: Tensor, kernel: Pair, stride: Pair, dilation: Pair,
                 out: Pair) -> Tensor:
        """(N, C, kh*kw, OH, OW): for each kernel tap, the input pixels it meets (x is padded)."""
        taps = []
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                r0, c0 = i * dilation[0], j * dilation[1]
                taps.append(x.slice([None, None,
                                     (r0, r0 + stride[0] * (out[0] - 1) + 1, stride[0]),
                                     (c0, c0 + stride[1] * (out[1] - 1) + 1, stride[1])]))
        return _stack(taps, 2)

    # ---- convolution -------------------------------------------------------------------------
    def conv2d(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair, padding: Pads,
               dilation: Pair, groups: int) -> Prim:
        """(N, C_in, H, W) * (C_out, C_in/groups, kh, kw) -> (N, C_out, OH, OW)."""
        xt, wt = self._ft(x), self._ft(weight)
        n, c_in = xt.shape[:2]
        c_out, cg, kh, kw = wt.shape
        xp = _pad2d(xt, padding)
        oh, ow = conv_out_size(xp.shape[2:], (kh, kw), stride, dilation)
        cols = self._patches(xp, (kh, kw), stride, dilation, (oh, ow))  # N, C, K, OH, OW
        cols = cols.reshape([n, groups, cg * kh * kw, oh * ow])
        w = wt.reshape([1, groups, c_out // groups, cg * kh * kw])
        out = (w @ cols).reshape([n, c_out, oh, ow])
        if bias is not None:
            out = out + self._ft(bias).reshape([1, c_out, 1, 1])
        return out.into_primitive()

    def conv2d_relu(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                    padding: Pads, dilation: Pair, groups: int) -> Prim:
        """relu(conv2d(...)): one op, so a backend may apply bias and ReLU on its product
        without another pass (numpy does); Autodiff differentiates this composition."""
        from .unary import RELU
        return self.unary(RELU, self.conv2d(x, weight, bias, stride, padding, dilation, groups))

    def conv2d_saving(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                      padding: Pads, dilation: Pair, groups: int) -> tuple[Prim, Any]:
        """conv2d, plus what this backend wants handed back to `conv2d_weight_grad` as `saved`
        (Autodiff keeps it with the graph): the composite keeps nothing, numpy its im2col."""
        return self.conv2d(x, weight, bias, stride, padding, dilation, groups), None

    def conv2d_input_grad(self, grad: Prim, weight: Prim, input_shape: tuple[int, ...],
                          stride: Pair, padding: Pads, dilation: Pair, groups: int) -> Prim:
        """d conv2d / d x: the output gradient scattered back through the kernel."""
        full = self._conv_transpose_full(self._ft(grad), self._ft(weight), stride, dilation,
                                         groups)
        # rows/cols the stride never reached (past the last window) get no gradient: zeros
        reach = [lo + s for (lo, _), s in zip(padding, input_shape[2:], strict=True)]
        short = [max(0, r - f) for r, f in zip(reach, full.shape[2:], strict=True)]
        if any(short):
            full = full.pad([0, short[1], 0, short[0]])
        return _crop(full, padding, input_shape[2:]).into_primitive()

    def conv2d_weight_grad(self, x: Prim, grad: Prim, weight_shape: tuple[int, ...],
                           stride: Pair, padding: Pads, dilation: Pair, groups: int,
                           saved: Any = None) -> Prim:
        """d conv2d / d weight: each tap's input pixels times the output gradient."""
        xt, gt = self._ft(x), self._ft(grad)
        c_out, cg, kh, kw = weight_shape
        n = xt.shape[0]
        oh, ow = gt.shape[2:]
        cols = self._patches(_pad2d(xt, padding), (kh, kw), stride, dilation, (oh, ow))
        cols = cols.reshape([n, groups, cg * kh * kw, oh * ow])
        g = gt.reshape([n, groups, c_out // groups, oh * ow])
        gw = (g @ cols.swap_dims(-1, -2)).sum_dim(0)  # 1, groups, C_out/g, K
        return gw.reshape([c_out, cg, kh, kw]).into_primitive()

    def _conv_transpose_full(self, x: Tensor, weight: Tensor, stride: Pair, dilation: Pair,
                             groups: int) -> Tensor:
        """Transposed conv without cropping: size (H-1)*s + d*(k-1) + 1 per spatial dim.

        `weight` is (C_in, C_out/groups, kh, kw): a conv2d weight read backwards."""
        n, c_in, h, w = x.shape
        _, cog, kh, kw = weight.shape
        if stride != (1, 1):  # interleave stride-1 zeros between input pixels
            x = x.reshape([n, c_in, h, 1, w, 1]).pad([0, stride[1] - 1, 0, 0,
                                                      0, stride[0] - 1])
            x = x.reshape([n, c_in, h * stride[0], w * stride[1]])
            x = x.slice([None, None, (0, (h - 1) * stride[0] + 1), (0, (w - 1) * stride[1] + 1)])
        ph, pw = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
        k = weight.reshape([groups, c_in // groups, cog, kh, kw]).swap_dims(1, 2)
        k = k.reshape([groups * cog, c_in // groups, kh, kw]).flip([2, 3])
        out = self.conv2d(x.into_primitive(), k.into_primitive(), None, (1, 1),
                          ((ph, ph), (pw, pw)), dilation, groups)
        return self._ft(out)

    def conv_transpose2d(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                         padding: Pair, output_padding: Pair, dilation: Pair,
                         groups: int) -> Prim:
        """(N, C_in, H, W) with weight (C_in, C_out/groups, kh, kw) -> (N, C_out, OH, OW),
        OH = (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1 (as PyTorch)."""
        xt, wt = self._ft(x), self._ft(weight)
        full = self._conv_transpose_full(xt, wt, stride, dilation, groups)
        size = tuple(f - 2 * p + op for f, p, op in
                     zip(full.shape[2:], padding, output_padding, strict=True))
        # output_padding may reach past the full result: that part gets no input, only zeros
        extra = [max(0, p + s - f) for f, p, s in zip(full.shape[2:], padding, size, strict=True)]
        if any(extra):
            full = full.pad([0, extra[1], 0, extra[0]])
        out = _crop(full, ((padding[0], 0), (padding[1], 0)), size)
        if bias is not None:
            out = out + self._ft(bias).reshape([1, -1, 1, 1])
        return out.into_primitive()

    def conv1d(self, x: Prim, weight: Prim, bias: Prim | None, stride: int,
               padding: tuple[int, int], dilation: int, groups: int) -> Prim:
        """(N, C_in, L) * (C_out, C_in/groups, k) -> (N, C_out, OL)."""
        out = self.conv2d(_to2d(self, x), _to2d(self, weight), bias, (1, stride),
                          ((0, 0), padding), (1, dilation), groups)
        return _from2d(self, out)

    def conv_transpose1d(self, x: Prim, weight: Prim, bias: Prim | None, stride: int,
                         padding: int, output_padding: int, dilation: int, groups: int) -> Prim:
        out = self.conv_transpose2d(_to2d(self, x), _to2d(self, weight), bias, (1, stride),
                                    (0, padding), (0, output_padding), (1, dilation), groups)
        return _from2d(self, out)

    def conv3d(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair, padding: Pads,
               dilation: Pair, groups: int) -> Prim:
        """(N, C_in, D, H, W) * (C_out, C_in/groups, kd, kh, kw) -> (N, C_out, OD, OH, OW)."""
        xt, wt = self._ft(x), self._ft(weight)
        n, c_in, _, h, w = xt.shape
        c_out, cg, kd, kh, kw = wt.shape
        xp = xt.pad([0, 0, 0, 0, *padding[0]])
        od = (xp.shape[2] - dilation[0] * (kd - 1) - 1) // stride[0] + 1
        taps = [xp.slice([None, None, (i * dilation[0], i * dilation[0] + stride[0] * (od - 1) + 1,
                                       stride[0])]) for i in range(kd)]
        # (N*OD, C_in*kd, H, W): channel c*kd + i is channel c at depth tap i, so each group's
        # channels stay contiguous and the weight (C_out, C_in/groups * kd, kh, kw) lines up
        cols = _stack(taps, 2).permute([0, 3, 1, 2, 4, 5]).reshape([n * od, c_in * kd, h, w])
        out = self._ft(self.conv2d(cols.into_primitive(),
                                   wt.reshape([c_out, cg * kd, kh, kw]).into_primitive(), bias,
                                   stride[1:], padding[1:], dilation[1:], groups))
        oh, ow = out.shape[2:]
        return out.reshape([n, od, c_out, oh, ow]).permute([0, 2, 1, 3, 4]).into_primitive()

    def conv_transpose3d(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                         padding: Pair, output_padding: Pair, dilation: Pair,
                         groups: int) -> Prim:
        """(N, C_in, D, H, W) with weight (C_in, C_out/groups, kd, kh, kw) -> (N, C_out, OD,
        OH, OW), OD = (D-1)*stride - 2*padding + dilation*(kd-1) + output_padding + 1."""
        xt, wt = self._ft(x), self._ft(weight)
        n, c_in, d, h, w = xt.shape
        _, cog, *kernel = wt.shape
        if any(s != 1 for s in stride):  # interleave stride-1 zeros between input voxels
            s0, s1, s2 = stride
            xt = xt.reshape([n, c_in, d, 1, h, 1, w, 1]).pad(
                [0, s2 - 1, 0, 0, 0, s1 - 1, 0, 0, 0, s0 - 1])
            xt = xt.reshape([n, c_in, d * s0, h * s1, w * s2]).slice(
                [None, None, (0, (d - 1) * s0 + 1), (0, (h - 1) * s1 + 1), (0, (w - 1) * s2 + 1)])
        # a full correlation pads dilation*(k-1) each side; padding crops that, output_padding
        # adds after: pad where the result is positive, crop where it is negative
        ends = [(f - p, f - p + o) for f, p, o in zip(
            (dl * (k - 1) for dl, k in zip(dilation, kernel, strict=True)), padding,
            output_padding, strict=True)]
        xt = xt.pad([v for lo, hi in reversed(ends) for v in (max(lo, 0), max(hi, 0))])
        xt = xt.slice([None, None, *((max(-lo, 0), size - max(-hi, 0))
                                     for (lo, hi), size in zip(ends, xt.shape[2:], strict=True))])
        k = wt.reshape([groups, c_in // groups, cog, *kernel]).swap_dims(1, 2)
        k = k.reshape([groups * cog, c_in // groups, *kernel]).flip([2, 3, 4])
        return self.conv3d(xt.into_primitive(), k.into_primitive(), bias, (1, 1, 1),
                           ((0, 0),) * 3, dilation, groups)

    # ---- pooling -----------------------------------------------------------------------------
    def max_pool2d_with_indices(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                                dilation: Pair) -> tuple[Prim, Prim]:
        """Max over each window, and where it was: flat indices into H*W (PyTorch's layout)."""
        xt = self._ft(x)
        h, w = xt.shape[2:]
        xp = _pad2d(xt, padding, -math.inf)
        oh, ow = conv_out_size(xp.shape[2:], kernel, stride, dilation)
        patches = self._patches(xp, kernel, stride, dilation, (oh, ow))
        tap = patches.argmax(2)  # N, C, 1, OH, OW: first max on ties, like PyTorch
        out = patches.gather(2, tap).squeeze(2)
        tap = tap.squeeze(2)
        rows = tap.div(kernel[1]) * dilation[0] + _grid(self, oh, stride[0], padding[0][0], 2)
        cols = tap.rem(kernel[1]) * dilation[1] + _grid(self, ow, stride[1], padding[1][0], 3)
        return out.into_primitive(), (rows * w + cols).into_primitive()

    def max_pool2d_with_indices_grad(self, grad: Prim, indices: Prim,
                                     input_shape: tuple[int, ...], kernel: Pair, stride: Pair,
                                     padding: Pads, dilation: Pair) -> Prim:
        """d max_pool2d / d x: each output's gradient added at the input its max came from."""
        n, c, h, w = input_shape
        gt = self._ft(grad)
        flat = gt.reshape([n, c, -1])
        where = self._ft(indices, Kind.INT).reshape([n, c, -1])
        zeros = self._ft(self.full((n, c, h * w), 0, self.dtype(grad)))
        return zeros.scatter(2, where, flat).reshape([n, c, h, w]).into_primitive()

    def max_pool2d(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                   dilation: Pair) -> Prim:
        xp = _pad2d(self._ft(x), padding, -math.inf)
        oh, ow = conv_out_size(xp.shape[2:], kernel, stride, dilation)
        patches = self._patches(xp, kernel, stride, dilation, (oh, ow))
        return patches.max_dim(2).squeeze(2).into_primitive()

    def avg_pool2d(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                   count_include_pad: bool) -> Prim:
        """Mean over each window; padded zeros count unless `count_include_pad` is False."""
        xt = self._ft(x)
        xp = _pad2d(xt, padding)
        oh, ow = conv_out_size(xp.shape[2:], kernel, stride, (1, 1))
        total = self._patches(xp, kernel, stride, (1, 1), (oh, ow)).sum_dim(2).squeeze(2)
        if count_include_pad or padding == ((0, 0), (0, 0)):
            return (total / (kernel[0] * kernel[1])).into_primitive()
        ones = _pad2d(xt.slice([(0, 1), (0, 1)]).ones_like(), padding)
        count = self._patches(ones, kernel, stride, (1, 1), (oh, ow)).sum_dim(2).squeeze(2)
        return (total / count).into_primitive()

    def avg_pool2d_grad(self, grad: Prim, input_shape: tuple[int, ...], kernel: Pair,
                        stride: Pair, padding: Pads, count_include_pad: bool) -> Prim:
        """d avg_pool2d / d x: each output's gradient shared by its window, i.e. the input
        gradient of a depthwise convolution with a kernel of ones, after dividing by the count."""
        gt = self._ft(grad)
        n, c, h, w = input_shape
        oh, ow = gt.shape[2:]
        if count_include_pad or padding == ((0, 0), (0, 0)):
            scaled = gt / (kernel[0] * kernel[1])
        else:
            ones = _pad2d(self._ft(self.full((1, 1, h, w), 1, self.dtype(grad))), padding)
            count = self._patches(ones, kernel, stride, (1, 1), (oh, ow)).sum_dim(2).squeeze(2)
            scaled = gt / count
        taps = self.full((c, 1, kernel[0], kernel[1]), 1, self.dtype(grad))
        return self.conv2d_input_grad(scaled.into_primitive(), taps, input_shape, stride,
                                      padding, (1, 1), c)

    def adaptive_avg_pool2d(self, x: Prim, output_size: Pair) -> Prim:
        """Mean over PyTorch's adaptive windows [floor(i*H/OH), ceil((i+1)*H/OH))."""
        xt = self._ft(x)
        n, c, h, w = xt.shape
        oh, ow = output_size
        if h % oh == 0 and w % ow == 0:  # equal windows (24 -> 8): a plain block mean
            kh, kw = h // oh, w // ow
            blocks = xt.reshape([n, c, oh, kh, ow, kw]).sum_dim(5).sum_dim(3)
            return (blocks.reshape([n, c, oh, ow]) / (kh * kw)).into_primitive()
        a_h = _matrix(self, adaptive_weights(h, output_size[0]), xt)
        a_w = _matrix(self, adaptive_weights(w, output_size[1]), xt)
        return _resample(xt, a_h, a_w).into_primitive()

    def adaptive_avg_pool2d_grad(self, grad: Prim, input_shape: tuple[int, ...]) -> Prim:
        """d adaptive_avg_pool2d / d x: each output's gradient shared evenly by its window."""
        gt = self._ft(grad)
        n, c, h, w = input_shape
        oh, ow = gt.shape[2:]
        if h % oh == 0 and w % ow == 0:
            kh, kw = h // oh, w // ow
            spread = (gt / (kh * kw)).reshape([n, c, oh, 1, ow, 1])
            return spread.expand([n, c, oh, kh, ow, kw]).reshape([n, c, h, w]).into_primitive()
        a_h = _matrix(self, adaptive_weights(h, oh), gt).transpose()
        a_w = _matrix(self, adaptive_weights(w, ow), gt).transpose()
        return _resample(gt, a_h, a_w).into_primitive()

    def max_pool1d_with_indices(self, x: Prim, kernel: int, stride: int,
                                padding: tuple[int, int], dilation: int) -> tuple[Prim, Prim]:
        out, index = self.max_pool2d_with_indices(_to2d(self, x), (1, kernel), (1, stride),
                                                  ((0, 0), padding), (1, dilation))
        return _from2d(self, out), _from2d(self, index)

    def max_pool1d(self, x: Prim, kernel: int, stride: int, padding: tuple[int, int],
                   dilation: int) -> Prim:
        return _from2d(self, self.max_pool2d(_to2d(self, x), (1, kernel), (1, stride),
                                             ((0, 0), padding), (1, dilation)))

    def avg_pool1d(self, x: Prim, kernel: int, stride: int, padding: tuple[int, int],
                   count_include_pad: bool) -> Prim:
        return _from2d(self, self.avg_pool2d(_to2d(self, x), (1, kernel), (1, stride),
                                             ((0, 0), padding), count_include_pad))

    def adaptive_avg_pool1d(self, x: Prim, output_size: int) -> Prim:
        return _from2d(self, self.adaptive_avg_pool2d(_to2d(self, x), (1, output_size)))

    # ---- interpolation and embedding ---------------------------------------------------------
    def interpolate2d(self, x: Prim, output_size: Pair, mode: str, align_corners: bool) -> Prim:
        """Resize H and W: mode "nearest" (PyTorch's floor rule) or "bilinear"."""
        xt = self._ft(x)
        h, w = xt.shape[2:]
        a_h = _matrix(self, resample_weights(h, output_size[0], mode, align_corners), xt)
        a_w = _matrix(self, resample_weights(w, output_size[1], mode, align_corners), xt)
        return _resample(xt, a_h, a_w).into_primitive()

    def interpolate1d(self, x: Prim, output_size: int, mode: str, align_corners: bool) -> Prim:
        mode2d = "bilinear" if mode == "linear" else mode
        return _from2d(self, self.interpolate2d(_to2d(self, x), (1, output_size), mode2d,
                                                align_corners))

    def embedding(self, weight: Prim, indices: Prim) -> Prim:
        """Rows of `weight` (V, D) at Int `indices` of any shape -> (*indices.shape, D)."""
        wt, it = self._ft(weight), self._ft(indices, Kind.INT)
        rows = wt.select(0, it.reshape([-1]))
        return rows.reshape([*it.shape, wt.shape[1]]).into_primitive()


# ---- shared arithmetic (also used by the front end and the overrides) ---------------------------
def conv_out_size(padded: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
                  dilation: tuple[int, ...]) -> tuple[int, int]:
    """Output size per spatial dim of a window op over an already padded input."""
    oh, ow = ((p - d * (k - 1) - 1) // s + 1
              for p, k, s, d in zip(padded, kernel, stride, dilation, strict=True))
    return oh, ow


def adaptive_weights(size: int, out: int) -> list[list[float]]:
    """(out, size) averaging matrix of adaptive pooling's windows."""
    rows = []
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        rows.append([1.0 / (end - start) if start <= j < end else 0.0 for j in range(size)])
    return rows


def resample_weights(size: int, out: int, mode: str, align_corners: bool) -> list[list[float]]:
    """(out, size) matrix mapping an axis of `size` samples to `out` samples.

    nearest: src = floor(i * size / out) (PyTorch's and Burn's rule). bilinear: with
    align_corners the end samples line up, src = i * (size-1) / (out-1); without, half-pixel
    centres, src = (i + 0.5) * size / out - 0.5, clamped at 0 as PyTorch does."""
    rows = [[0.0] * size for _ in range(out)]
    for i in range(out):
        if mode == "nearest":
            rows[i][min(size - 1, (i * size) // out)] = 1.0
            continue
        if align_corners:
            src = i * (size - 1) / (out - 1) if out > 1 else 0.0
        else:
            src = max(0.0, (i + 0.5) * size / out - 0.5)
        lo = min(int(math.floor(src)), size - 1)
        hi = min(lo + 1, size - 1)
        frac = src - lo
        rows[i][lo] += 1.0 - frac
        rows[i][hi] += frac
    return rows


def _matrix(backend: Any, rows: list[list[float]], like: Tensor) -> Tensor:
    from ..data import TensorData
    from ..tensor import from_data
    flat = [v for row in rows for v in row]
    data = TensorData(flat, shape=(len(rows), len(rows[0]) if rows else 0), dtype=like.dtype)
    return from_data(data, device=backend)


def _resample(x: Tensor, a_h: Tensor, a_w: Tensor) -> Tensor:
    """a_h @ x @ a_w^T over the last two dims of x (N, C, H, W)."""
    n, c, h, w = x.shape
    out = x.reshape([n * c * h, w]) @ a_w.transpose()  # N*C*H, OW
    ow = out.shape[1]
    out = out.reshape([n * c, h, ow])
    return (a_h.unsqueeze_dim(0) @ out).reshape([n, c, a_h.shape[0], ow])


def _stack(parts: list[Tensor], dim: int) -> Tensor:
    from ..tensor import Tensor
    return Tensor.cat([p.unsqueeze_dim(dim) for p in parts], dim)


def _pad2d(x: Tensor, padding: Pads, value: float = 0.0) -> Tensor:
    (t, b), (left, right) = padding
    if t == b == left == right == 0:
        return x
    return x.pad([left, right, t, b], value)


def _crop(x: Tensor, padding: Pads, size: tuple[int, ...]) -> Tensor:
    (t, _), (left, _) = padding
    return x.slice([None, None, (t, t + size[0]), (left, left + size[1])])


def _grid(backend: Any, count: int, stride: int, pad: int, dim: int) -> Tensor:
    """Int positions `i * stride - pad` along `dim` of a rank-4 tensor."""
    from ..creation import arange
    shape = [1, 1, 1, 1]
    shape[dim] = count
    return (arange(0, count, device=backend) * stride - pad).reshape(shape)


def _to2d(backend: Any, x: Prim) -> Prim:
    s = backend.shape(x)
    return backend.reshape(x, (s[0], s[1], 1, s[2]))


def _from2d(backend: Any, x: Prim) -> Prim:
    s = backend.shape(x)
    return backend.reshape(x, (s[0], s[1], s[3]))
