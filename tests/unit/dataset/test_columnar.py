"""Columnar sources: ParquetDataset (streamed by row group), DataframeDataset (polars, pandas),
ArrowDataset, and the image/audio column decoders. Everything is built locally (offline)."""

from __future__ import annotations

import io
import random
import struct
import wave
from pathlib import Path

import numpy as np
import pytest

from pyrite.dataset import (
    ArrowDataset,
    Audio,
    DataframeDataset,
    DataLoaderBuilder,
    DatasetError,
    Image,
    MapperDataset,
    ParquetDataset,
    PartialDataset,
    SamplerDataset,
    ShuffledDataset,
    WindowsDataset,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS = [
    {"text": f"row {i}", "label": i % 7, "score": i / 4, "tokens": list(range(i % 3)),
     "raw": bytes([i % 256]) * (i % 4), "maybe": None if i % 5 == 0 else i}
    for i in range(1000)
]


def _png(value: int, size: tuple[int, int] = (4, 3), mode: str = "L") -> bytes:
    from PIL import Image as PilImage

    buf = io.BytesIO()
    PilImage.new(mode, size, color=value).save(buf, format="PNG")
    return buf.getvalue()


def _wav(samples: list[int], rate: int = 8000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(struct.pack(f"<{len(samples)}h", *samples))
    return buf.getvalue()


@pytest.fixture
def parquet_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path, row_group_size=128)
    return path


def test_parquet_items_in_order_across_row_groups(parquet_file: Path) -> None:
    ds = ParquetDataset(parquet_file)
    assert ds.len() == len(ROWS) and ds.num_row_groups == 8
    assert list(ds) == ROWS
    assert ds.get(len(ROWS)) is None and ds.get(-1) is None
    assert ds[-1] == ROWS[-1]


def test_parquet_random_access_and_columns(parquet_file: Path) -> None:
    ds = ParquetDataset(parquet_file, columns=["label", "text"], cache_bytes=1)
    order = list(range(len(ROWS)))
    random.Random(3).shuffle(order)
    for i in order[:300]:
        assert ds.get(i) == {"label": ROWS[i]["label"], "text": ROWS[i]["text"]}
    assert ds.columns == ["label", "text"]


def test_items_are_independent_copies(parquet_file: Path) -> None:
    ds = ParquetDataset(parquet_file)
    first = ds.get(1)
    assert first is not None
    first["text"] = "changed"
    assert ds.get(1) == ROWS[1]


def test_parquet_folder_reads_files_in_name_order(tmp_path: Path) -> None:
    pq.write_table(pa.Table.from_pylist(ROWS[500:]), tmp_path / "b.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[:500]), tmp_path / "a.parquet")
    assert list(ParquetDataset(tmp_path)) == ROWS


def test_parquet_errors_name_the_problem(tmp_path: Path, parquet_file: Path) -> None:
    with pytest.raises(DatasetError, match="no file or folder"):
        ParquetDataset(tmp_path / "missing.parquet")
    with pytest.raises(DatasetError, match=r"no column\(s\) \['nope'\]"):
        ParquetDataset(parquet_file, columns=["text", "nope"])
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(DatasetError, match="not a readable Parquet file"):
        ParquetDataset(bad)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="has no \\*.parquet files"):
        ParquetDataset(empty)
    other = tmp_path / "mixed"
    other.mkdir()
    pq.write_table(pa.table({"a": [1]}), other / "1.parquet")
    pq.write_table(pa.table({"b": ["x"]}), other / "2.parquet")
    with pytest.raises(DatasetError, match="share one schema"):
        ParquetDataset(other)


def test_parquet_streams_within_a_memory_budget(tmp_path: Path) -> None:
    """A file whose row groups together take far more than the budget is read with Arrow memory
    bounded by about one group plus the budget, sequentially and through a shuffling loader."""
    path = tmp_path / "big.parquet"
    payload = 64 * 1024
    n, group = 256, 8  # 16 MB of payload in 32 row groups of 512 KB
    writer = pq.ParquetWriter(path, pa.schema([("i", pa.int64()), ("blob", pa.binary())]),
                              compression="none")
    for start in range(0, n, group):
        blobs = [bytes([k % 251]) * payload for k in range(start, start + group)]
        writer.write_table(pa.table({"i": list(range(start, start + group)), "blob": blobs}))
    writer.close()
    budget = 2 * group * payload  # two groups
    ds = ParquetDataset(path, cache_bytes=budget)
    assert ds.data_bytes > 10 * budget
    base = pa.total_allocated_bytes()
    peak = 0
    for i in range(ds.len()):
        item = ds.get(i)
        assert item is not None and item["i"] == i and item["blob"][:1] == bytes([i % 251])
        peak = max(peak, pa.total_allocated_bytes() - base)
    loader = DataLoaderBuilder(lambda items: [it["i"] for it in items]).batch_size(16) \
        .shuffle(5).build(ds)
    seen: list[int] = []
    for batch in loader:
        seen.extend(batch)
        peak = max(peak, pa.total_allocated_bytes() - base)
    assert sorted(seen) == list(range(n)) and seen != list(range(n))
    # the loaded groups (the budget, plus one being read) and the blocks converted from them
    assert peak <= budget + 2 * group * payload, peak


def test_shuffled_order_is_a_deterministic_permutation(parquet_file: Path) -> None:
    small = ParquetDataset(parquet_file)
    big = ParquetDataset(parquet_file, cache_bytes=1)
    for ds in (small, big):
        a = ds.shuffled_order(random.Random(1))
        assert sorted(a) == list(range(len(ROWS)))
        assert a == ds.shuffled_order(random.Random(1)) != ds.shuffled_order(random.Random(2))
    # past the budget, each row group's rows stay together
    order = big.shuffled_order(random.Random(1))
    groups = [i // 128 for i in order]
    assert sum(1 for a, b in zip(groups, groups[1:], strict=False) if a != b) == 7


def test_transforms_and_threaded_loader_over_parquet(parquet_file: Path) -> None:
    ds = ParquetDataset(parquet_file)
    assert PartialDataset(ds, 10, 20).get(0) == ROWS[10]
    assert MapperDataset(ds, lambda r: r["label"]).get(8) == 1
    assert sorted(r["text"] for r in ShuffledDataset(ds, 4)) == sorted(r["text"] for r in ROWS)
    assert len(SamplerDataset(ds, 50, seed=1)) == 50
    assert WindowsDataset(ds, 3).get(0) == ROWS[:3]

    def build(workers: int) -> list[list[int]]:
        loader = DataLoaderBuilder(lambda items: [it["score"] for it in items]).batch_size(64) \
            .shuffle(9).num_workers(workers).build(ds)
        return list(loader)

    assert build(0) == build(3)


def test_dataframes_polars_and_pandas() -> None:
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    data = {"x": [1, 2, 3], "y": ["a", "b", "c"], "z": [0.5, 1.5, None]}
    expected = [{"x": 1, "y": "a", "z": 0.5}, {"x": 2, "y": "b", "z": 1.5},
                {"x": 3, "y": "c", "z": None}]
    polars_ds = DataframeDataset(pl.DataFrame(data))
    assert list(polars_ds) == expected and polars_ds.library == "polars"
    pandas_ds = DataframeDataset(pd.DataFrame(data))
    got = list(pandas_ds)
    assert [r["x"] for r in got] == [1, 2, 3] and type(got[0]["x"]) is int
    assert got[2]["z"] != got[2]["z"]  # pandas keeps a missing float as NaN
    assert pandas_ds.library == "pandas"
    # scattered reads (a shuffle) give the same rows as sequential ones
    for ds in (polars_ds, pandas_ds):
        assert [ds.get(i)["y"] for i in (2, 0, 1)] == ["c", "a", "b"]  # type: ignore[index]
    assert DataframeDataset(pl.DataFrame(data), columns=["y"]).get(1) == {"y": "b"}


def test_dataframe_errors() -> None:
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    with pytest.raises(DatasetError, match="LazyFrame.*collect"):
        DataframeDataset(pl.DataFrame({"a": [1]}).lazy())
    with pytest.raises(DatasetError, match="Series"):
        DataframeDataset(pd.Series([1, 2]))
    with pytest.raises(DatasetError, match="DataFrame, got builtins.list"):
        DataframeDataset([{"a": 1}])
    with pytest.raises(DatasetError, match=r"no column\(s\) \['b'\]"):
        DataframeDataset(pl.DataFrame({"a": [1]}), columns=["b"])
    with pytest.raises(DatasetError, match="must be strings"):
        DataframeDataset(pd.DataFrame({0: [1], 1: [2]}))


def test_image_and_audio_columns_decode(tmp_path: Path) -> None:
    table = pa.table({
        "img": [{"bytes": _png(10), "path": "a.png"}, {"bytes": _png(200, mode="RGB"),
                                                      "path": None}],
        "raw": [_png(30), _png(40)],
        "snd": [{"bytes": _wav([0, 16384, -32768]), "path": None}, None],
    })
    ds = ArrowDataset(table, image_columns=["img", "raw"], audio_columns=["snd"])
    first = ds.get(0)
    assert first is not None
    assert isinstance(first["img"], Image) and first["img"].shape == (3, 4, 3)
    assert first["img"].pixel(0, 0) == (10, 10, 10)
    assert first["raw"].pixel(2, 3) == (30, 30, 30)
    sound = first["snd"]
    assert isinstance(sound, Audio) and sound.sampling_rate == 8000
    np.testing.assert_allclose(sound.samples, [0.0, 0.5, -1.0])
    assert ds.get(1)["snd"] is None  # type: ignore[index]
    with pytest.raises(DatasetError, match="cannot decode"):
        ArrowDataset(pa.table({"img": [b"not an image"]}), image_columns=["img"]).get(0)
    with pytest.raises(DatasetError, match="expected an encoded image"):
        ArrowDataset(pa.table({"img": [5]}), image_columns=["img"]).get(0)
    # a Parquet file written by Hugging Face datasets says which columns are images
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({"image": [{"bytes": _png(7), "path": None}], "label": [3]},
                                    features=datasets.Features({"image": datasets.Image(),
                                                                "label": datasets.Value("int64")}))
    hf.to_parquet(tmp_path / "hf.parquet")
    item = ParquetDataset(tmp_path / "hf.parquet").get(0)
    assert item is not None and isinstance(item["image"], Image) and item["label"] == 3
