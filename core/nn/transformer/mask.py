"""Attention masks (Burn's `generate_autoregressive_mask`, `generate_padding_mask`) and their
conversion to the additive mask the `attention` op takes.

Bool masks are True where attention is *not* allowed: a padded key (`mask_pad`, (batch,
seq_k)) or a key a query may not see (`mask_attn`, (batch, seq_q, seq_k)), as in Burn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...backend.base import Backend
from ...creation import tril_mask
from ...data import TensorData
from ...dtype import DType, Kind
from ...errors import KindError, ShapeError
from ...tensor import Tensor, from_data

Device = Backend | str | None


def generate_autoregressive_mask(batch_size: int, seq_length: int,
                                 device: Device = None) -> Tensor:
    """Causal mask, (batch, seq, seq) Bool: True above the diagonal (a later key).

    >>> generate_autoregressive_mask(1, 3).int().to_list()
    [[[0, 1, 1], [0, 0, 1], [0, 0, 0]]]
    """
    return tril_mask((seq_length, seq_length), 0, device=device).unsqueeze_dim(0).expand(
        [batch_size, seq_length, seq_length])


@dataclass(frozen=True)
class GeneratePaddingMask:
    """Padded tokens (batch, max_len) Int and their mask (batch, max_len) Bool, True at pads."""

    tensor: Tensor
    mask: Tensor


def generate_padding_mask(pad_token: int, tokens_list: Sequence[Sequence[int]],
                          max_seq_length: int | None = None,
                          device: Device = None) -> GeneratePaddingMask:
    """Right-pad token lists to the longest (cut at `max_seq_length`) and mark the pads.

    As Burn, the mask is `tokens == pad_token`, so a real token equal to `pad_token` counts as
    padding too.

    >>> out = generate_padding_mask(0, [[3, 4], [5]])
    >>> out.tensor.to_list(), out.mask.int().to_list()
    ([[3, 4], [5, 0]], [[0, 0], [0, 1]])
    """
    longest = max((len(t) for t in tokens_list), default=0)
    size = longest if max_seq_length is None else min(longest, max_seq_length)
    rows = [list(t)[:size] + [pad_token] * (size - min(len(t), size)) for t in tokens_list]
    flat = [v for row in rows for v in row]
    tensor = from_data(TensorData(flat, shape=(len(rows), size), dtype=DType.I64),
                       device=device)
    return GeneratePaddingMask(tensor, tensor.equal_elem(pad_token))


def check_mask(op: str, name: str, mask: Tensor, shape: tuple[int, ...], what: str) -> None:
    """A Bool mask of exactly `shape`, else an error naming the layer and the layout."""
    if not isinstance(mask, Tensor) or mask.kind is not Kind.BOOL:
        got = type(mask).__name__ if not isinstance(mask, Tensor) else mask.kind.value
        raise KindError(f"{op}: {name} must be a Bool tensor ({what}), got {got}; build one "
                        f"with generate_padding_mask / generate_autoregressive_mask or a "
                        f"comparison")
    if mask.shape != shape:
        raise ShapeError(f"{op}: {name} must have shape {shape} ({what}), got {mask.shape}")


def additive_mask(mask_pad: Tensor | None, mask_attn: Tensor | None, min_float: float,
                  like: Tensor) -> Tensor | None:
    """The Bool masks as one additive float mask for `attention`: min_float where masked, else
    0; (batch, 1, 1, seq_k) from mask_pad, (batch, 1, seq_q, seq_k) from mask_attn, their sum
    when both are given. Two ops per mask (cast, multiply); Fusion merges them."""
    out: Tensor | None = None
    for m in (mask_pad, mask_attn):
        if m is None:
            continue
        m4 = m.reshape([m.shape[0], 1, 1, m.shape[1]]) if m.ndim == 2 else m.unsqueeze_dim(1)
        add = m4.cast(like.dtype) * min_float
        out = add if out is None else out + add
    return out


__all__ = ["GeneratePaddingMask", "additive_mask", "check_mask",
           "generate_autoregressive_mask", "generate_padding_mask"]
