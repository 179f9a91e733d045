"""Lazy dataset transforms that only do index arithmetic: views, maps, concatenation, windows.

None of them copies items; each `get` forwards to the wrapped dataset(s). The random ones
(`SamplerDataset`, `ShuffledDataset`) live in `sampler.py`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..errors import DatasetError
from .base import Dataset

T = TypeVar("T")
U = TypeVar("U")


class PartialDataset(Dataset[T]):
    """The items `start <= i < end` of `dataset`, renumbered from 0 (Burn's `PartialDataset`).

    `end` past the dataset's length is clamped to it, so `PartialDataset(ds, 0, 10**9)` is all
    of `ds`. `0 <= start <= end` is required.

    >>> from pyrite.dataset import InMemDataset
    >>> list(PartialDataset(InMemDataset(range(10)), 2, 5))
    [2, 3, 4]
    """

    def __init__(self, dataset: Dataset[T], start: int, end: int) -> None:
        if not 0 <= start <= end:
            raise DatasetError(
                f"PartialDataset: need 0 <= start <= end, got start={start}, end={end}"
            )
        self.dataset = dataset
        self.start = start
        self.end = end

    def get(self, index: int) -> T | None:
        if 0 <= index < self.len():
            return self.dataset.get(self.start + index)
        return None

    def len(self) -> int:
        return max(min(self.end, self.dataset.len()) - self.start, 0)

    @classmethod
    def split(cls, dataset: Dataset[T], n: int) -> list[PartialDataset[T]]:
        """Cut `dataset` into `n` consecutive parts whose sizes differ by at most one.

        Sizes follow `numpy.array_split`: the first `len % n` parts get the extra item. (Burn's
        `split` gives the whole remainder to the last part instead.) Shuffle first for random
        splits: `PartialDataset.split(ShuffledDataset(ds, seed=0), 5)`.

        >>> from pyrite.dataset import InMemDataset
        >>> [list(p) for p in PartialDataset.split(InMemDataset(range(7)), 3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        """
        if n < 1:
            raise DatasetError(f"PartialDataset.split: n must be at least 1, got {n}")
        size, extra = divmod(dataset.len(), n)
        parts = []
        start = 0
        for k in range(n):
            end = start + size + (1 if k < extra else 0)
            parts.append(cls(dataset, start, end))
            start = end
        return parts


class MapperDataset(Dataset[U]):
    """`fn(item)` for each item of `dataset`, computed on every `get` (nothing is cached).

    Wrap the result in `InMemDataset.from_dataset` when `fn` is costly and the data is small.

    >>> from pyrite.dataset import InMemDataset
    >>> list(MapperDataset(InMemDataset([1, 2, 3]), lambda x: x * 10))
    [10, 20, 30]
    """

    def __init__(self, dataset: Dataset[T], fn: Callable[[T], U]) -> None:
        self.dataset = dataset
        self.fn = fn

    def get(self, index: int) -> U | None:
        item = self.dataset.get(index)
        return None if item is None else self.fn(item)

    def len(self) -> int:
        return self.dataset.len()


class ComposedDataset(Dataset[T]):
    """The concatenation of `datasets`: the items of the first, then of the second, and so on.

    Lengths are read once, at construction (datasets are fixed-length); `get` finds the right
    dataset by binary search.

    >>> from pyrite.dataset import InMemDataset
    >>> list(ComposedDataset([InMemDataset("ab"), InMemDataset("c")]))
    ['a', 'b', 'c']
    """

    def __init__(self, datasets: Sequence[Dataset[T]]) -> None:
        self.datasets = list(datasets)
        # ends[k] is one past the last global index served by datasets[k]
        self._ends: list[int] = []
        total = 0
        for ds in self.datasets:
            total += ds.len()
            self._ends.append(total)

    def get(self, index: int) -> T | None:
        if not 0 <= index < self.len():
            return None
        k = bisect.bisect_right(self._ends, index)
        start = self._ends[k - 1] if k > 0 else 0
        return self.datasets[k].get(index - start)

    def len(self) -> int:
        return self._ends[-1] if self._ends else 0


class WindowsDataset(Dataset[list[T]]):
    """Overlapping windows of `size` consecutive items: item `i` is `[ds[i], ..., ds[i+size-1]]`.

    There are `len(ds) - size + 1` windows (none when the dataset is shorter than `size`).
    Suited to sequences such as time series.

    >>> from pyrite.dataset import InMemDataset
    >>> list(WindowsDataset(InMemDataset([1, 2, 3, 4]), 3))
    [[1, 2, 3], [2, 3, 4]]
    """

    def __init__(self, dataset: Dataset[T], size: int) -> None:
        if size < 1:
            raise DatasetError(f"WindowsDataset: size must be at least 1, got {size}")
        self.dataset = dataset
        self.size = size

    def get(self, index: int) -> list[T] | None:
        if not 0 <= index < self.len():
            return None
        window = []
        for i in range(index, index + self.size):
            item = self.dataset.get(i)
            if item is None:
                return None
            window.append(item)
        return window

    def len(self) -> int:
        return max(self.dataset.len() - self.size + 1, 0)
