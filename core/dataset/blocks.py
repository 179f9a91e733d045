"""Row blocks: how columnar sources (Arrow tables, Parquet files, dataframes) serve `get(i)`.

Converting one row of a columnar table to Python costs about as much as converting a few
hundred: each conversion pays a fixed price per column. So the columnar datasets turn a block
of consecutive rows into dicts at once and keep the last few blocks. A sequential reader (a
`DataLoader` without shuffling, a `PartialDataset`) converts each row once, in blocks; a
scattered (shuffled) read that misses the blocks converts just its row, value by value, which
costs less than a block it would not use.

`BlockRows` is shared by `ArrowDataset`, `ParquetDataset`, `DataframeDataset` and
`SqliteDataset`; each gives it a function that turns rows `[start, stop)` into a list of raw
rows. `BlockDataset` is their common `Dataset` side: `get`, `get_many` and `len` over the
blocks, with encoded columns decoded on read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from .base import Dataset
from .columns import Decoder, apply

Row = dict[str, Any]

#: rows converted together when a reader walks forward
BLOCK_ROWS = 512
#: blocks kept
KEEP_BLOCKS = 8


class BlockRows:
    """Rows `0 .. n-1` served from cached blocks converted by `convert(start, stop)`.

    A block is a list of raw rows (tuples of values, or dicts); `make(raw)` builds the new dict
    each read returns (`dict` by default: a copy, so callers may change it). A miss at index 0
    or right after the previous block's end converts the next `block_rows` rows (sequential
    reading) and keeps them; any other miss converts only its row with `one(index)`. At most
    `keep` blocks are kept. Thread-safe: a threaded `DataLoader` calls `row` concurrently.
    """

    def __init__(self, n: int, convert: Callable[[int, int], list[Any]],
                 one: Callable[[int], Row], make: Callable[[Any], Row] = dict, *,
                 block_rows: int = BLOCK_ROWS, keep: int = KEEP_BLOCKS) -> None:
        self.n = n
        self.convert = convert
        self.one = one
        self.make = make
        self.block_rows = max(1, block_rows)
        self.keep = max(1, keep)
        self._blocks: OrderedDict[int, tuple[int, list[Any]]] = OrderedDict()  # start: stop, raw
        self._recent: tuple[int, int, list[Any]] = (0, 0, [])  # the block read last
        self._last_stop = -1
        self._lock = threading.Lock()

    def row(self, index: int) -> Row:
        """Row `index` (0 <= index < n) as a new dict (callers may change it)."""
        start, stop, raw = self._recent  # one tuple read: consistent without the lock
        if start <= index < stop:
            return self.make(raw[index - start])
        with self._lock:
            for start, (stop, raw) in self._blocks.items():
                if start <= index < stop:
                    self._blocks.move_to_end(start)
                    self._recent = (start, stop, raw)
                    return self.make(raw[index - start])
            scattered = index != self._last_stop and index != 0
            start, stop = index, min(self.n, index + self.block_rows)
        if scattered:
            return self.one(index)
        raw = self.convert(start, stop)  # outside the lock: other readers go on
        with self._lock:
            self._blocks[start] = (stop, raw)
            while len(self._blocks) > self.keep:
                self._blocks.popitem(last=False)
            self._recent = (start, stop, raw)
            self._last_stop = stop
        return self.make(raw[index - start])

    def rows(self, indices: list[int]) -> list[Row]:
        """`[row(i) for i in indices]`, faster for runs of indices inside one cached block."""
        start, stop, raw = self._recent
        if indices and start <= indices[0] and indices[-1] < stop:
            first = indices[0]
            if indices == list(range(first, first + len(indices))):  # a run: one comprehension
                make = self.make
                return [make(values) for values in raw[first - start:first - start + len(indices)]]
        out: list[Row] = []
        append, make = out.append, self.make
        for index in indices:
            if start <= index < stop:
                append(make(raw[index - start]))
            else:
                append(self.row(index))
                start, stop, raw = self._recent
        return out

    def clear(self) -> None:
        """Drop every cached block."""
        with self._lock:
            self._blocks.clear()
            self._recent = (0, 0, [])
            self._last_stop = -1


class BlockDataset(Dataset[Row]):
    """A dataset of dict rows served by a `BlockRows` (`self._rows`, set by the subclass), with
    the columns in `self.decoders` decoded on each read."""

    _rows: BlockRows
    decoders: Mapping[str, Decoder] = MappingProxyType({})

    def get(self, index: int) -> Row | None:
        if not 0 <= index < self._rows.n:
            return None
        return apply(self._rows.row(index), self.decoders)

    def get_many(self, indices: list[int]) -> list[Row]:
        """The items at `indices` (each in range), as `get` gives them; the `DataLoader` reads
        a batch with one call."""
        rows = self._rows.rows(indices)
        if self.decoders:
            for row in rows:
                apply(row, self.decoders)
        return rows

    def len(self) -> int:
        return self._rows.n
