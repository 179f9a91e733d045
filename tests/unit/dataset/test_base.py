"""The Dataset protocol: get/len and the Python conveniences built on them."""

from __future__ import annotations

import pytest

from pyrite.dataset import Dataset, InMemDataset, MapperDataset


class Letters(Dataset[str]):
    def get(self, index: int) -> str | None:
        return "abc"[index] if 0 <= index < 3 else None

    def len(self) -> int:
        return 3


def test_get_returns_none_out_of_range() -> None:
    ds = Letters()
    assert ds.get(0) == "a"
    assert ds.get(2) == "c"
    assert ds.get(3) is None


def test_python_conveniences_come_from_get_and_len() -> None:
    ds = Letters()
    assert len(ds) == 3
    assert ds[1] == "b"
    assert ds[-1] == "c"
    assert list(ds) == ["a", "b", "c"]


@pytest.mark.parametrize("index", [3, -4, 100])
def test_getitem_out_of_range_raises_index_error(index: int) -> None:
    with pytest.raises(IndexError, match="out of range"):
        Letters()[index]


def test_getitem_rejects_non_integers() -> None:
    with pytest.raises(TypeError):
        Letters()[1.0]  # type: ignore[index]  # the point of the test


def test_duck_typed_dataset_works_with_transforms() -> None:
    class Plain:  # not a Dataset subclass: only get and len
        def get(self, index: int) -> int | None:
            return index if 0 <= index < 2 else None

        def len(self) -> int:
            return 2

    assert list(MapperDataset(Plain(), lambda x: x + 1)) == [1, 2]


def test_iter_reports_a_dataset_that_breaks_its_length() -> None:
    class Liar(InMemDataset[int]):
        def len(self) -> int:
            return 5

    with pytest.raises(IndexError, match=r"get\(2\) returned None"):
        list(Liar([1, 2]))
