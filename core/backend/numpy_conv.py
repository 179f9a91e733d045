"""numpy overrides of conv2d and its two gradients: one GEMM per group over the whole batch.

im2col lays the columns out as (groups, C/groups*kh*kw, N*OH*OW): the batch and the pixels
together form the columns of one product per group, `w (M, K) @ cols (K, N*P)`, instead of one
small product per sample. The columns come from one `sliding_window_view`, copied once. The
product's (M, N, P) result is turned into NCHW by the copy that adds the bias, so the bias costs
no pass of its own. Both gradients use the same layout: the weight gradient is
`grad (M, N*P) @ cols^T`, one product that also sums over the batch, and the input gradient is
`w^T @ grad` (the columns' gradient) added back tap by tap into the padded input.

Memory is bounded: a batch whose columns would pass `WORKSPACE_BYTES` is done in chunks of
samples (the columns are then rebuilt for the weight gradient instead of kept). A 1x1 convolution
with stride 1 needs no im2col; when each sample has many pixels its per-sample products are
already large, and are used as they are rather than paying a transposed copy of the input.

Autodiff keeps what `conv2d_saving` returns and hands it to `conv2d_weight_grad`.
`tests/conformance/test_module_ops.py` and `test_conv_batched.py` check these against the
composites of `module_ops.py`.
"""

from __future__ import annotations

from typing import Any

Prim = Any
Pair = tuple[int, ...]  # one entry per spatial dim
Pads = tuple[tuple[int, int], ...]  # (before, after) per spatial dim

#: the most bytes the im2col columns (and the input gradient's columns) may take at once
WORKSPACE_BYTES = 64 << 20
#: a 1x1 convolution runs per sample when a sample has at least this many pixels
_PER_SAMPLE_PIXELS = 1024


class NumpyConvOps:
    """Mixin of `NumpyBackend`."""

    np: Any

    # ---- layout helpers ----------------------------------------------------------------------
    def _geometry(self, x_shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pads,
                  dilation: Pair) -> tuple[int, int]:
        (top, bottom), (left, right) = padding
        h, w = x_shape[2] + top + bottom, x_shape[3] + left + right
        oh = (h - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        ow = (w - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        return oh, ow

    def _chunk(self, n: int, k: int, pixels: int, itemsize: int) -> int:
        """Samples per chunk so that a (K, chunk * P) workspace fits WORKSPACE_BYTES."""
        return max(1, min(n, WORKSPACE_BYTES // max(1, k * pixels * itemsize)))

    def _pointwise(self, kernel: Pair, stride: Pair, padding: Pads) -> bool:
        return (kernel == (1, 1) and stride == (1, 1)
                and padding == ((0, 0), (0, 0)))

    def _batch_cols(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads, dilation: Pair,
                    groups: int) -> Prim:
        """im2col of a (chunk of the) batch: (groups, C/groups*kh*kw, N*OH*OW), contiguous."""
        np = self.np
        n, c = x.shape[:2]
        kh, kw = kernel
        oh, ow = self._geometry(x.shape, kernel, stride, padding, dilation)
        if self._pointwise(kernel, stride, padding):
            cols = x.reshape(n, c, oh * ow).transpose(1, 0, 2)
            return np.ascontiguousarray(cols).reshape(groups, c // groups, n * oh * ow)
        if padding != ((0, 0), (0, 0)):
            x = np.pad(x, ((0, 0), (0, 0), *padding))
        span = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
        win = np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
        win = win[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]
        win = win[:, :, :oh, :ow]  # N, C, OH, OW, kh, kw
        cols = np.ascontiguousarray(win.transpose(1, 4, 5, 0, 2, 3))  # C, kh, kw, N, OH, OW
        return cols.reshape(groups, (c // groups) * kh * kw, n * oh * ow)

    def _to_nchw(self, prod: Prim, n: int, bias: Prim | None, out: Prim) -> None:
        """(groups, M, N*P) product -> `out` (N, groups*M, OH, OW), adding the bias on the way."""
        np = self.np
        groups, m = prod.shape[:2]
        view = prod.reshape(groups, m, n, -1).transpose(2, 0, 1, 3)
        dest = out.reshape(n, groups, m, -1)
        if bias is None:
            dest[...] = view
        else:
            np.add(view, bias.reshape(1, groups, m, 1), out=dest)

    # ---- forward -----------------------------------------------------------------------------
    def conv2d_saving(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                      padding: Pads, dilation: Pair, groups: int) -> tuple[Prim, Any]:
        np = self.np
        c_out, cg, kh, kw = weight.shape
        n = x.shape[0]
        oh, ow = self._geometry(x.shape, (kh, kw), stride, padding, dilation)
        pixels = oh * ow
        w = weight.reshape(groups, c_out // groups, cg * kh * kw)
        dtype = np.result_type(x.dtype, weight.dtype)
        out = np.empty((n, c_out, oh, ow), dtype=dtype)
        if self._pointwise((kh, kw), stride, padding) and (n == 1 or pixels >= _PER_SAMPLE_PIXELS):
            cols = x.reshape(n, groups, cg, pixels)
            flat = out.reshape(n, groups, c_out // groups, pixels)
            for i in range(n):
                np.matmul(w, cols[i], out=flat[i])
            if bias is not None:
                out += bias.reshape(1, c_out, 1, 1)
            return out, None
        step = self._chunk(n, w.shape[2] * groups, pixels, dtype.itemsize)
        saved = None
        for start in range(0, n, step):
            part = x[start:start + step]
            cols = self._batch_cols(part, (kh, kw), stride, padding, dilation, groups)
            self._to_nchw(np.matmul(w, cols), part.shape[0], bias, out[start:start + step])
            if step >= n:
                saved = cols
        return out, saved

    def conv2d(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair, padding: Pads,
               dilation: Pair, groups: int) -> Prim:
        return self.conv2d_saving(x, weight, bias, stride, padding, dilation, groups)[0]

    # ---- gradients ---------------------------------------------------------------------------
    def _grad_rows(self, grad: Prim, groups: int) -> Prim:
        """(N, C_out, OH, OW) -> (groups, C_out/groups, N*OH*OW), contiguous."""
        n, c_out = grad.shape[:2]
        rows = grad.reshape(n, groups, c_out // groups, -1).transpose(1, 2, 0, 3)
        return self.np.ascontiguousarray(rows).reshape(groups, c_out // groups, -1)

    def conv2d_weight_grad(self, x: Prim, grad: Prim, weight_shape: tuple[int, ...],
                           stride: Pair, padding: Pads, dilation: Pair, groups: int,
                           saved: Any = None) -> Prim:
        np = self.np
        c_out, cg, kh, kw = weight_shape
        n = x.shape[0]
        pixels = grad.shape[2] * grad.shape[3]
        total: Any = None
        step = n if saved is not None else self._chunk(n, cg * kh * kw * groups, pixels,
                                                       grad.dtype.itemsize)
        for start in range(0, n, step):
            cols = saved if saved is not None else self._batch_cols(
                x[start:start + step], (kh, kw), stride, padding, dilation, groups)
            rows = self._grad_rows(grad[start:start + step], groups)
            part = np.matmul(rows, cols.transpose(0, 2, 1))  # (groups, M, K)
            total = part if total is None else total + part
        return total.reshape(weight_shape).astype(grad.dtype, copy=False)

    def conv2d_input_grad(self, grad: Prim, weight: Prim, input_shape: tuple[int, ...],
                          stride: Pair, padding: Pads, dilation: Pair, groups: int) -> Prim:
        np = self.np
        n, c, h, w = input_shape
        (top, bottom), (left, right) = padding
        c_out, cg, kh, kw = weight.shape
        oh, ow = grad.shape[2:]
        # (groups, K, M): each group's weight transposed, taps before output channels
        wt = weight.reshape(groups, c_out // groups, cg * kh * kw).transpose(0, 2, 1)
        dx = np.zeros((n, c, h + top + bottom, w + left + right), dtype=grad.dtype)
        step = self._chunk(n, cg * kh * kw * groups, oh * ow, grad.dtype.itemsize)
        for start in range(0, n, step):
            part = grad[start:start + step]
            nb = part.shape[0]
            dcols = np.matmul(wt, self._grad_rows(part, groups))  # (groups, K, nb*P)
            # -> (kh, kw, C, nb, OH, OW): one strided add per tap into the padded input
            taps = dcols.reshape(groups, cg, kh, kw, nb, oh, ow).transpose(2, 3, 0, 1, 4, 5, 6)
            taps = taps.reshape(kh, kw, c, nb, oh, ow)
            dest = dx[start:start + nb].transpose(1, 0, 2, 3)  # C, nb, H, W (a view)
            for i in range(kh):
                r0 = i * dilation[0]
                rows = slice(r0, r0 + stride[0] * (oh - 1) + 1, stride[0])
                for j in range(kw):
                    c0 = j * dilation[1]
                    cols = slice(c0, c0 + stride[1] * (ow - 1) + 1, stride[1])
                    dest[:, :, rows, cols] += taps[i, j]
        return dx[:, :, top:top + h, left:left + w]
