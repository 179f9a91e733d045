"""`SqliteDataset`: an SQLite table read as a dataset, one dict item per row.

One row is one item, a dict `{column: value}`. SQLite stores ints, floats, text, bytes and NULL
as they are; the writer stores lists/dicts as JSON text and bools as integers, and tags the
column's declared type (JSON, BOOLEAN) so the reader turns them back. A database file may hold
several tables, e.g. one per split ("train", "test"). The writer is `sqlite_writer.py`; the
type tags both share are here. Stdlib `sqlite3` only, imported when first used (Pyodide ships
it as a separate package).
"""

from __future__ import annotations

import json
import threading
from array import array
from collections import deque
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from ..errors import DatasetError
from .blocks import BlockDataset, BlockRows

if TYPE_CHECKING:
    import sqlite3

Value: TypeAlias = "int | float | str | bytes | bool | list[Value] | dict[str, Value] | None"
Row: TypeAlias = "dict[str, Value]"

# declared column type -> how the reader decodes the stored value
JSON_TYPE, BOOL_TYPE = "JSON", "BOOLEAN"


def quote(name: str) -> str:
    """`name` as an SQL identifier, quoted so any table or column name is safe."""
    return '"' + name.replace('"', '""') + '"'


class SqliteDataset(BlockDataset):
    """The rows of `table` in the SQLite file at `path`, in rowid order, as dicts.

    `columns=None` reads every column; a list reads only those (in that order). The file is
    opened read-only; each concurrent `get` borrows its own connection from a small pool, so a
    threaded `DataLoader` reads in parallel. Call `close()` (or use `with`) when done. Row ids
    need not be contiguous: when they have gaps the ids are read once into memory (8 bytes per
    row).
    """

    def __init__(
        self, path: str | PathLike[str], table: str, *, columns: Sequence[str] | None = None
    ) -> None:
        self.path = Path(path)
        self.table = table
        if not self.path.is_file():
            raise DatasetError(f"SqliteDataset: no database file at {self.path}")
        # every connection opened (to close them) and those not in use; a deque's append and
        # pop are atomic, so borrowing needs no lock
        self._connections: list[sqlite3.Connection] = []
        self._idle: deque[sqlite3.Connection] = deque()
        self._lock = threading.Lock()
        # the scan that sequential reads continue: (cursor, the index it reads next)
        self._stream_lock = threading.Lock()
        self._stream_con: sqlite3.Connection | None = None
        self._stream: tuple[sqlite3.Cursor | None, int] = (None, -1)
        con = self._borrow()
        try:
            self._inspect(con, columns)
        except BaseException:
            self.close()
            raise
        self._idle.append(con)

    def _inspect(self, con: sqlite3.Connection, columns: Sequence[str] | None) -> None:
        table = self.table
        info = con.execute(f"PRAGMA table_info({quote(table)})").fetchall()
        if not info:
            tables = [
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            raise DatasetError(
                f"SqliteDataset: {self.path} has no table {table!r}; tables: {tables}"
            )
        types = {row[1]: str(row[2]).upper() for row in info}
        if columns is None:
            columns = list(types)
        missing = [c for c in columns if c not in types]
        if missing:
            raise DatasetError(
                f"SqliteDataset: table {table!r} in {self.path} has no columns {missing}; "
                f"it has {list(types)}"
            )
        self.columns = list(columns)
        self._types = [types[c] for c in self.columns]
        self._tagged = [(c, t) for c, t in zip(self.columns, self._types, strict=True)
                        if t in (JSON_TYPE, BOOL_TYPE)]
        select = ", ".join(quote(c) for c in self.columns)
        self._query = f"SELECT {select} FROM {quote(table)} WHERE rowid = ?"
        self._from = f"SELECT {select} FROM {quote(table)} WHERE rowid >= ? ORDER BY rowid"
        lo, hi, n = con.execute(
            f"SELECT MIN(rowid), MAX(rowid), COUNT(*) FROM {quote(table)}"
        ).fetchone()
        self._first: int = lo or 0
        self._rowids: array[int] | None = None
        if n and hi - lo + 1 != n:
            rows = con.execute(f"SELECT rowid FROM {quote(table)} ORDER BY rowid")
            self._rowids = array("q", (r[0] for r in rows))
        columns = self.columns
        # rows always have one value per column (the query selects them)
        make = self._decode_row if self._tagged else \
            lambda row: dict(zip(columns, row, strict=False))
        self._rows = BlockRows(n, self._block, self._one, make)

    def _borrow(self) -> sqlite3.Connection:
        try:
            return self._idle.pop()
        except IndexError:
            pass
        import sqlite3

        uri = self.path.resolve().as_uri() + "?mode=ro"
        con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        with self._lock:
            self._connections.append(con)
        return con

    def _rowid(self, index: int) -> int:
        return self._rowids[index] if self._rowids is not None else self._first + index

    def _fetch(self, query: str, params: tuple[int, ...]) -> list[tuple[Value, ...]]:
        con = self._borrow()
        try:
            return con.execute(query, params).fetchall()
        finally:
            self._idle.append(con)

    def _decode_row(self, row: tuple[Value, ...]) -> Row:
        item = dict(zip(self.columns, row, strict=True))
        for c, t in self._tagged:  # only JSON and BOOLEAN columns need decoding
            item[c] = _decode(item[c], t)
        return item

    def _one(self, index: int) -> Row:
        rows = self._fetch(self._query, (self._rowid(index),))
        if not rows:
            raise DatasetError(f"SqliteDataset: row {index} of {self.table!r} in {self.path} "
                               "vanished; the table changed while it was read")
        return self._decode_row(rows[0])

    def _block(self, start: int, stop: int) -> list[tuple[Value, ...]]:
        # sequential blocks come from one open cursor (a table scan), which costs less than a
        # query per block; a block elsewhere starts a new scan on the stream's own connection
        with self._stream_lock:
            cursor, at = self._stream
            if cursor is None or at != start:
                if self._stream_con is None:
                    self._stream_con = self._borrow()
                cursor = self._stream_con.execute(self._from, (self._rowid(start),))
            rows = cursor.fetchmany(stop - start)
            self._stream = (cursor, stop)
        if len(rows) != stop - start:
            raise DatasetError(f"SqliteDataset: {self.table!r} in {self.path} changed while "
                               "it was read")
        return rows

    def close(self) -> None:
        """Close every connection this dataset opened; a later `get` opens a new one."""
        with self._stream_lock, self._lock:
            self._stream, self._stream_con = (None, -1), None
            for con in self._connections:
                con.close()
            self._connections.clear()
            self._idle.clear()
        if hasattr(self, "_rows"):  # not when the constructor failed
            self._rows.clear()

    def __enter__(self) -> SqliteDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def create(
        cls, path: str | PathLike[str], table: str, items: Sequence[Row], *, overwrite: bool = False
    ) -> SqliteDataset:
        """Write `items` as `table` of the file at `path` (see `SqliteDatasetWriter`), open it."""
        from .sqlite_writer import SqliteDatasetWriter

        with SqliteDatasetWriter(path, table, overwrite=overwrite) as writer:
            writer.write_all(items)
        return cls(path, table)


def _decode(value: Value, declared: str) -> Value:
    if value is None:
        return None
    if declared == JSON_TYPE and isinstance(value, str):
        return json.loads(value)  # type: ignore[no-any-return]  # JSON trees are Values
    if declared == BOOL_TYPE and isinstance(value, int):
        return bool(value)
    return value
