"""SqliteDataset reads tables as dict items; SqliteDatasetWriter writes them all-or-nothing."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pyrite.dataset import DataLoader, DatasetError, SqliteDataset, SqliteDatasetWriter

ITEMS = [
    {"text": "hello", "label": 1, "score": 0.5, "tokens": [3, 4], "ok": True, "raw": b"\x00\x01"},
    {"text": "world", "label": 0, "score": 2.0, "tokens": [], "ok": False, "raw": b""},
    {"text": "again", "label": 2, "score": 1.0, "tokens": [{"a": 1}], "ok": True, "raw": None},
]


def test_roundtrip_keeps_types(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    with SqliteDataset.create(db, "train", ITEMS) as ds:
        assert ds.len() == 3
        assert ds.columns == ["text", "label", "score", "tokens", "ok", "raw"]
        assert [ds.get(i) for i in range(3)] == ITEMS
        assert ds.get(3) is None
        assert ds.get(-1) is None
        assert type(ds.get(0)["ok"]) is bool  # type: ignore[index]


def test_columns_select_a_subset_in_order(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    SqliteDataset.create(db, "train", ITEMS).close()
    with SqliteDataset(db, "train", columns=["label", "text"]) as ds:
        assert ds.get(1) == {"label": 0, "text": "world"}
    with pytest.raises(DatasetError, match=r"no columns \['nope'\]"):
        SqliteDataset(db, "train", columns=["nope"])


def test_several_tables_in_one_file(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    SqliteDataset.create(db, "train", ITEMS[:2]).close()
    SqliteDataset.create(db, "test", ITEMS[2:]).close()
    with SqliteDataset(db, "train") as train, SqliteDataset(db, "test") as test:
        assert train.len() == 2
        assert test.len() == 1
        assert test.get(0)["text"] == "again"  # type: ignore[index]


def test_existing_table_needs_overwrite(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    SqliteDataset.create(db, "train", ITEMS).close()
    with pytest.raises(DatasetError, match="already has a table 'train'; pass overwrite=True"):
        SqliteDataset.create(db, "train", ITEMS[:1])
    with SqliteDataset.create(db, "train", ITEMS[:1], overwrite=True) as ds:
        assert ds.len() == 1


def test_failed_write_leaves_the_file_untouched(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    SqliteDataset.create(db, "train", ITEMS).close()
    before = db.read_bytes()
    with pytest.raises(RuntimeError, match="boom"), SqliteDatasetWriter(db, "more") as w:
        w.write({"x": 1})
        raise RuntimeError("boom")
    assert db.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["data.db"]  # no temporary file left
    with SqliteDataset(db, "train") as ds:
        assert ds.len() == 3


def test_no_file_appears_until_the_writer_finishes(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    with SqliteDatasetWriter(db, "t") as w:
        w.write({"x": 1})
        assert not db.exists()
    assert db.exists()


def test_writer_rejects_inconsistent_items(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    with (
        pytest.raises(DatasetError, match=r"item 1 has columns \['y'\]"),
        SqliteDatasetWriter(db, "t") as w,
    ):
        w.write({"x": 1})
        w.write({"x": 2, "y": 3})
    with pytest.raises(DatasetError, match="column 'x' holds a str but the column is INTEGER"):
        with SqliteDatasetWriter(db, "t") as w:
            w.write({"x": 1})
            w.write({"x": "12"})
    with pytest.raises(DatasetError, match="cannot store a set"), SqliteDatasetWriter(db, "t") as w:
        w.write({"x": {1, 2}})  # type: ignore[dict-item]
    assert not db.exists()


def test_missing_values_are_null_and_ints_fit_real_columns(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    with SqliteDatasetWriter(db, "t") as w:
        w.write({"a": 1.5, "b": "x"})
        w.write({"a": 2})
    with SqliteDataset(db, "t") as ds:
        assert ds.get(1) == {"a": 2.0, "b": None}


def test_explicit_columns_allow_an_empty_table(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    with SqliteDatasetWriter(db, "t", columns={"a": "INTEGER", "tags": "JSON"}):
        pass
    with SqliteDataset(db, "t") as ds:
        assert ds.len() == 0
        assert ds.columns == ["a", "tags"]
    with pytest.raises(DatasetError, match="nothing was written"), SqliteDatasetWriter(db, "u"):
        pass


def test_reads_tables_made_by_other_tools_with_rowid_gaps(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute('CREATE TABLE "my table" (name TEXT, n INTEGER)')
    con.executemany('INSERT INTO "my table" VALUES (?, ?)', [(f"r{i}", i) for i in range(6)])
    con.execute('DELETE FROM "my table" WHERE n IN (1, 4)')
    con.commit()
    con.close()
    with SqliteDataset(db, "my table") as ds:
        assert ds.len() == 4
        assert [item["n"] for item in ds] == [0, 2, 3, 5]


def test_missing_file_or_table(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no database file"):
        SqliteDataset(tmp_path / "none.db", "t")
    db = tmp_path / "data.db"
    SqliteDataset.create(db, "train", ITEMS).close()
    with pytest.raises(DatasetError, match=r"no table 'valid'; tables: \['train'\]"):
        SqliteDataset(db, "valid")


def test_reads_from_many_threads(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    items = [{"i": i, "sq": i * i} for i in range(200)]
    with SqliteDataset.create(db, "t", items) as ds:
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(ds.get, range(200)))
        assert got == items
        loader = DataLoader(ds, lambda b: [x["i"] for x in b], batch_size=16, num_workers=3)
        assert [i for batch in loader for i in batch] == list(range(200))


def test_connections_are_reused_across_epochs(tmp_path: Path) -> None:
    db = tmp_path / "data.db"
    with SqliteDataset.create(db, "t", [{"i": i} for i in range(50)]) as ds:
        loader = DataLoader(ds, len, batch_size=5, num_workers=3)
        for _ in range(4):
            assert sum(loader) == 50
        # one per concurrent reader at most, not one per thread ever started
        assert len(ds._connections) <= 3
    assert ds._connections == []
    # a closed dataset reopens on demand
    assert ds.get(49) == {"i": 49}
    ds.close()
