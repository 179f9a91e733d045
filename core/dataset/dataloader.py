"""`DataLoader`: batches of dataset items, optionally shuffled and fetched by threads.

The loader owns the order of items and the fetching; turning a list of items into tensors is
the `Batcher`'s job, and runs in the iterating thread (where the device lives).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, Protocol, TypeVar

from ..errors import DatasetError
from .base import Dataset

I = TypeVar("I")  # noqa: E741  # item
O = TypeVar("O")  # noqa: E741  # batch
O_co = TypeVar("O_co", covariant=True)

# batches fetched ahead of the one being consumed when num_workers > 0
_PREFETCH = 2


class Batcher(Protocol[I, O_co]):
    """Turns a list of items into one batch (e.g. stacks images into an NCHW tensor).

    Any callable `fn(items: list[Item]) -> Batch` is a batcher. Burn's `Batcher::batch` also
    takes a device; in pyrite the batcher holds its device itself.
    """

    def __call__(self, items: list[I]) -> O_co: ...


class DataLoader(Generic[I, O]):
    """Iterate over `dataset` in batches of `batch_size` items, yielding `batcher(items)`.

    Each `for batch in loader` is one epoch. With `shuffle=True` the order is a permutation
    drawn from `(seed, epoch)`, so it changes every epoch and repeats exactly on every run with
    the same seed; `seed=None` picks a random seed once, at construction (kept in `self.seed`).
    `seed` has no effect without `shuffle`. The epoch counter advances when an iteration starts;
    `set_epoch` moves it, e.g. to resume training.

    `num_workers > 0` fetches items (`dataset.get`) on that many threads, up to two batches
    ahead; batches come out in the same order and with the same items as with
    `num_workers=0`. Threads help when `get` waits on I/O or releases the GIL (file reads,
    image decoding, SQLite); in the browser (Pyodide has no threads) keep `num_workers=0`.

    The last batch is smaller when `batch_size` does not divide the length, unless
    `drop_last=True` drops it. `len(loader)` is the number of batches per epoch.

    >>> from pyrite.dataset import InMemDataset
    >>> loader = DataLoader(InMemDataset(range(5)), sum, batch_size=2)
    >>> len(loader), list(loader)
    (3, [1, 5, 4])
    """

    def __init__(
        self,
        dataset: Dataset[I],
        batcher: Callable[[list[I]], O],
        *,
        batch_size: int,
        shuffle: bool = False,
        seed: int | None = None,
        num_workers: int = 0,
        drop_last: bool = False,
    ) -> None:
        if batch_size < 1:
            raise DatasetError(f"DataLoader: batch_size must be at least 1, got {batch_size}")
        if num_workers < 0:
            raise DatasetError(f"DataLoader: num_workers must be >= 0, got {num_workers}")
        self.dataset = dataset
        self.batcher = batcher
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = random.SystemRandom().getrandbits(63) if seed is None else seed
        self.num_workers = num_workers
        self.drop_last = drop_last
        self.epoch = 0
        self._skip = 0  # batches the next iteration leaves out (set_epoch)

    def __len__(self) -> int:
        n = self.dataset.len()
        if self.drop_last:
            return n // self.batch_size
        return -(-n // self.batch_size)

    def set_epoch(self, epoch: int, *, skip: int = 0) -> None:
        """Make the next iteration epoch `epoch` (its shuffle order) and count on from there.

        `skip=k` starts that iteration after the epoch's first `k` batches, without fetching
        or batching them: a training run resumed in the middle of an epoch sees the batches it
        had not seen yet, in the same order.
        """
        if skip < 0:
            raise DatasetError(f"DataLoader.set_epoch: skip must be >= 0, got {skip}")
        self.epoch = epoch
        self._skip = skip

    def order(self, epoch: int) -> list[int]:
        """The dataset indices in the order epoch `epoch` visits them."""
        if self.shuffle:
            # a str seed is hashed with sha512: stable across runs, unlike hash()
            rng = random.Random(f"pyrite.DataLoader:{self.seed}:{epoch}")
            # a dataset that streams from storage (ParquetDataset) may offer an order that
            # reads its storage in large pieces
            local = getattr(self.dataset, "shuffled_order", None)
            if callable(local):
                return list(local(rng))
            indices = list(range(self.dataset.len()))
            rng.shuffle(indices)
            return indices
        return list(range(self.dataset.len()))

    def _batches(self, epoch: int) -> list[list[int]]:
        order = self.order(epoch)
        size = self.batch_size
        stop = len(self) * size
        return [order[i : min(i + size, len(order))] for i in range(0, stop, size)]

    def _fetch(self, index: int) -> I:
        item = self.dataset.get(index)
        if item is None:
            raise DatasetError(
                f"DataLoader: dataset.get({index}) returned None, but the dataset says it has "
                f"{self.dataset.len()} items"
            )
        return item

    def __iter__(self) -> Iterator[O]:
        # not a generator itself, so the epoch advances at iter(), not at the first next()
        batches = self._batches(self.epoch)[self._skip:]
        self.epoch += 1
        self._skip = 0
        if self.num_workers == 0:
            return self._serial(batches)
        return self._threaded(batches)

    def _serial(self, batches: list[list[int]]) -> Iterator[O]:
        # a columnar dataset reads a whole batch in one call (the indices are in range)
        many = getattr(self.dataset, "get_many", None)
        for indices in batches:
            if callable(many):
                yield self.batcher(many(indices))
            else:
                yield self.batcher([self._fetch(i) for i in indices])

    def _threaded(self, batches: list[list[int]]) -> Iterator[O]:
        pool = ThreadPoolExecutor(self.num_workers, thread_name_prefix="pyrite-dataloader")
        pending: deque[list[Future[I]]] = deque()
        todo = iter(batches)

        def submit_next() -> None:
            indices = next(todo, None)
            if indices is not None:
                pending.append([pool.submit(self._fetch, i) for i in indices])

        try:
            for _ in range(_PREFETCH):
                submit_next()
            while pending:
                items = [f.result() for f in pending.popleft()]
                submit_next()
                yield self.batcher(items)
        finally:
            # also runs when the consumer stops early (break) or get() raised
            pool.shutdown(wait=True, cancel_futures=True)


class DataLoaderBuilder(Generic[I, O]):
    """Burn-style builder: `DataLoaderBuilder(batcher).batch_size(64).shuffle(42).build(ds)`.

    Defaults: batch size 1, no shuffling, no worker threads, last partial batch kept.

    >>> from pyrite.dataset import InMemDataset
    >>> loader = DataLoaderBuilder(list).batch_size(2).shuffle(7).build(InMemDataset(range(4)))
    >>> sorted(x for batch in loader for x in batch)
    [0, 1, 2, 3]
    """

    def __init__(self, batcher: Callable[[list[I]], O]) -> None:
        self._batcher = batcher
        self._batch_size = 1
        self._shuffle = False
        self._seed: int | None = None
        self._num_workers = 0
        self._drop_last = False

    def batch_size(self, batch_size: int) -> DataLoaderBuilder[I, O]:
        """Items per batch."""
        self._batch_size = batch_size
        return self

    def shuffle(self, seed: int) -> DataLoaderBuilder[I, O]:
        """Shuffle each epoch, with orders drawn from `seed` (see `DataLoader`)."""
        self._shuffle = True
        self._seed = seed
        return self

    def num_workers(self, num_workers: int) -> DataLoaderBuilder[I, O]:
        """Threads fetching items; 0 fetches in the iterating thread."""
        self._num_workers = num_workers
        return self

    def drop_last(self, drop_last: bool = True) -> DataLoaderBuilder[I, O]:
        """Drop the last batch when it is smaller than the batch size."""
        self._drop_last = drop_last
        return self

    def build(self, dataset: Dataset[I]) -> DataLoader[I, O]:
        """The loader over `dataset` with the settings chosen so far."""
        return DataLoader(
            dataset,
            self._batcher,
            batch_size=self._batch_size,
            shuffle=self._shuffle,
            seed=self._seed,
            num_workers=self._num_workers,
            drop_last=self._drop_last,
        )
