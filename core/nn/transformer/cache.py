"""Key/value caches for autoregressive decoding (Burn's `MhaCache` and the transformers'
`*AutoregressiveCache`), held by the caller and updated in place by each call.

A self-attention cache keeps every earlier position's projected keys and values, (batch,
heads, seen, d_k), per layer; a call appends the new positions' ones (one `cat` each) and
attends over all of them, so step t costs O(t) work and no position is recomputed. A
cross-attention cache projects the memory once, on its first call, and reuses it.

Everything here is decided from shapes, which the host knows: nothing is read back from the
device, so a page decoding on WebGPU never waits on a readback between tokens.
"""

from __future__ import annotations

from ...creation import cat, full
from ...tensor import Tensor


class MhaCache:
    """One attention layer's cached keys and values, (batch, heads, seen, d_k) each, or None
    before the first call. `MhaCache.autoregressive()` for self-attention,
    `MhaCache.autoregressive_cross_attention()` for attention over a fixed memory."""

    def __init__(self, *, cross: bool = False) -> None:
        self.key: Tensor | None = None
        self.value: Tensor | None = None
        self.cross = cross

    @classmethod
    def autoregressive(cls) -> MhaCache:
        return cls()

    @classmethod
    def autoregressive_cross_attention(cls) -> MhaCache:
        return cls(cross=True)

    @property
    def length(self) -> int:
        """Positions cached so far (the memory's length for a cross-attention cache)."""
        return 0 if self.key is None else self.key.shape[2]

    def append(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new positions' keys and values; all of them, old then new."""
        if self.key is None or self.value is None:
            self.key, self.value = key, value
        else:
            self.key, self.value = cat([self.key, key], 2), cat([self.value, value], 2)
        return self.key, self.value

    def __repr__(self) -> str:
        kind = "cross-attention" if self.cross else "self-attention"
        return f"MhaCache({kind}, length={self.length})"


class PaddingHistory:
    """The padding mask of every position a cache has seen, (batch, seen) Bool, kept only
    once some call passed one (earlier positions count as not padded)."""

    def __init__(self) -> None:
        self.mask: Tensor | None = None
        self.seen = 0

    def extend(self, new: Tensor | None, batch: int, count: int, like: Tensor) -> Tensor | None:
        """Record `count` new positions (their mask, or None for no padding); the mask of all
        positions so far, or None while none was ever given."""
        if new is None and self.mask is None:
            self.seen += count
            return None
        if new is None:
            new = full((batch, count), False, device=like.device)
        old = self.mask if self.mask is not None else (
            full((batch, self.seen), False, device=like.device) if self.seen else None)
        self.mask = new if old is None else cat([old, new], 1)
        self.seen += count
        return self.mask


class TransformerEncoderAutoregressiveCache:
    """One `MhaCache` per encoder layer and the padding seen so far; from
    `TransformerEncoder.new_autoregressive_cache()`."""

    def __init__(self, n_layers: int) -> None:
        self.layers = [MhaCache.autoregressive() for _ in range(n_layers)]
        self.padding = PaddingHistory()

    @property
    def length(self) -> int:
        """Positions processed so far."""
        return self.layers[0].length if self.layers else 0


class TransformerDecoderAutoregressiveCache:
    """Per decoder layer a self-attention and a cross-attention `MhaCache`, and the target
    padding seen so far; from `TransformerDecoder.new_autoregressive_cache()`."""

    def __init__(self, n_layers: int) -> None:
        self.self_attn = [MhaCache.autoregressive() for _ in range(n_layers)]
        self.cross_attn = [MhaCache.autoregressive_cross_attention() for _ in range(n_layers)]
        self.padding = PaddingHistory()

    @property
    def length(self) -> int:
        """Target positions processed so far."""
        return self.self_attn[0].length if self.self_attn else 0
