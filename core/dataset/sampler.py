"""Random lazy transforms: `ShuffledDataset` (a permutation) and `SamplerDataset` (a draw).

Both draw their index map once, from `random.Random(seed)`, so `get(i)` is repeatable, the
result is the same on every run and Python version with the same seed, and a threaded
`DataLoader` stays deterministic. Index maps are `array('q')`: 8 bytes per item.
"""

from __future__ import annotations

import random
from array import array
from typing import TypeVar

from ..errors import DatasetError
from .base import Dataset

T = TypeVar("T")


def _fresh_seed() -> int:
    """A seed for callers that gave none: random, but then fixed for the object's life."""
    return random.SystemRandom().getrandbits(63)


class ShuffledDataset(Dataset[T]):
    """The items of `dataset` in a random order fixed by `seed`.

    Useful before splitting into train/validation parts. For a new order each epoch, shuffle
    in the `DataLoader` instead.

    >>> from pyrite.dataset import InMemDataset
    >>> ds = ShuffledDataset(InMemDataset(range(5)), seed=42)
    >>> sorted(ds) == [0, 1, 2, 3, 4], list(ds) == list(ShuffledDataset(InMemDataset(range(5)), 42))
    (True, True)
    """

    def __init__(self, dataset: Dataset[T], seed: int) -> None:
        self.dataset = dataset
        self.seed = seed
        order = list(range(dataset.len()))
        random.Random(seed).shuffle(order)
        self._order = array("q", order)

    def get(self, index: int) -> T | None:
        if 0 <= index < len(self._order):
            return self.dataset.get(self._order[index])
        return None

    def len(self) -> int:
        return len(self._order)


class SamplerDataset(Dataset[T]):
    """`size` items drawn at random from `dataset`; `size` may be smaller or larger than it.

    With `replacement=True` (the default, as in Burn) each position is an independent uniform
    draw. With `replacement=False` the draw walks through fresh random permutations of the
    dataset, so every item appears `size // len` or `size // len + 1` times.

    The draw is made at construction and kept (`seed=None` picks a random seed, kept in
    `self.seed`). Call `resample()` for a new draw, e.g. at each epoch; the k-th resample of
    a given seed is always the same. Burn instead draws on every `get`, which would make
    `get(i)` unrepeatable.

    >>> from pyrite.dataset import InMemDataset
    >>> ds = SamplerDataset(InMemDataset("abc"), 7, replacement=False, seed=1)
    >>> ds.len(), sorted(ds).count("a") in (2, 3)
    (7, True)
    """

    def __init__(
        self, dataset: Dataset[T], size: int, *, replacement: bool = True, seed: int | None = None
    ) -> None:
        if size < 0:
            raise DatasetError(f"SamplerDataset: size must be >= 0, got {size}")
        n = dataset.len()
        if n == 0 and size > 0:
            raise DatasetError(f"SamplerDataset: cannot draw {size} items from an empty dataset")
        self.dataset = dataset
        self.size = size
        self.replacement = replacement
        self.seed = _fresh_seed() if seed is None else seed
        self.round = 0
        self._indices = self._draw()

    def resample(self) -> None:
        """Draw a new set of indices (the next round of this seed)."""
        self.round += 1
        self._indices = self._draw()

    def _draw(self) -> array[int]:
        n = self.dataset.len()
        # round 0 uses the seed itself, so SamplerDataset(ds, k, seed=s) matches Random(s)
        rng = random.Random(self.seed if self.round == 0 else f"{self.seed}:{self.round}")
        if self.replacement:
            return array("q", (rng.randrange(n) for _ in range(self.size)))
        out = array("q")
        while len(out) < self.size:
            perm = list(range(n))
            rng.shuffle(perm)
            out.extend(perm[: self.size - len(out)])
        return out

    def get(self, index: int) -> T | None:
        if 0 <= index < len(self._indices):
            return self.dataset.get(self._indices[index])
        return None

    def len(self) -> int:
        return self.size
