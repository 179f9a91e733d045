"""InMemDataset and its CSV loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyrite.dataset import DatasetError, InMemDataset, MapperDataset


def test_items_are_copied_and_indexed() -> None:
    source = [10, 20, 30]
    ds = InMemDataset(source)
    source.append(40)
    assert ds.len() == 3
    assert [ds.get(i) for i in range(4)] == [10, 20, 30, None]
    assert ds.get(-1) is None


def test_accepts_any_iterable() -> None:
    assert list(InMemDataset(x * x for x in range(4))) == [0, 1, 4, 9]
    assert InMemDataset([]).len() == 0


def test_from_dataset_materialises_a_lazy_dataset() -> None:
    calls = []

    def slow(x: int) -> int:
        calls.append(x)
        return -x

    ds = InMemDataset.from_dataset(MapperDataset(InMemDataset([1, 2, 3]), slow))
    assert list(ds) == [-1, -2, -3]
    list(ds)
    assert calls == [1, 2, 3]


def test_from_csv_with_header_gives_dicts(tmp_path: Path) -> None:
    p = tmp_path / "houses.csv"
    p.write_text('rooms,city,price\n3,"Paris, FR",250.5\n\n5,Oslo,410\n', encoding="utf-8")
    ds = InMemDataset.from_csv(p)
    assert ds.len() == 2
    assert ds.get(0) == {"rooms": "3", "city": "Paris, FR", "price": "250.5"}
    assert ds.get(1) == {"rooms": "5", "city": "Oslo", "price": "410"}


def test_from_csv_parse_delimiter_and_no_header(tmp_path: Path) -> None:
    p = tmp_path / "data.tsv"
    p.write_text("1\t0.5\n2\t1.5\n", encoding="utf-8")
    ds = InMemDataset.from_csv(
        p, delimiter="\t", header=False, parse=lambda r: (int(r[0]), float(r[1]))
    )
    assert list(ds) == [(1, 0.5), (2, 1.5)]
    raw = InMemDataset.from_csv(p, delimiter="\t", header=False)
    assert raw.get(0) == ["1", "0.5"]


def test_from_csv_drops_a_byte_order_mark(tmp_path: Path) -> None:
    p = tmp_path / "excel.csv"
    p.write_bytes(b"\xef\xbb\xbfa,b\n1,2\n")
    assert InMemDataset.from_csv(p).get(0) == {"a": "1", "b": "2"}


def test_from_csv_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.csv"
    p.write_text("")
    assert InMemDataset.from_csv(p).len() == 0


def test_from_csv_ragged_row_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("a,b\n1,2\n3\n")
    with pytest.raises(DatasetError, match=r"bad\.csv line 3 has 1 fields, the first row has 2"):
        InMemDataset.from_csv(p)


def test_from_csv_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read .*nope.csv"):
        InMemDataset.from_csv(tmp_path / "nope.csv")


def test_from_csv_repeated_header(tmp_path: Path) -> None:
    p = tmp_path / "dup.csv"
    p.write_text("a,a\n1,2\n")
    with pytest.raises(DatasetError, match="repeated column names"):
        InMemDataset.from_csv(p)
