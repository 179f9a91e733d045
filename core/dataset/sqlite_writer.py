"""`SqliteDatasetWriter`: write dict items as a table of an SQLite file, all or nothing.

The table is built in a temporary copy of the file and renamed into place, so readers never see
a half-written table. How values are stored and tagged is described in `sqlite.py`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DatasetError
from .sqlite import BOOL_TYPE, JSON_TYPE, Row, Value, quote

if TYPE_CHECKING:
    import sqlite3


def _declared_type(value: Value) -> str:
    if isinstance(value, bool):
        return BOOL_TYPE
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "REAL"
    if isinstance(value, str):
        return "TEXT"
    if isinstance(value, bytes | bytearray | memoryview):
        return "BLOB"
    if isinstance(value, list | tuple | dict):
        return JSON_TYPE
    raise DatasetError(
        f"SqliteDatasetWriter: cannot store a {type(value).__name__}; items hold ints, floats, "
        "str, bytes, bools, None, and lists/dicts of those"
    )


def _check(value: Value, declared: str, strict: bool) -> str | None:
    """Why `value` would not read back as written from a column of type `declared`, or None.

    SQLite converts by column affinity ('12' in an INTEGER column reads back as 12), so with
    types inferred from the first item (`strict`) a value must match its column's type; an int
    in a REAL column reads back as a float, which is allowed. With user-given types only the
    JSON and BOOLEAN tags are checked.
    """
    if value is None:
        return None
    kind = _declared_type(value)
    if kind == declared or (kind == "INTEGER" and declared == "REAL"):
        return None
    if kind in (JSON_TYPE, BOOL_TYPE) or declared in (JSON_TYPE, BOOL_TYPE):
        return "would not read back as written"
    if strict and declared != "":
        return "would be converted by SQLite"
    return None


def _encode(value: Value) -> int | float | str | bytes | None:
    if isinstance(value, list | tuple | dict):
        return json.dumps(value)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value  # a bool goes in as an int (sqlite3 adapts it)


class SqliteDatasetWriter:
    """Write dict items as a new table of an SQLite file, all or nothing.

    The table is built in a temporary copy of the file (other tables are kept) and renamed over
    `path` when the `with` block ends without error; on error the file is left as it was.
    Columns and their types come from the first item written, or from `columns` (a dict of name
    -> SQL type: INTEGER, REAL, TEXT, BLOB, or pyrite's JSON and BOOLEAN, which the reader decodes
    to lists/dicts and bools). Later items may leave columns out (stored as NULL) but may not add
    new ones, nor put a list or bool where the first item had another type. An existing table of the
    same name is an error unless `overwrite=True`.

    >>> import pathlib, tempfile
    >>> from pyrite.dataset import SqliteDataset
    >>> db = pathlib.Path(tempfile.mkdtemp()) / "data.db"
    >>> with SqliteDatasetWriter(db, "train") as w:
    ...     w.write({"text": "hello", "label": 1, "tokens": [3, 4]})
    >>> with SqliteDataset(db, "train") as ds:
    ...     ds.get(0)
    {'text': 'hello', 'label': 1, 'tokens': [3, 4]}
    """

    def __init__(
        self,
        path: str | PathLike[str],
        table: str,
        *,
        overwrite: bool = False,
        columns: dict[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.table = table
        self.overwrite = overwrite
        self.columns: dict[str, str] | None = dict(columns) if columns is not None else None
        self.count = 0
        self._inferred = False
        self._tmp: Path | None = None
        self._con: sqlite3.Connection | None = None

    def __enter__(self) -> SqliteDatasetWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{id(self)}.tmp")
        self._tmp.unlink(missing_ok=True)
        import sqlite3

        con = sqlite3.connect(self._tmp)
        self._con = con
        if self.path.exists():
            src = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True)
            try:
                src.backup(con)
            finally:
                src.close()
        exists = con.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (self.table,)
        ).fetchone()
        if exists and not self.overwrite:
            self._abort()
            raise DatasetError(
                f"SqliteDatasetWriter: {self.path} already has a table {self.table!r}; "
                "pass overwrite=True to replace it"
            )
        con.execute(f"DROP TABLE IF EXISTS {quote(self.table)}")
        if self.columns is not None:
            self._create_table()
        return self

    def _create_table(self) -> None:
        assert self._con is not None and self.columns is not None
        cols = ", ".join(f"{quote(c)} {t}" for c, t in self.columns.items())
        self._con.execute(f"CREATE TABLE {quote(self.table)} ({cols})")
        names = ", ".join(quote(c) for c in self.columns)
        marks = ", ".join("?" for _ in self.columns)
        self._insert = f"INSERT INTO {quote(self.table)} ({names}) VALUES ({marks})"

    def write(self, item: Row) -> None:
        """Add one item (a dict of column -> value) as the next row."""
        if self._con is None:
            raise DatasetError("SqliteDatasetWriter: use it in a `with` block before writing")
        if self.columns is None:
            if not item:
                raise DatasetError("SqliteDatasetWriter: the first item has no columns")
            # a None in the first item leaves its column untyped (any scalar reads back as is)
            self.columns = {c: _declared_type(v) if v is not None else "" for c, v in item.items()}
            self._inferred = True
            self._create_table()
        extra = [c for c in item if c not in self.columns]
        if extra:
            raise DatasetError(
                f"SqliteDatasetWriter: item {self.count} has columns {extra} that the table "
                f"{self.table!r} lacks (it has {list(self.columns)})"
            )
        for c, v in item.items():
            why = _check(v, self.columns[c], self._inferred)
            if why is not None:
                typ = self.columns[c] or "untyped"
                raise DatasetError(
                    f"SqliteDatasetWriter: item {self.count} column {c!r} holds a "
                    f"{type(v).__name__} but the column is {typ}: it {why}; "
                    "pass columns={name: sql_type} to the writer to set the types"
                )
        self._con.execute(self._insert, [_encode(item.get(c)) for c in self.columns])
        self.count += 1

    def write_all(self, items: Sequence[Row]) -> None:
        """Add every item of `items`, in order."""
        for item in items:
            self.write(item)

    def _abort(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None:
            self._abort()
            return
        assert self._con is not None and self._tmp is not None
        if self.columns is None:
            self._abort()
            raise DatasetError(
                f"SqliteDatasetWriter: nothing was written to table {self.table!r}; "
                "pass columns= to create an empty table"
            )
        self._con.commit()
        self._con.close()
        self._con = None
        os.replace(self._tmp, self.path)
