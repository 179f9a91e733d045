"""Dataset packs (.pyds): every value kind round-trips, damage is refused, writes are atomic,
and `pyrite dataset pack/info` work from a source."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pyrite.cli import main
from pyrite.dataset import DatasetError, Image, PackDataset, write_pack
from pyrite.dataset.sources import open_dataset

ROWS = [
    {"i": i - 50, "big": (1 << 62) + i, "f": i / 7, "b": bytes([i % 256]) * (i % 5),
     "s": f"row {i} \u00e9", "n": None if i % 4 == 0 else i, "ok": i % 3 == 0,
     "img": Image(2, 1, 3, bytes([i % 256]) * 6), "j": {"k": [i, None, "x"]},
     "mixed": i if i % 2 else f"{i}"}
    for i in range(300)
]


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "rows.pyds", ROWS, chunk_rows=64, meta={"from": "test"})


def test_every_kind_round_trips_across_chunks(pack: Path) -> None:
    with PackDataset(pack) as ds:
        assert ds.len() == 300 and ds.columns == list(ROWS[0])
        assert list(ds) == ROWS
        order = list(range(300))
        random.Random(2).shuffle(order)
        assert [ds.get(i) for i in order] == [ROWS[i] for i in order]
        assert ds.get(300) is None and ds.get(-1) is None
        assert ds.meta == {"from": "test"}
        assert ds.get_many([5, 6, 200]) == [ROWS[5], ROWS[6], ROWS[200]]


def test_all_missing_and_single_row(tmp_path: Path) -> None:
    path = write_pack(tmp_path / "one.pyds", [{"a": None, "b": []}])
    assert list(PackDataset(path)) == [{"a": None, "b": []}]


def test_damage_is_refused(pack: Path, tmp_path: Path) -> None:
    data = bytearray(pack.read_bytes())
    flipped = tmp_path / "flipped.pyds"
    data[40] ^= 0xFF  # inside the first chunk
    flipped.write_bytes(bytes(data))
    ds = PackDataset(flipped)
    with pytest.raises(DatasetError, match="chunk 0 fails its CRC-32 check"):
        ds.get(0)
    assert ds.get(299) == ROWS[299]  # other chunks are still fine
    truncated = tmp_path / "truncated.pyds"
    truncated.write_bytes(pack.read_bytes()[:-100])
    with pytest.raises(DatasetError, match="truncated"):
        PackDataset(truncated)
    other = tmp_path / "other.pyds"
    other.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(DatasetError, match="no PYRITEDS header"):
        PackDataset(other)
    future = bytearray(pack.read_bytes())
    future[8] = 9
    (tmp_path / "future.pyds").write_bytes(bytes(future))
    with pytest.raises(DatasetError, match="version 9 pack; this pyrite reads version 1"):
        PackDataset(tmp_path / "future.pyds")
    with pytest.raises(DatasetError, match="no file"):
        PackDataset(tmp_path / "missing.pyds")


def test_fuzzed_packs_never_give_wrong_rows(pack: Path, tmp_path: Path) -> None:
    """Random byte flips: every outcome is the right rows or a DatasetError."""
    original = pack.read_bytes()
    rng = random.Random(7)
    for trial in range(200):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path = tmp_path / f"f{trial}.pyds"
        path.write_bytes(bytes(data))
        try:
            ds = PackDataset(path)
            for i in range(0, 300, 37):
                assert ds.get(i) == ROWS[i]
            ds.close()
        except DatasetError:
            pass


def test_writes_are_atomic_and_checked(tmp_path: Path, pack: Path) -> None:
    before = pack.read_bytes()

    def rows():  # type: ignore[no-untyped-def]
        yield {"a": 1}
        yield {"b": 2}

    with pytest.raises(DatasetError, match="every row needs the same columns"):
        write_pack(pack, rows())
    assert pack.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["rows.pyds"]
    with pytest.raises(DatasetError, match="no rows"):
        write_pack(tmp_path / "empty.pyds", [])
    with pytest.raises(DatasetError, match="cannot hold this value"):
        write_pack(tmp_path / "obj.pyds", [{"a": object()}])
    assert not (tmp_path / "obj.pyds").exists()


def test_pack_and_info_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    source = tmp_path / "src.parquet"
    pq.write_table(pa.table({"text": [f"t{i}" for i in range(50)], "n": list(range(50))}),
                   source)
    out = tmp_path / "out.pyds"
    assert main(["dataset", "pack", str(source), "--out", str(out), "--columns", "n",
                 "--limit", "20"]) == 0
    assert "Packed 20 rows" in capsys.readouterr().out
    assert list(open_dataset(str(out))) == [{"n": i} for i in range(20)]
    assert main(["dataset", "info", str(out)]) == 0
    assert "20 rows" in capsys.readouterr().out
    assert main(["dataset", "pack", str(source), "--out", str(out), "--columns", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyrite dataset: error: ") and "no column(s) ['x']" in err
    assert main(["dataset", "info", str(tmp_path / "nothing.parquet")]) == 2
    assert "no file or folder" in capsys.readouterr().err
