"""HuggingfaceDatasetLoader over datasets built here (saved folders, local data files) with the
Hub switched off, and the `open_dataset` source spelling."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pyrite.dataset import (
    DataLoaderBuilder,
    DatasetError,
    HuggingfaceDataset,
    HuggingfaceDatasetLoader,
    Image,
    ShuffledDataset,
)
from pyrite.dataset.sources import open_dataset, split_names

datasets = pytest.importorskip("datasets")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No network: the Hub is off and the cache is private to the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def _png(value: int) -> dict[str, Any]:
    from PIL import Image as PilImage

    buf = io.BytesIO()
    PilImage.new("L", (28, 28), color=value).save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": None}


def _digits(n: int) -> Any:
    features = datasets.Features({
        "image": datasets.Image(),
        "label": datasets.ClassLabel(names=[str(d) for d in range(10)]),
        "note": datasets.Value("string"),
    })
    return datasets.Dataset.from_dict(
        {"image": [_png(i * 20 % 256) for i in range(n)], "label": [i % 10 for i in range(n)],
         "note": [f"digit {i}" for i in range(n)]}, features=features)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "digits"
    digits = _digits(40)
    datasets.DatasetDict({"train": digits, "test": digits.select(range(10))}).save_to_disk(path)
    return path


def test_saved_dataset_splits_items_and_classes(saved: Path) -> None:
    loader = HuggingfaceDatasetLoader(saved)
    assert sorted(loader.splits()) == ["test", "train"]
    train = loader.dataset("train")
    assert isinstance(train, HuggingfaceDataset) and train.len() == 40
    item = train.get(13)
    assert item is not None and item["label"] == 3 and item["note"] == "digit 13"
    assert isinstance(item["image"], Image) and item["image"].pixel(0, 0) == (4, 4, 4)
    assert train.classes("label") == [str(d) for d in range(10)]
    with pytest.raises(DatasetError, match="not a ClassLabel column"):
        train.classes("note")
    assert loader.dataset("test").len() == 10
    with pytest.raises(DatasetError, match=r"no split 'valid'.*\['train', 'test'\]"):
        loader.dataset("valid")
    only = loader.dataset("train", columns=["label"])
    assert only.get(0) == {"label": 0}


def test_local_data_files_load_through_the_datasets_cache(tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    _digits(30).to_parquet(folder / "train.parquet")
    ds = HuggingfaceDatasetLoader(folder, cache_dir=tmp_path / "cache").dataset("train")
    assert ds.len() == 30 and ds.get(29)["note"] == "digit 29"  # type: ignore[index]
    assert any((tmp_path / "cache").iterdir())  # the Arrow copy lives in the cache
    # loaded again: from the cache
    again = HuggingfaceDatasetLoader(folder).with_cache_dir(tmp_path / "cache").dataset("train")
    assert [again.get(i)["label"] for i in range(30)] == [ds.get(i)["label"] for i in range(30)]  # type: ignore[index]


def test_shuffled_and_selected_views_and_loader(saved: Path) -> None:
    train = HuggingfaceDatasetLoader(saved).dataset("train")
    shuffled = ShuffledDataset(train, seed=1)
    assert sorted(shuffled[i]["note"] for i in range(40)) == sorted(f"digit {i}" for i in range(40))
    loader = DataLoaderBuilder(lambda items: [it["label"] for it in items]).batch_size(8) \
        .shuffle(2).num_workers(2).build(train)
    batches = list(loader)
    assert len(batches) == 5 and sorted(sum(batches, [])) == sorted(i % 10 for i in range(40))
    # a selected (index-mapped) view is read through its own rows
    view = HuggingfaceDataset(_digits(20).select([5, 3]))
    assert [view.get(i)["note"] for i in range(2)] == ["digit 5", "digit 3"]  # type: ignore[index]


def test_uncached_dataset_is_a_clear_error(tmp_path: Path) -> None:
    loader = HuggingfaceDatasetLoader("nobody/not-a-dataset", cache_dir=tmp_path / "c")
    with pytest.raises(DatasetError, match=r"cannot load split 'train' of 'nobody/not-a-dataset'"
                                           r".*HF_HUB_OFFLINE=1"):
        loader.dataset("train")
    with pytest.raises(DatasetError, match="name is empty"):
        HuggingfaceDatasetLoader("")


def test_loader_options_as_in_burn(saved: Path) -> None:
    base = HuggingfaceDatasetLoader("mnist")
    tuned = base.with_subset("mnist").with_huggingface_token("t").with_revision("main") \
        .with_huggingface_cache_dir("/tmp/x")
    assert (tuned.subset, tuned.token, tuned.revision, tuned.cache_dir) == \
        ("mnist", "t", "main", "/tmp/x")
    assert base.subset is None and base.token is None  # each with_ returns a new loader


def test_open_dataset_sources(saved: Path, tmp_path: Path) -> None:
    hf = open_dataset(f"hf:{saved}", "test")
    assert hf.len() == 10 and sorted(split_names(f"hf:{saved}")) == ["test", "train"]
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "t.parquet")
    assert list(open_dataset(str(tmp_path / "t.parquet"))) == [{"a": 1}, {"a": 2}]
    db = tmp_path / "d.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE rows (a INTEGER)")
        con.execute("INSERT INTO rows VALUES (7)")
    assert list(open_dataset(f"{db}:rows")) == [{"a": 7}]
    with pytest.raises(DatasetError, match="single split"):
        open_dataset(str(tmp_path / "t.parquet"), "test")
    with pytest.raises(DatasetError, match="name the table"):
        open_dataset(str(db))
    with pytest.raises(DatasetError, match="not a dataset source"):
        open_dataset(str(tmp_path / "notes.txt"))
    with pytest.raises(DatasetError, match="no dataset given"):
        open_dataset("")
