"""`ParquetDataset`: Parquet files read a row group at a time, so data larger than memory streams.

A Parquet file is split into row groups. `ParquetDataset` reads only the files' footers when it
is built (row counts and schemas), then loads a row group when an item in it is asked for and
keeps the most recently used groups within a byte budget (`cache_bytes`). Rows are converted
to dicts a block at a time (`blocks.py`). Sequential reading reads each group once (and lets it
go as soon as it has read past its end), and so does
a shuffling `DataLoader` (it asks the dataset for its `shuffled_order`, which keeps a group's
rows together when the data is larger than the budget). Other random access over data larger
than the budget reads a group per miss. Needs `pyarrow`.
"""

from __future__ import annotations

import bisect
import random
import threading
from collections import OrderedDict
from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DatasetError
from .arrow import check_columns, need_pyarrow, user_decoders
from .blocks import BlockDataset, BlockRows, Row
from .columns import decoders_for_schema

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

#: the default byte budget for row groups kept in memory
CACHE_BYTES = 256 * 1024 * 1024


class ParquetDataset(BlockDataset):
    """The rows of a Parquet file, or of every `*.parquet` file in a folder (sorted by name,
    read one after another), as dicts.

    `columns` reads only those columns. `cache_bytes` bounds the Arrow memory held by loaded
    row groups (the group being read is always kept, even if it alone is larger). Image and
    audio columns decode in `get`: those recorded in a file written by Hugging Face `datasets`
    automatically, and the ones named in `image_columns` / `audio_columns`.
    """

    def __init__(self, path: str | PathLike[str], *, columns: Iterable[str] | None = None,
                 cache_bytes: int = CACHE_BYTES, image_columns: Iterable[str] = (),
                 audio_columns: Iterable[str] = ()) -> None:
        pa = need_pyarrow("ParquetDataset")
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        self.path = Path(path)
        files = sorted(self.path.glob("*.parquet")) if self.path.is_dir() else [self.path]
        if not self.path.exists():
            raise DatasetError(f"ParquetDataset: no file or folder at {self.path}")
        if not files:
            raise DatasetError(f"ParquetDataset: the folder {self.path} has no *.parquet files")
        self.files: list[Any] = []
        schema = None
        for f in files:
            try:
                pf = pq.ParquetFile(f)
            except (pa.ArrowException, OSError) as e:
                raise DatasetError(f"ParquetDataset: {f} is not a readable Parquet file: "
                                   f"{str(e).splitlines()[0]}") from e
            if schema is None:
                schema = pf.schema_arrow
            elif not pf.schema_arrow.equals(schema, check_metadata=False):
                raise DatasetError(f"ParquetDataset: {f}'s columns differ from {files[0]}'s; "
                                   "a folder's files must share one schema")
            self.files.append(pf)
        assert schema is not None
        self.columns = check_columns("ParquetDataset", schema.names, columns)
        # (file index, row group index) per group, and each group's first row
        self.groups: list[tuple[int, int]] = []
        self.offsets: list[int] = [0]
        for fi, pf in enumerate(self.files):
            meta = pf.metadata
            for gi in range(meta.num_row_groups):
                self.groups.append((fi, gi))
                self.offsets.append(self.offsets[-1] + meta.row_group(gi).num_rows)
        self.decoders = {k: v for k, v in decoders_for_schema(schema.metadata).items()
                         if k in self.columns}
        self.decoders.update(user_decoders("ParquetDataset", self.columns, image_columns,
                                           audio_columns))
        self.cache_bytes = cache_bytes
        #: the row groups' uncompressed size, from the footers
        self.data_bytes = sum(self.files[fi].metadata.row_group(gi).total_byte_size
                              for fi, gi in self.groups)
        self._tables: OrderedDict[int, Any] = OrderedDict()  # group -> pyarrow.Table
        self._lock = threading.Lock()
        self._rows = BlockRows(self.offsets[-1], self._convert, self._one)

    def _group(self, g: int) -> pa.Table:
        with self._lock:
            table = self._tables.get(g)
            if table is not None:
                self._tables.move_to_end(g)
                return table
            fi, gi = self.groups[g]
            table = self.files[fi].read_row_group(gi, columns=self.columns)
            self._tables[g] = table
            total = sum(t.nbytes for t in self._tables.values())
            while total > self.cache_bytes and len(self._tables) > 1:
                _, old = self._tables.popitem(last=False)
                total -= old.nbytes
            return table

    def _convert(self, start: int, stop: int) -> list[Row]:
        rows: list[Row] = []
        while start < stop:
            g = bisect.bisect_right(self.offsets, start) - 1
            first, end = self.offsets[g], self.offsets[g + 1]
            upto = min(stop, end)
            rows.extend(self._group(g).slice(start - first, upto - start).to_pylist())
            if upto == end:  # a forward reader is done with this group: free its memory now
                with self._lock:
                    self._tables.pop(g, None)
            start = upto
        return rows

    def _one(self, index: int) -> Row:
        g = bisect.bisect_right(self.offsets, index) - 1
        table, i = self._group(g), index - self.offsets[g]
        return {c: table.column(j)[i].as_py() for j, c in enumerate(self.columns)}

    @property
    def num_row_groups(self) -> int:
        return len(self.groups)

    def shuffled_order(self, rng: random.Random) -> list[int]:
        """Every index once, in a random order that suits the cache; the `DataLoader` uses it
        when it shuffles this dataset. When the row groups fit in `cache_bytes` it is a full
        shuffle; when they do not, the groups come in a random order and the rows of each group
        are shuffled, so an epoch loads each group once however small the budget is."""
        order = list(range(self.len()))
        if self.data_bytes <= self.cache_bytes:
            rng.shuffle(order)
            return order
        groups = list(range(len(self.groups)))
        rng.shuffle(groups)
        order = []
        for g in groups:
            rows = list(range(self.offsets[g], self.offsets[g + 1]))
            rng.shuffle(rows)
            order.extend(rows)
        return order

    def __repr__(self) -> str:
        return (f"ParquetDataset({str(self.path)!r}, {self.len()} rows in "
                f"{len(self.groups)} row groups, columns={self.columns})")
