"""The attention module op: softmax(q @ k^T * scale + mask) @ v, as a composite of primitives.

`Backend` inherits `AttentionOps.attention`; a backend may override it with a fused kernel
(webgpu does: `pyrite.webgpu.flash_attention`). Autodiff's rule (`autodiff_module.py`) asks the
inner backend for `attention_saving`, the forward that also returns what a backward needs (None
here: no fused kernel, so Autodiff differentiates the composite), and differentiates it with
`attention_grad`, whose default here recomputes the weights with primitives; a backend with a
fused backward overrides both.
The composite is written with front-end tensors on the backend itself, as `module_ops.py`
writes conv and pool: Autodiff differentiates it through its composition (matmul, softmax and
elementwise ops, each with its own rule) and Fusion fuses its elementwise parts.

Arguments arrive validated by `pyrite.nn.functional.attention`:

- q (batch, heads, seq_q, d_k), k (batch, heads, seq_k, d_k), v (batch, heads, seq_k, d_v),
  one float dtype, on this backend;
- mask: None or an *additive* float tensor of rank 4 whose dims are each the full size or 1
  (broadcast), added to the scaled scores before the softmax. Masked positions hold a large
  negative number (`MultiHeadAttention` uses its `min_float`, -1e4 by default), others 0; any
  other values act as an attention bias (ALiBi, relative positions);
- scale: a Python float (usually 1 / sqrt(d_k));
- quiet: use the quiet softmax, exp(x) / (1 + sum exp(x)), instead of softmax;
- causal: query i sees only keys j <= i + seq_k - seq_q (the last query sees every key:
  self-attention's lower triangle, or new positions after cached ones); seq_q <= seq_k. No mask
  tensor exists for it: the composite hides the other keys itself (-inf), a fused kernel
  compares positions and skips the tiles past the frontier. It adds to `mask` if both are given.

The op returns the context only, (batch, heads, seq_q, d_v). The weights are
`attention_weights(...)`, the same composite stopped before the last matmul; a caller that needs
both (MultiHeadAttention asked for its weights, or dropout on the weights while training) calls
that and multiplies by v itself, so a fused kernel never has to write the weights out.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..dtype import Kind

if TYPE_CHECKING:
    from ..tensor import Tensor

Prim = Any


class AttentionOps:
    """Mixin of `Backend`: the default composition of scaled dot-product attention."""

    def attention(self, q: Prim, k: Prim, v: Prim, mask: Prim | None, scale: float,
                  quiet: bool, causal: bool) -> Prim:
        """(B, H, Sq, Dk), (B, H, Sk, Dk), (B, H, Sk, Dv) -> (B, H, Sq, Dv)."""
        from ..tensor import Tensor
        backend: Any = self
        qt, kt, vt = (Tensor._wrap(p, backend, Kind.FLOAT) for p in (q, k, v))
        mt = None if mask is None else Tensor._wrap(mask, backend, Kind.FLOAT)
        return (attention_weights(qt, kt, mt, scale, quiet, causal) @ vt).into_primitive()

    def attention_saving(self, q: Prim, k: Prim, v: Prim, mask: Prim | None, scale: float,
                         quiet: bool, causal: bool) -> tuple[Prim, object] | None:
        """A fused forward: the output and what `attention_grad` needs from the forward, or
        None when this backend has no fused kernel for these arguments (the default)."""
        return None

    def attention_grad(self, q: Prim, k: Prim, v: Prim, mask: Prim | None, out: Prim,
                       saved: object, grad: Prim, scale: float, quiet: bool, causal: bool,
                       needs: tuple[bool, bool, bool]) -> tuple[Prim | None, ...]:
        """(dq, dk, dv) of `attention_saving`'s output from its gradient `grad`, None for an
        input not in `needs` (q, k, v), the mask taken as a constant.

        This default recomputes the weights p with primitives and uses no saved state: with
        dp = grad v^T and ds = p * (dp - rowsum(grad * out)), dv = p^T grad, dq = ds k * scale,
        dk = ds^T q * scale. (The rowsum is sum_j p_ij dp_ij; quiet softmax has the same form,
        its extra logit carrying no value.)"""
        from ..tensor import Tensor
        backend: Any = self
        qt, kt, vt, ot, gt = (Tensor._wrap(p, backend, Kind.FLOAT) for p in (q, k, v, out, grad))
        mt = None if mask is None else Tensor._wrap(mask, backend, Kind.FLOAT)
        p = attention_weights(qt, kt, mt, scale, quiet, causal)
        ds = p * (gt @ vt.swap_dims(-1, -2) - (gt * ot).sum_dim(-1))
        dq = (ds @ kt) * scale if needs[0] else None
        dk = (ds.swap_dims(-1, -2) @ qt) * scale if needs[1] else None
        dv = p.swap_dims(-1, -2) @ gt if needs[2] else None
        return tuple(None if t is None else t.into_primitive() for t in (dq, dk, dv))


def attention_weights(q: Tensor, k: Tensor, mask: Tensor | None, scale: float,
                      quiet: bool, causal: bool = False) -> Tensor:
    """softmax(q @ k^T * scale + mask) over the keys: (B, H, Sq, Sk). Arguments as `attention`."""
    scores = (q @ k.swap_dims(-1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    if causal:
        from ..creation import tril_mask
        sq, sk = q.shape[-2], k.shape[-2]
        scores = scores.mask_fill(tril_mask((sq, sk), sk - sq, device=q.device), -math.inf)
    if not quiet:
        return scores.softmax(-1)
    return quiet_softmax_last(scores)


def quiet_softmax_last(x: Tensor) -> Tensor:
    """exp(x) / (1 + sum exp(x)) over the last dim, computed stably.

    With m = max(0, max x) (detached: it cancels), exp(x - m) / (exp(-m) + sum exp(x - m)):
    every exponent is <= 0, so nothing overflows, and the implicit extra logit 0 is counted
    once. (Clamping m at 0 keeps exp(-m) <= 1 when every score is very negative, e.g. a fully
    masked row, where an unclamped shift would give exp(1e4).)"""
    m = x.max_dim(-1).clamp_min(0.0).detach()
    e = (x - m).exp()
    return e / ((-m).exp() + e.sum_dim(-1))
