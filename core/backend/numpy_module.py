"""numpy overrides of module ops for speed: adaptive average pooling with its gradient, and the
forward of max and average pooling (convolution is `numpy_conv.py`).

Adaptive pooling over equal windows adds strided views (numpy's own reductions over small inner
axes are ten times slower); max and average pooling combine the kernel taps' strided views in
place, for inference (on Autodiff they run as composites, which carry their gradient).
`tests/conformance/test_module_ops.py` checks every override against its composite.
"""

from __future__ import annotations

from typing import Any

Prim = Any
Pair = tuple[int, ...]  # one entry per spatial dim
Pads = tuple[tuple[int, int], ...]  # (before, after) per spatial dim


class NumpyModuleOps:
    """Mixin of `NumpyBackend`."""

    np: Any

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
        return self.np.pad(x, ((0, 0), (0, 0), *padding), constant_values=value)

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
        for o in [*range(0, min(first, n_out)), *range(max(last + 1, first), n_out)]:
            taps = [o * s - lo + t * d for t in range(k)]
            taps = [i for i in taps if 0 <= i < size]
            if taps:
                out[at(o)] = x[at(slice(min(taps), max(taps) + 1, d))].max(axis=axis)
            else:  # a window wholly in the padding
                out[at(o)] = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
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
