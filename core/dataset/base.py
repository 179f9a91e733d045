"""The `Dataset` contract: a fixed-length collection of items with random access.

This module owns the protocol and the Python conveniences built on its two methods.
Storage (memory, SQLite, files) and transforms live in their own modules.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Protocol, TypeVar

T_co = TypeVar("T_co", covariant=True)


class Dataset(Protocol[T_co]):
    """A fixed-length collection of items, each reachable in (about) constant time.

    As in Burn, the contract is two methods: `get(index)` returns the item or `None` when `index`
    is out of range (negative included), and `len()` returns the number of items. Everything in
    pyrite that consumes a dataset (transforms, `DataLoader`) calls only these two, so any object
    with them works. Subclassing `Dataset` also gives `len(ds)`, `ds[i]` (raising `IndexError`,
    and accepting negative indices as Python sequences do) and `for item in ds`.

    Items are whatever the dataset chooses: pyrite's own datasets return dicts.
    A dataset's length must not change while it is in use: transforms cache lengths.

    >>> class Squares(Dataset[int]):
    ...     def get(self, index: int) -> int | None:
    ...         return index * index if 0 <= index < 4 else None
    ...     def len(self) -> int:
    ...         return 4
    >>> ds = Squares()
    >>> ds.get(3), ds.get(4), len(ds), ds[-1], list(ds)
    (9, None, 4, 9, [0, 1, 4, 9])
    """

    def get(self, index: int) -> T_co | None:
        """The item at `index`, or None when `index` is outside `0 <= index < len()`."""
        ...

    def len(self) -> int:
        """The number of items."""
        ...

    def __len__(self) -> int:
        return self.len()

    def __getitem__(self, index: int) -> T_co:
        # operator.index rejects floats and slices with a TypeError, as list does
        i = operator.index(index)
        n = self.len()
        if i < 0:
            i += n
        item = self.get(i) if 0 <= i < n else None
        if item is None:
            raise IndexError(f"dataset index {index} out of range for a dataset of {n} items")
        return item

    def __iter__(self) -> Iterator[T_co]:
        for i in range(self.len()):
            item = self.get(i)
            if item is None:
                raise IndexError(
                    f"dataset.get({i}) returned None; the dataset has {self.len()} items"
                )
            yield item
