"""ShuffledDataset and SamplerDataset: seeded, repeatable index maps."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pyrite.dataset import DatasetError, InMemDataset, SamplerDataset, ShuffledDataset


def test_shuffled_is_a_permutation() -> None:
    ds = ShuffledDataset(InMemDataset(range(100)), seed=3)
    items = list(ds)
    assert sorted(items) == list(range(100))
    assert items != list(range(100))
    assert ds.get(100) is None
    assert ds.get(-1) is None


def test_shuffled_is_reproducible_and_documented() -> None:
    a = list(ShuffledDataset(InMemDataset(range(20)), 42))
    b = list(ShuffledDataset(InMemDataset(range(20)), 42))
    c = list(ShuffledDataset(InMemDataset(range(20)), 43))
    assert a == b
    assert a != c
    # the order is random.Random(seed).shuffle of the indices: stable across runs and platforms
    expected = list(range(20))
    random.Random(42).shuffle(expected)
    assert a == expected


def test_shuffled_get_is_repeatable() -> None:
    ds = ShuffledDataset(InMemDataset("abcdef"), 0)
    assert [ds.get(2) for _ in range(3)] == [ds.get(2)] * 3


def test_sampler_with_replacement_draws_in_range() -> None:
    ds = SamplerDataset(InMemDataset(range(5)), 1000, seed=1)
    items = list(ds)
    assert ds.len() == 1000
    assert set(items) == set(range(5))
    # uniform: each value about 200 times
    assert all(150 < n < 250 for n in Counter(items).values())
    assert ds.get(1000) is None


def test_sampler_can_be_smaller_than_the_dataset() -> None:
    ds = SamplerDataset(InMemDataset(range(1000)), 10, seed=2)
    assert ds.len() == 10
    assert all(0 <= x < 1000 for x in ds)


def test_sampler_without_replacement_balances_counts() -> None:
    ds = SamplerDataset(InMemDataset(range(4)), 10, replacement=False, seed=5)
    counts = Counter(ds)
    assert sorted(counts.values()) == [2, 2, 3, 3]
    # the first len(dataset) draws are a permutation: no repeats before every item is seen
    assert sorted(list(ds)[:4]) == [0, 1, 2, 3]
    small = SamplerDataset(InMemDataset(range(10)), 6, replacement=False, seed=5)
    assert len(set(small)) == 6


def test_sampler_is_seeded_and_resamples_repeatably() -> None:
    base = InMemDataset(range(50))
    a = SamplerDataset(base, 20, seed=9)
    b = SamplerDataset(base, 20, seed=9)
    assert list(a) == list(b)
    first = list(a)
    a.resample()
    b.resample()
    assert list(a) == list(b)
    assert list(a) != first
    assert a.round == 1


def test_sampler_without_seed_picks_and_keeps_one() -> None:
    ds = SamplerDataset(InMemDataset(range(50)), 20)
    assert isinstance(ds.seed, int)
    assert list(ds) == list(ds)
    assert list(SamplerDataset(InMemDataset(range(50)), 20, seed=ds.seed)) == list(ds)


def test_sampler_errors() -> None:
    with pytest.raises(DatasetError, match="empty dataset"):
        SamplerDataset(InMemDataset([]), 3)
    with pytest.raises(DatasetError, match=">= 0"):
        SamplerDataset(InMemDataset([1]), -1)
    assert SamplerDataset(InMemDataset([]), 0).len() == 0
