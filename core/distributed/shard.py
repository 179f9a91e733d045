"""`ShardedDataLoader`: one rank's part of every batch a `DataLoader` would make.

Every rank draws the same shuffled order (the loader's seed and epoch) and cuts each batch as
`DataParallel` cuts a batch between devices (`slice_sizes`: nearly equal, the larger first), so
the ranks together see exactly the batches of one process, each item once, in the same steps.
Only the rank's own items are fetched and batched.
"""

from __future__ import annotations

from typing import Any

from ..dataset.dataloader import DataLoader
from ..errors import ConfigError
from .batches import slice_sizes


class ShardedDataLoader(DataLoader[Any, Any]):
    """Rank `rank` of `world_size`'s slice of each batch of `loader` (same length, same
    `set_epoch`, same seed)."""

    def __init__(self, loader: DataLoader[Any, Any], rank: int, world_size: int) -> None:
        if not 0 <= rank < world_size:
            raise ConfigError(f"ShardedDataLoader: rank {rank} is not in 0..{world_size - 1}")
        if loader.batch_size < world_size:
            raise ConfigError(f"ShardedDataLoader: a batch of {loader.batch_size} cannot give "
                              f"each of {world_size} workers an item; raise the batch size to "
                              f"at least {world_size}")
        super().__init__(loader.dataset, loader.batcher, batch_size=loader.batch_size,
                         shuffle=loader.shuffle, seed=loader.seed,
                         num_workers=loader.num_workers, drop_last=loader.drop_last)
        self.epoch = loader.epoch
        self.rank, self.world_size = rank, world_size

    def _batches(self, epoch: int) -> list[list[int]]:
        out = []
        for indices in super()._batches(epoch):
            sizes = slice_sizes(len(indices), self.world_size)
            if sizes[self.rank] == 0:
                raise ConfigError(f"ShardedDataLoader: the epoch's last batch has "
                                  f"{len(indices)} item(s), fewer than the {self.world_size} "
                                  f"workers; use drop_last or a dataset length that leaves "
                                  f"at least one item per worker")
            start = sum(sizes[: self.rank])
            out.append(indices[start : start + sizes[self.rank]])
        return out
