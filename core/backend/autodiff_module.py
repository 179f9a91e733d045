"""Autodiff rules for module ops that backends accelerate.

conv2d, max/avg pooling and adaptive_avg_pool2d get rules of their own so the inner backend's
fast kernels serve forward and backward alike. conv2d's forward calls `inner.conv2d_saving`
(which may hand back something to keep: numpy's im2col columns), its backward
`inner.conv2d_input_grad` and `inner.conv2d_weight_grad`; pooling's backward calls
`inner.max_pool2d_with_indices_grad`, `inner.avg_pool2d_grad` and
`inner.adaptive_avg_pool2d_grad`. numpy overrides some of these, webgpu most; other backends
run the composites of `module_ops.py`. Gradients are computed only for inputs that need them,
so the first layer never pays for an input gradient. `attention` asks the inner backend for
its fused forward (`attention_saving`) and differentiates it with `inner.attention_grad`; where
the inner backend has none, or the mask itself needs a gradient (a learned bias), the composite
is differentiated instead. Every other module op is differentiated through its composition
(conv1d and conv_transpose reach the conv2d rule through the conv2d calls they make).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .attention_ops import AttentionOps
from .reduce import SUM

if TYPE_CHECKING:
    from .base import Backend

Prim = Any
Pair = tuple[int, ...]  # one entry per spatial dim
Pads = tuple[tuple[int, int], ...]  # (before, after) per spatial dim


def _needs_grad(x: Prim) -> bool:
    return getattr(x, "node", None) is not None


class AutodiffModuleOps:
    """Mixin of `Autodiff`."""

    inner: Backend

    def conv2d(self, x: Prim, weight: Prim, bias: Prim | None, stride: Pair, padding: Pads,
               dilation: Pair, groups: int) -> Prim:
        inner = self.inner
        unwrap = self.unwrap  # type: ignore[attr-defined]
        xv, wv = unwrap(x), unwrap(weight)
        bv = None if bias is None else unwrap(bias)
        need_x, need_w = _needs_grad(x), _needs_grad(weight)
        need_b = bias is not None and _needs_grad(bias)
        if need_w:
            out, saved = inner.conv2d_saving(xv, wv, bv, stride, padding, dilation, groups)
        else:
            out, saved = inner.conv2d(xv, wv, bv, stride, padding, dilation, groups), None
        x_shape, w_shape = inner.shape(xv), inner.shape(wv)

        def backward(g: Prim) -> tuple[Prim | None, ...]:
            gw = inner.conv2d_weight_grad(xv, g, w_shape, stride, padding, dilation, groups,
                                          saved) if need_w else None
            gb = None
            if need_b:
                # batch first, then the pixels as one contiguous last dim: both reductions fast
                n, c, oh, ow = inner.shape(g)
                per_channel = inner.reshape(inner.reduce(SUM, g, 0), (c, oh * ow))
                gb = inner.reshape(inner.reduce(SUM, per_channel, 1), (w_shape[0],))
            # the input gradient last: a backend that records it (Fusion) then still has it
            # pending when the layer before consumes it, and can run that consumer (an
            # activation's mask) in the gradient kernel's store
            gx = inner.conv2d_input_grad(g, wv, x_shape, stride, padding, dilation, groups) \
                if need_x else None
            if bias is None:
                return gx, gw
            return gx, gw, gb
        inputs = (x, weight) if bias is None else (x, weight, bias)
        return self._record(out, inputs, backward)  # type: ignore[attr-defined]

    def max_pool2d_with_indices(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                                dilation: Pair) -> tuple[Prim, Prim]:
        inner = self.inner
        xv = self.unwrap(x)  # type: ignore[attr-defined]
        out, index = inner.max_pool2d_with_indices(xv, kernel, stride, padding, dilation)
        x_shape = inner.shape(xv)
        return self._record(out, (x,), lambda g: (  # type: ignore[attr-defined]
            inner.max_pool2d_with_indices_grad(g, index, x_shape, kernel, stride, padding,
                                               dilation),)), index

    def max_pool2d(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                   dilation: Pair) -> Prim:
        return self.max_pool2d_with_indices(x, kernel, stride, padding, dilation)[0]

    def avg_pool2d(self, x: Prim, kernel: Pair, stride: Pair, padding: Pads,
                   count_include_pad: bool) -> Prim:
        inner = self.inner
        xv = self.unwrap(x)  # type: ignore[attr-defined]
        out = inner.avg_pool2d(xv, kernel, stride, padding, count_include_pad)
        x_shape = inner.shape(xv)
        return self._record(out, (x,), lambda g: (  # type: ignore[attr-defined]
            inner.avg_pool2d_grad(g, x_shape, kernel, stride, padding, count_include_pad),))

    def adaptive_avg_pool2d(self, x: Prim, output_size: Pair) -> Prim:
        inner = self.inner
        xv = self.unwrap(x)  # type: ignore[attr-defined]
        out = inner.adaptive_avg_pool2d(xv, output_size)
        x_shape = inner.shape(xv)
        return self._record(out, (x,), lambda g: (  # type: ignore[attr-defined]
            inner.adaptive_avg_pool2d_grad(g, x_shape),))

    def attention(self, q: Prim, k: Prim, v: Prim, mask: Prim | None, scale: float,
                  quiet: bool, causal: bool) -> Prim:
        inner = self.inner
        unwrap = self.unwrap  # type: ignore[attr-defined]
        qv, kv, vv = unwrap(q), unwrap(k), unwrap(v)
        mv = None if mask is None else unwrap(mask)
        needs = (_needs_grad(q), _needs_grad(k), _needs_grad(v))
        me: Any = self  # the composite runs on this backend's primitives
        if mask is not None and _needs_grad(mask):
            return AttentionOps.attention(me, q, k, v, mask, scale, quiet, causal)
        if not any(needs):
            return self._record(  # type: ignore[attr-defined]
                inner.attention(qv, kv, vv, mv, scale, quiet, causal), (), lambda g: ())
        found = inner.attention_saving(qv, kv, vv, mv, scale, quiet, causal)
        if found is None:
            return AttentionOps.attention(me, q, k, v, mask, scale, quiet, causal)
        out, saved = found
        return self._record(out, (q, k, v), lambda g: (  # type: ignore[attr-defined]
            inner.attention_grad(qv, kv, vv, mv, out, saved, g, scale, quiet, causal,
                                 needs)))
