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
from .base import Dataset

if TYPE_CHECKING:
    import sqlite3

Value: TypeAlias = "int | float | str | bytes | bool | list[Value] | dict[str, Value] | None"
Row: TypeAlias = "dict[str, Value]"

# declared column type -> how the reader decodes the stored value
JSON_TYPE, BOOL_TYPE = "JSON", "BOOLEAN"


def quote(name: str) -> str:
    """`name` as an SQL identifier, quoted so any table or column name is safe."""
    return '"' + name.replace('"', '""') + '"'


class SqliteDataset(Dataset[Row]):
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
        select = ", ".join(quote(c) for c in self.columns)
        self._query = f"SELECT {select} FROM {quote(table)} WHERE rowid = ?"
        lo, hi, n = con.execute(
            f"SELECT MIN(rowid), MAX(rowid), COUNT(*) FROM {quote(table)}"
        ).fetchone()
        self._len: int = n
        self._first: int = lo or 0
        self._rowids: array[int] | None = None
        if n and hi - lo + 1 != n:
            rows = con.execute(f"SELECT rowid FROM {quote(table)} ORDER BY rowid")
            self._rowids = array("q", (r[0] for r in rows))

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

    def get(self, index: int) -> Row | None:
        if not 0 <= index < self._len:
            return None
        rowid = self._rowids[index] if self._rowids is not None else self._first + index
        con = self._borrow()
        try:
            row = con.execute(self._query, (rowid,)).fetchone()
        finally:
            self._idle.append(con)
        if row is None:
            return None
        return {c: _decode(v, t) for c, v, t in zip(self.columns, row, self._types, strict=True)}

    def len(self) -> int:
        return self._len

    def close(self) -> None:
        """Close every connection this dataset opened; a later `get` opens a new one."""
        with self._lock:
            for con in self._connections:
                con.close()
            self._connections.clear()
            self._idle.clear()

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
