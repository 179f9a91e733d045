"""Rows per second through pyrite's dataset sources against the same loop written directly.

One table of `--rows` MNIST-shaped rows (784 bytes of pixels, an int label, a short text) is
stored three ways: a Parquet file (row groups of 10,000), a Hugging Face dataset saved to disk,
and an SQLite table. Each is read in batches of 64 items:

- pyrite: `DataLoader` (batch 64, no workers) over `ParquetDataset`, `HuggingfaceDatasetLoader`
  and `SqliteDataset`; items are dicts, the batcher keeps the list;
- direct: the loop a user would write without pyrite, also giving 64 dict rows per batch:
  `pyarrow.parquet.ParquetFile.iter_batches(64)` + `to_pylist()`, the `datasets` split sliced
  64 rows at a time and turned into rows, `sqlite3`'s `fetchmany(64)` into dicts.

Opening a source (reading a Parquet footer, counting an SQLite table, loading a saved split)
is done before the clock starts, on both sides: the figure is iteration. pyrite and the direct
loop take turns, `--repeats` times each; the medians of their CPU times
give the ratio (pyrite's time over the direct loop's: the overhead; target <= 1.5). The
shuffled pyrite read (`shuffle(seed)`, which the direct loops do not do) is reported too. The
load average is recorded, since the machine may be shared.

    python benchmarks/dataset_sources.py --out benchmarks/results/dataset_sources_cpu.json
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from common import cpu_name, write_results

from pyrite.dataset import (
    DataLoaderBuilder,
    HuggingfaceDatasetLoader,
    ParquetDataset,
    SqliteDataset,
    SqliteDatasetWriter,
)

BATCH = 64


def make_sources(folder: Path, n: int) -> dict[str, Path]:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {"image": [bytes([i % 251]) * 784 for i in range(n)],
            "label": [i % 10 for i in range(n)],
            "text": [f"digit number {i}" for i in range(n)]}
    table = pa.table(rows)
    pq.write_table(table, folder / "rows.parquet", row_group_size=10_000)
    datasets.Dataset(table).save_to_disk(folder / "hf")
    with SqliteDatasetWriter(folder / "rows.db", "rows") as writer:
        writer.write_all({k: rows[k][i] for k in rows} for i in range(n))
    return {"parquet": folder / "rows.parquet", "hf": folder / "hf", "sqlite": folder / "rows.db"}


def pyrite_loop(kind: str, path: Path, shuffle: bool = False) -> Callable[[], Iterable[Any]]:
    """Opens the source (not timed) and returns the batches to iterate (timed)."""
    def open_() -> Iterable[Any]:
        if kind == "parquet":
            ds: Any = ParquetDataset(path)
        elif kind == "hf":
            ds = HuggingfaceDatasetLoader(path).dataset("train")
        else:
            ds = SqliteDataset(path, "rows")
        builder = DataLoaderBuilder(lambda items: items).batch_size(BATCH)
        if shuffle:
            builder = builder.shuffle(1)
        return builder.build(ds)
    return open_


def direct_loop(kind: str, path: Path) -> Callable[[], Iterable[Any]]:
    """The same, written directly: open (not timed), then batches of 64 dict rows (timed)."""
    def parquet() -> Iterable[Any]:
        import pyarrow.parquet as pq

        file = pq.ParquetFile(path)
        return (b.to_pylist() for b in file.iter_batches(BATCH))

    def hf() -> Iterable[Any]:
        import datasets

        split = datasets.load_from_disk(str(path))

        def batches() -> Iterator[list[dict[str, Any]]]:
            for start in range(0, len(split), BATCH):
                columns = split[start:start + BATCH]
                names = list(columns)
                yield [dict(zip(names, values, strict=True))
                       for values in zip(*columns.values(), strict=True)]
        return batches()

    def sqlite() -> Iterable[Any]:
        con = sqlite3.connect(path)
        cur = con.execute('SELECT image, label, text FROM "rows" ORDER BY rowid')
        names = [d[0] for d in cur.description]

        def batches() -> Iterator[list[dict[str, Any]]]:
            while batch := cur.fetchmany(BATCH):
                yield [dict(zip(names, row, strict=True)) for row in batch]
            con.close()
        return batches()

    return {"parquet": parquet, "hf": hf, "sqlite": sqlite}[kind]


def timed(open_: Callable[[], Iterable[Any]], n: int) -> float:
    """CPU seconds of one iteration over all rows, the source opened before the clock starts:
    every loop here is single-threaded, and CPU time is far less disturbed than wall time by
    other processes on a shared machine."""
    batches = open_()
    start = time.process_time()
    got = sum(len(batch) for batch in batches)
    took = time.process_time() - start
    if got != n:
        raise SystemExit(f"read {got} rows, expected {n}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="10,000 rows")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.rows = 10_000
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results: dict[str, Any] = {"rows": args.rows, "batch": BATCH, "repeats": args.repeats,
                               "cpu": cpu_name(), "python": platform.python_version(),
                               "load_before": os.getloadavg(), "sources": {}}
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_sources(Path(tmp), args.rows)
        for kind, path in paths.items():
            times: dict[str, list[float]] = {"pyrite": [], "direct": [], "pyrite_shuffled": []}
            for _ in range(args.repeats):  # pyrite and the direct loop take turns
                times["direct"].append(timed(direct_loop(kind, path), args.rows))
                times["pyrite"].append(timed(pyrite_loop(kind, path), args.rows))
            for _ in range(args.repeats):  # after, so its scattered reads disturb neither
                times["pyrite_shuffled"].append(timed(pyrite_loop(kind, path, True), args.rows))
            med = {k: statistics.median(v) for k, v in times.items()}
            results["sources"][kind] = {
                "seconds": times,
                "rows_per_s": {k: round(args.rows / v) for k, v in med.items()},
                "overhead": round(med["pyrite"] / med["direct"], 3),
                "shuffled_overhead": round(med["pyrite_shuffled"] / med["direct"], 3),
            }
            print(f"{kind:8s} pyrite {args.rows / med['pyrite']:>10,.0f} rows/s  direct "
                  f"{args.rows / med['direct']:>10,.0f} rows/s  overhead "
                  f"{med['pyrite'] / med['direct']:.2f}x  (shuffled "
                  f"{med['pyrite_shuffled'] / med['direct']:.2f}x)")
    results["load_after"] = os.getloadavg()
    print(f"load average before {results['load_before']}, after {results['load_after']}")
    if args.out:
        write_results(args.out, results)


if __name__ == "__main__":
    main()
