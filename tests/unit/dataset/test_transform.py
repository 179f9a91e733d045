"""PartialDataset, MapperDataset, ComposedDataset, WindowsDataset: lazy index arithmetic."""

from __future__ import annotations

import pytest

from pyrite.dataset import (
    ComposedDataset,
    DatasetError,
    InMemDataset,
    MapperDataset,
    PartialDataset,
    WindowsDataset,
)


class Counting(InMemDataset[int]):
    """Records which indices were read, to prove the transforms are lazy."""

    def __init__(self, n: int) -> None:
        super().__init__(range(n))
        self.reads: list[int] = []

    def get(self, index: int) -> int | None:
        self.reads.append(index)
        return super().get(index)


def test_partial_is_a_renumbered_view() -> None:
    base = Counting(10)
    part = PartialDataset(base, 3, 7)
    assert base.reads == []
    assert part.len() == 4
    assert part.get(0) == 3
    assert part.get(3) == 6
    assert part.get(4) is None
    assert part.get(-1) is None
    assert base.reads == [3, 6]


def test_partial_clamps_end_to_the_dataset() -> None:
    base = InMemDataset(range(5))
    assert list(PartialDataset(base, 2, 100)) == [2, 3, 4]
    assert PartialDataset(base, 7, 9).len() == 0


@pytest.mark.parametrize(("start", "end"), [(-1, 3), (4, 2)])
def test_partial_rejects_bad_ranges(start: int, end: int) -> None:
    with pytest.raises(DatasetError, match="0 <= start <= end"):
        PartialDataset(InMemDataset(range(5)), start, end)


def test_split_sizes_differ_by_at_most_one_and_cover_everything() -> None:
    parts = PartialDataset.split(InMemDataset(range(10)), 3)
    assert [p.len() for p in parts] == [4, 3, 3]
    assert [x for p in parts for x in p] == list(range(10))
    assert [p.len() for p in PartialDataset.split(InMemDataset(range(2)), 4)] == [1, 1, 0, 0]
    with pytest.raises(DatasetError, match="at least 1"):
        PartialDataset.split(InMemDataset(range(2)), 0)


def test_train_test_split_like_the_burn_book() -> None:
    ds = InMemDataset(range(10))
    n = ds.len()
    train = PartialDataset(ds, 0, n * 8 // 10)
    test = PartialDataset(ds, n * 8 // 10, n)
    assert list(train) == list(range(8))
    assert list(test) == [8, 9]


def test_mapper_applies_fn_on_each_get() -> None:
    calls: list[int] = []

    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    ds = MapperDataset(InMemDataset([1, 2, 3]), double)
    assert calls == []
    assert ds.len() == 3
    assert ds.get(1) == 4
    assert ds.get(3) is None
    assert calls == [2]
    assert list(ds) == [2, 4, 6]


def test_mapper_can_change_the_item_type() -> None:
    ds = MapperDataset(InMemDataset([{"x": 1}, {"x": 2}]), lambda d: str(d["x"]))
    assert list(ds) == ["1", "2"]


def test_composed_concatenates_and_skips_empty_parts() -> None:
    ds = ComposedDataset([InMemDataset("ab"), InMemDataset(""), InMemDataset("cde")])
    assert ds.len() == 5
    assert list(ds) == ["a", "b", "c", "d", "e"]
    assert ds.get(2) == "c"
    assert ds.get(5) is None
    assert ds.get(-1) is None
    assert ComposedDataset([]).len() == 0
    assert ComposedDataset([]).get(0) is None


def test_composed_reads_only_the_owning_dataset() -> None:
    a, b = Counting(2), Counting(3)
    assert ComposedDataset([a, b]).get(3) == 1
    assert a.reads == []
    assert b.reads == [1]


def test_windows_are_overlapping_runs() -> None:
    ds = WindowsDataset(InMemDataset([1, 2, 3, 4, 5]), 3)
    assert ds.len() == 3
    assert list(ds) == [[1, 2, 3], [2, 3, 4], [3, 4, 5]]
    assert ds.get(3) is None


def test_windows_edge_sizes() -> None:
    base = InMemDataset([1, 2])
    assert list(WindowsDataset(base, 1)) == [[1], [2]]
    assert list(WindowsDataset(base, 2)) == [[1, 2]]
    assert WindowsDataset(base, 3).len() == 0
    with pytest.raises(DatasetError, match="at least 1"):
        WindowsDataset(base, 0)


def test_transforms_compose() -> None:
    ds = MapperDataset(
        WindowsDataset(
            PartialDataset(
                ComposedDataset([InMemDataset(range(3)), InMemDataset(range(10, 13))]), 1, 5
            ),
            2,
        ),
        sum,
    )
    # composed: 0 1 2 10 11 12 -> partial [1, 5): 1 2 10 11 -> windows of 2 -> sums
    assert list(ds) == [3, 12, 21]
