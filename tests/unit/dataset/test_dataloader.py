"""DataLoader and DataLoaderBuilder: batching, deterministic shuffles, threaded fetching."""

from __future__ import annotations

import threading
import time

import pytest

from pyrite.dataset import (
    DataLoader,
    DataLoaderBuilder,
    DatasetError,
    InMemDataset,
    MapperDataset,
)


def collect(loader: DataLoader[int, list[int]]) -> list[list[int]]:
    return list(loader)


def test_batches_in_order_with_a_short_last_batch() -> None:
    loader = DataLoader(InMemDataset(range(7)), list, batch_size=3)
    assert len(loader) == 3
    assert collect(loader) == [[0, 1, 2], [3, 4, 5], [6]]


def test_drop_last() -> None:
    loader = DataLoader(InMemDataset(range(7)), list, batch_size=3, drop_last=True)
    assert len(loader) == 2
    assert collect(loader) == [[0, 1, 2], [3, 4, 5]]
    exact = DataLoader(InMemDataset(range(6)), list, batch_size=3, drop_last=True)
    assert len(exact) == 2


def test_batcher_result_is_yielded() -> None:
    loader = DataLoader(
        InMemDataset([{"x": 1}, {"x": 2}, {"x": 3}]), lambda b: sum(i["x"] for i in b), batch_size=2
    )
    assert list(loader) == [3, 3]


def test_empty_dataset_gives_no_batches() -> None:
    loader = DataLoader(InMemDataset([]), list, batch_size=4)
    assert len(loader) == 0
    assert list(loader) == []


def test_shuffle_changes_each_epoch_and_repeats_across_loaders() -> None:
    ds = InMemDataset(range(50))
    a = DataLoader(ds, list, batch_size=8, shuffle=True, seed=1)
    b = DataLoader(ds, list, batch_size=8, shuffle=True, seed=1)
    a1, a2 = collect(a), collect(a)
    assert sorted(x for batch in a1 for x in batch) == list(range(50))
    assert a1 != a2
    assert a.epoch == 2
    assert [collect(b), collect(b)] == [a1, a2]
    other = DataLoader(ds, list, batch_size=8, shuffle=True, seed=2)
    assert collect(other) != a1


def test_epoch_advances_at_iter_and_set_epoch_resumes() -> None:
    ds = InMemDataset(range(30))
    a = DataLoader(ds, list, batch_size=4, shuffle=True, seed=7)
    it = iter(a)
    assert a.epoch == 1
    first = list(it)
    second = collect(a)
    b = DataLoader(ds, list, batch_size=4, shuffle=True, seed=7)
    b.set_epoch(1)
    assert collect(b) == second
    assert first != second


def test_no_shuffle_is_the_same_every_epoch() -> None:
    loader = DataLoader(InMemDataset(range(5)), list, batch_size=2, seed=3)
    assert collect(loader) == collect(loader) == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_workers_give_exactly_the_serial_batches(workers: int) -> None:
    def jittery(x: int) -> int:
        time.sleep(0.0005 * (x % 3))  # later items may finish first
        return x

    ds = MapperDataset(InMemDataset(range(97)), jittery)
    serial = DataLoader(ds, list, batch_size=10, shuffle=True, seed=11)
    threaded = DataLoader(ds, list, batch_size=10, shuffle=True, seed=11, num_workers=workers)
    for _ in range(2):
        assert collect(threaded) == collect(serial)


def test_workers_fetch_on_other_threads_and_batch_on_this_one() -> None:
    fetch_threads: set[str] = set()
    batch_threads: set[str] = set()

    def record(x: int) -> int:
        fetch_threads.add(threading.current_thread().name)
        return x

    def batcher(items: list[int]) -> list[int]:
        batch_threads.add(threading.current_thread().name)
        return items

    loader = DataLoader(
        MapperDataset(InMemDataset(range(20)), record), batcher, batch_size=5, num_workers=2
    )
    assert list(loader)[-1] == [15, 16, 17, 18, 19]
    assert all(name.startswith("pyrite-dataloader") for name in fetch_threads)
    assert batch_threads == {threading.current_thread().name}


def test_workers_stop_when_the_consumer_stops() -> None:
    before = threading.active_count()
    loader = DataLoader(InMemDataset(range(100)), list, batch_size=2, num_workers=4)
    for batch in loader:
        assert batch == [0, 1]
        break
    assert threading.active_count() == before


def test_errors_in_get_reach_the_caller() -> None:
    def fail_on_5(x: int) -> int:
        if x == 5:
            raise KeyError("item 5 is broken")
        return x

    loader = DataLoader(
        MapperDataset(InMemDataset(range(10)), fail_on_5), list, batch_size=4, num_workers=2
    )
    with pytest.raises(KeyError, match="item 5 is broken"):
        list(loader)


def test_a_dataset_returning_none_in_range_is_reported() -> None:
    class Holey(InMemDataset[int]):
        def get(self, index: int) -> int | None:
            return None if index == 2 else super().get(index)

    with pytest.raises(DatasetError, match=r"get\(2\) returned None"):
        list(DataLoader(Holey(range(4)), list, batch_size=2))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"batch_size": 0}, "batch_size"), ({"batch_size": 1, "num_workers": -1}, "num_workers")],
)
def test_bad_settings(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        DataLoader(InMemDataset([1]), list, **kwargs)


def test_builder_matches_burn_names() -> None:
    ds = InMemDataset(range(10))
    built = DataLoaderBuilder(list).batch_size(4).shuffle(5).num_workers(2).build(ds)
    direct = DataLoader(ds, list, batch_size=4, shuffle=True, seed=5)
    assert (built.batch_size, built.shuffle, built.seed, built.num_workers) == (4, True, 5, 2)
    assert collect(built) == collect(direct)
    assert collect(DataLoaderBuilder(list).build(InMemDataset("ab"))) == [["a"], ["b"]]
    assert len(DataLoaderBuilder(list).batch_size(3).drop_last().build(ds)) == 3
