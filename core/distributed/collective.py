"""The collective contract data-parallel training needs between processes.

`DataParallel` sums gradients over the devices of its own process itself; across processes it
hands the sums to a `Collective`: `all_reduce` adds up the same list of arrays from every rank,
`gather` gives every rank all ranks' arrays, `broadcast` gives every
rank rank 0's arrays. pyrite's Ray workers implement it with Ray's
object store (`pyrite.distributed.reducer`); a single process needs none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..data import TensorData


class Collective(Protocol):
    """Sums and broadcasts across the ranks of one training run."""

    rank: int
    world_size: int

    def all_reduce(self, values: Sequence[TensorData]) -> list[TensorData]:
        """The elementwise sums over all ranks, added in rank order (so every rank gets the
        same bits), of `values` (the same shapes and dtypes on every rank)."""
        ...

    def gather(self, values: Sequence[TensorData]) -> list[list[TensorData]]:
        """Every rank's `values`, in rank order, on every rank (shapes may differ by rank)."""
        ...

    def broadcast(self, values: Sequence[TensorData]) -> list[TensorData]:
        """Rank 0's `values` on every rank."""
        ...
