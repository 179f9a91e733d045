"""numpy overrides of module ops for speed: conv2d with its two gradients, adaptive average
pooling with its gradient, and the forward of max and average pooling.

The composites in `module_ops.py` build im2col from one strided slice per kernel tap and
concatenate them; here the columns come from one `sliding_window_view` copied once in a
matmul-friendly layout (taps before pixels, pixels contiguous) and are handed to Autodiff to keep
for the weight gradient (`conv2d_saving`), and the input gradient adds each tap's contribution in
place instead of convolving a zero-interleaved gradient: one product per sample gives every tap's
columns, then one strided add per tap covers the whole batch. Adaptive pooling over equal windows
adds strided views (numpy's own reductions over small inner axes are ten times slower); max and
average pooling combine the kernel taps' strided views in place, for inference (on Autodiff they
run as composites, which carry their gradient).
`tests/conformance/test_module_ops.py` checks every override against its composite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import sample_pool
from .numpy_blas import product

Prim = Any
Pair = tuple[int, ...]  # one entry per spatial dim
Pads = tuple[tuple[int, int], ...]  # (before, after) per spatial dim

#: the most bytes the input gradient's columns may take at once (larger batches go in chunks)
WORKSPACE_BYTES = 64 << 20


class NumpyModuleOps:
    """Mixin of `NumpyBackend`."""

    np: Any

    if TYPE_CHECKING:  # NumpyBackend's
        def pad(self, x: Prim, pads: Any, value: Any) -> Prim: ...

    # ---- convolution -------------------------------------------------------------------------
    def _cols(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads, dilation: Pair,
              groups: int) -> tuple[Prim, Pair]:
        """im2col: (N, groups, C/groups*kh*kw, OH*OW), contiguous, and (OH, OW)."""
        win, (oh, ow) = self._windows(self._padded(x, padding, 0.0), kernel, stride, dilation)
        n, c = x.shape[:2]
        cols = self.np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3))
        return cols.reshape(n, groups, (c // groups) * kernel[0] * kernel[1], oh * ow), (oh, ow)

    def _matmul_groups(self, w: Prim, cols: Prim) -> Prim:
        """w (G, M, K) @ cols (N, G, K, P) -> (N, G, M, P), one BLAS call per sample and group
        (numpy's matmul broadcasting w over N leaves BLAS: 10-100x slower), samples shared
        among `sample_pool`'s workers."""
        np = self.np
        n, groups = cols.shape[:2]
        if groups > 8:  # depthwise-like: many tiny products, numpy's own loop is better
            return product(np, w, cols)
        out = np.empty((n, groups, w.shape[1], cols.shape[3]),
                       dtype=np.result_type(w.dtype, cols.dtype))

        def work(start: int, stop: int) -> None:
            for i in range(start, stop):
                for g in range(groups):
                    product(np, w[g], cols[i, g], out=out[i, g])

        sample_pool.run(work, n)
        return out

    def conv2d_saving(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                      padding: Pads, dilation: Pair, groups: int) -> tuple[Prim, Any]:
        """The training forward (Autodiff): the batch's im2col is kept for the weight
        gradient, so it is built once for the whole batch."""
        c_out, cg, kh, kw = weight.shape
        n, c, h, wd = x.shape
        if (kh, kw) == (1, 1) and stride == (1, 1) and padding == ((0, 0), (0, 0)):
            cols, (oh, ow) = x.reshape(n, groups, c // groups, h * wd), (h, wd)  # no im2col
        else:
            cols, (oh, ow) = self._cols(x, (kh, kw), stride, padding, dilation, groups)
        w = weight.reshape(groups, c_out // groups, cg * kh * kw)
        out = self._matmul_groups(w, cols).reshape(n, c_out, oh, ow)
        if bias is not None:
            out += bias.reshape(1, c_out, 1, 1)
        return out, cols

    def conv2d(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair, padding: Pads,
               dilation: Pair, groups: int) -> Prim:
        return self._conv_forward(x, weight, bias, stride, padding, dilation, groups, False)

    def conv2d_relu(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                    padding: Pads, dilation: Pair, groups: int) -> Prim:
        return self._conv_forward(x, weight, bias, stride, padding, dilation, groups, True)

    def _conv_forward(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair,
                      padding: Pads, dilation: Pair, groups: int, relu: bool) -> Prim:
        """conv2d (and ReLU) without Autodiff, one sample at a time: the sample's im2col, its
        products, then the bias and ReLU added in place on the product while it is in cache
        (no extra pass over the output, no batch-sized im2col). Samples share the cores
        through `sample_pool` when there are cores to spare; with fewer samples than workers
        each sample's output rows are split into bands, one item of work each."""
        np = self.np
        c_out, cg, kh, kw = weight.shape
        n, k, m = x.shape[0], cg * kh * kw, c_out // groups
        c, h, wd = x.shape[1:]
        (top, bottom), (left, right) = padding
        oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        workers = sample_pool.workers(n * oh)
        bands = 1 if n >= workers else min(oh, -(-workers // n))
        edges = [oh * j // bands for j in range(bands + 1)]
        rows_max = max(edges[j + 1] - edges[j] for j in range(bands))
        if (kh, kw) == (1, 1) and stride == (1, 1) and padding == ((0, 0), (0, 0)):
            flat = x.reshape(n, groups, cg, oh * ow)  # a view of a contiguous x: no im2col

            def columns() -> Any:
                return lambda i, r0, r1: flat[i, :, :, r0 * ow:r1 * ow]
        else:
            def columns() -> Any:
                """One worker's im2col: a padded sample and its columns (a band of output rows
                at a time), in buffers reused for every item it takes (they stay in cache; no
                batch-sized padded copy)."""
                if padding == ((0, 0), (0, 0)):
                    src, inner = x, None
                else:  # the borders stay zero; each sample is copied inside them
                    src = np.zeros((1, c, h + top + bottom, wd + left + right), dtype=x.dtype)
                    inner = src[0, :, top:top + h, left:left + wd]
                win = self._windows(src, (kh, kw), stride, dilation)[0]
                store = np.empty(c * kh * kw * rows_max * ow, dtype=x.dtype)
                held = [-1]  # the sample inside the padded buffer

                def cols_of(i: int, r0: int, r1: int) -> Prim:
                    """(groups, C/groups*kh*kw, (r1-r0)*OW): taps before pixels."""
                    size = c * kh * kw * (r1 - r0) * ow
                    cols = store[:size].reshape(c, kh, kw, r1 - r0, ow)
                    if inner is None:
                        np.copyto(cols, win[i, :, r0:r1].transpose(0, 3, 4, 1, 2))
                    else:
                        if held[0] != i:
                            inner[...] = x[i]
                            held[0] = i
                        np.copyto(cols, win[0, :, r0:r1].transpose(0, 3, 4, 1, 2))
                    return cols.reshape(groups, k, (r1 - r0) * ow)
                return cols_of
        out = np.empty((n, groups, m, oh * ow), dtype=np.result_type(x.dtype, weight.dtype))
        w = weight.reshape(groups, m, k)
        b = None if bias is None else bias.reshape(groups, m, 1)

        def work(start: int, stop: int) -> None:
            cols_of = columns()
            for item in range(start, stop):
                i, j = divmod(item, bands)
                r0, r1 = edges[j], edges[j + 1]
                cols, o = cols_of(i, r0, r1), out[i, :, :, r0 * ow:r1 * ow]
                if groups > 8:  # depthwise-like: numpy's own loop over tiny products
                    product(np, w, cols, out=o)
                else:
                    for g in range(groups):
                        product(np, w[g], cols[g], out=o[g])
                if b is not None:
                    o += b
                if relu:
                    np.maximum(o, 0, out=o)

        sample_pool.run(work, n * bands)
        return out.reshape(n, c_out, oh, ow)

    def _windows(self, x: Prim, kernel: Pair, stride: Pair, dilation: Pair) -> tuple[Prim, Pair]:
        """The (N, C, OH, OW, kh, kw) view of every window of an already padded x, no copy."""
        h, w = x.shape[2:]
        kh, kw = kernel
        span = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
        oh = (h - span[0]) // stride[0] + 1
        ow = (w - span[1]) // stride[1] + 1
        win = self.np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
        win = win[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]
        return win[:, :, :oh, :ow], (oh, ow)

    def conv2d_weight_grad(self, x: Prim, grad: Prim, weight_shape: tuple[int, ...],
                           stride: Pair, padding: Pads, dilation: Pair, groups: int,
                           saved: Any = None) -> Prim:
        c_out, cg, kh, kw = weight_shape
        cols = saved
        if cols is None:
            cols, _ = self._cols(x, (kh, kw), stride, padding, dilation, groups)
        g = grad.reshape(grad.shape[0], groups, c_out // groups, -1)
        gw = product(self.np, g, cols.transpose(0, 1, 3, 2)).sum(axis=0)
        return gw.reshape(weight_shape).astype(grad.dtype, copy=False)

    def conv2d_input_grad(self, grad: Prim, weight: Prim, input_shape: tuple[int, ...],
                          stride: Pair, padding: Pads, dilation: Pair, groups: int) -> Prim:
        np = self.np
        n, c, h, w = input_shape
        (top, bottom), (left, right) = padding
        c_out, cg, kh, kw = weight.shape
        oh, ow = grad.shape[2:]
        g = grad.reshape(n, groups, c_out // groups, oh * ow)
        # the columns' gradient w^T @ g, one product per sample (and group) for all the taps
        # at once, then one strided add per tap over the whole batch; samples go in chunks
        # whose columns stay within WORKSPACE_BYTES
        wt = np.ascontiguousarray(weight.reshape(groups, c_out // groups, cg * kh * kw)
                                  .transpose(0, 2, 1))
        dx = np.zeros((n, c, h + top + bottom, w + left + right), dtype=grad.dtype)
        per_sample = c * kh * kw * oh * ow * grad.dtype.itemsize
        step = max(1, min(n, WORKSPACE_BYTES // max(1, per_sample)))
        for start in range(0, n, step):
            dcols = self._matmul_groups(wt, g[start:start + step])  # (nb, G, cg*kh*kw, P)
            nb = dcols.shape[0]
            taps = dcols.reshape(nb, c, kh, kw, oh, ow)
            dest = dx[start:start + nb]
            for i in range(kh):
                r0 = i * dilation[0]
                rows = slice(r0, r0 + stride[0] * (oh - 1) + 1, stride[0])
                for j in range(kw):
                    c0 = j * dilation[1]
                    cols = slice(c0, c0 + stride[1] * (ow - 1) + 1, stride[1])
                    dest[:, :, rows, cols] += taps[:, :, i, j]
        return dx[:, :, top:top + h, left:left + w]

    # ---- window pooling (inference: Autodiff differentiates the composites) ----------------
    def _taps(self, x: Prim, kernel: Pair, stride: Pair, dilation: Pair) -> Any:
        """The strided view of each kernel tap over an already padded x (no copies)."""
        h, w = x.shape[2:]
        oh = (h - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        ow = (w - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        for i in range(kernel[0]):
            r0 = i * dilation[0]
            for j in range(kernel[1]):
                c0 = j * dilation[1]
                yield x[:, :, r0:r0 + stride[0] * (oh - 1) + 1:stride[0],
                        c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]

    def _padded(self, x: Prim, padding: Pads, value: float) -> Prim:
        if padding == ((0, 0), (0, 0)):
            return x
        return self.pad(x, ((0, 0), (0, 0), *padding), value)

    def max_pool2d(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                   dilation: Pair) -> Prim:
        # a max over a rectangle is the max over its rows of the max over its columns: two
        # passes of k taps each, and no padded copy (padding taps never win a max)
        y = self._max_along(x, 3, kernel[1], stride[1], dilation[1], padding[1])
        return self._max_along(y, 2, kernel[0], stride[0], dilation[0], padding[0])

    def _max_along(self, x: Prim, axis: int, k: int, s: int, d: int,
                   pads: tuple[int, int]) -> Prim:
        """Windowed max along one axis: output o covers o*s - before + t*d, t < k, taps in
        the padding skipped."""
        np = self.np
        size = x.shape[axis]
        lo, hi = pads
        n_out = (size + lo + hi - d * (k - 1) - 1) // s + 1
        shape = list(x.shape)
        shape[axis] = n_out
        out = np.empty(shape, dtype=x.dtype)

        def at(index: Any) -> tuple[Any, ...]:
            return (slice(None),) * axis + (index,)

        first = -(-lo // s)  # the outputs whose taps all fall inside x
        last = min(n_out - 1, (size - 1 - d * (k - 1) + lo) // s)
        if last >= first:
            count, start = last - first + 1, first * s - lo
            dest = out[at(slice(first, last + 1))]
            views = [x[at(slice(b, b + (count - 1) * s + 1, s))]
                     for b in range(start, start + k * d, d)]
            if k == 1:
                dest[...] = views[0]
            else:
                np.maximum(views[0], views[1], out=dest)
            for view in views[2:]:
                np.maximum(dest, view, out=dest)
        # the outputs whose windows reach into the padding, at each end: per tap, one strided
        # maximum over the outputs it falls inside x for (a window wholly in the padding keeps
        # the fill)
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        for a, b in ((0, min(first, n_out)), (max(last + 1, first), n_out)):
            if a >= b:
                continue
            out[at(slice(a, b))] = fill
            for t in range(k):
                off = t * d - lo  # output o reads x[o * s + off]
                o0, o1 = max(a, -(off // s)), min(b - 1, (size - 1 - off) // s)
                if o1 >= o0:
                    part = out[at(slice(o0, o1 + 1))]
                    np.maximum(part, x[at(slice(o0 * s + off, o1 * s + off + 1, s))], out=part)
        return out

    def avg_pool2d(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                   count_include_pad: bool) -> Prim:
        np = self.np
        taps = self._taps(self._padded(x, padding, 0.0), kernel, stride, (1, 1))
        total = next(taps).copy()
        for view in taps:
            total += view
        if count_include_pad or padding == ((0, 0), (0, 0)):
            return total * np.asarray(1.0 / (kernel[0] * kernel[1]), dtype=x.dtype)
        ones = self._padded(np.ones((1, 1, *x.shape[2:]), dtype=x.dtype), padding, 0.0)
        count = sum(self._taps(ones, kernel, stride, (1, 1)))
        return total / count

    # ---- adaptive average pooling ------------------------------------------------------------
    def adaptive_avg_pool2d(self, x: Prim, output_size: Pair) -> Prim:
        n, c, h, w = x.shape
        oh, ow = output_size
        if h % oh or w % ow:
            return super().adaptive_avg_pool2d(x, output_size)  # type: ignore[misc]
        kh, kw = h // oh, w // ow
        rows = x.reshape(n * c * oh, kh, w)
        total = rows[:, 0]
        for i in range(1, kh):
            total = total + rows[:, i]
        cols = total.reshape(n * c * oh, ow, kw)
        out = cols[:, :, 0]
        for j in range(1, kw):
            out = out + cols[:, :, j]
        return (out * (1.0 / (kh * kw))).astype(x.dtype, copy=False).reshape(n, c, oh, ow)

    def adaptive_avg_pool2d_grad(self, grad: Prim, input_shape: tuple[int, ...]) -> Prim:
        n, c, h, w = input_shape
        oh, ow = grad.shape[2:]
        if h % oh or w % ow:
            return super().adaptive_avg_pool2d_grad(grad, input_shape)  # type: ignore[misc]
        np = self.np
        kh, kw = h // oh, w // ow
        scaled = (grad * (1.0 / (kh * kw))).astype(grad.dtype, copy=False)
        return np.repeat(np.repeat(scaled, kh, axis=2), kw, axis=3)
