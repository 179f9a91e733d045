"""`InMemDataset`: items held in a Python list, and its CSV loader.

Suited to datasets that fit in memory. CSV parsing uses the stdlib `csv` module only.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from os import PathLike
from pathlib import Path
from typing import TypeVar

from ..errors import DatasetError
from .base import Dataset

T = TypeVar("T")


class InMemDataset(Dataset[T]):
    """A dataset over a list of items, copied from `items` at construction.

    >>> ds = InMemDataset(["a", "b", "c"])
    >>> ds.len(), ds.get(1), ds.get(3)
    (3, 'b', None)
    """

    def __init__(self, items: Iterable[T]) -> None:
        self.items: list[T] = list(items)

    def get(self, index: int) -> T | None:
        if 0 <= index < len(self.items):
            return self.items[index]
        return None

    def len(self) -> int:
        return len(self.items)

    @classmethod
    def from_dataset(cls, dataset: Dataset[T]) -> InMemDataset[T]:
        """Read every item of `dataset` once and keep them in memory (e.g. after a slow mapper)."""
        items: list[T] = []
        for i in range(dataset.len()):
            item = dataset.get(i)
            if item is None:
                raise DatasetError(
                    f"InMemDataset.from_dataset: get({i}) returned None "
                    f"but the dataset says it has {dataset.len()} items"
                )
            items.append(item)
        return cls(items)

    @classmethod
    def from_csv(
        cls,
        path: str | PathLike[str],
        *,
        delimiter: str = ",",
        header: bool = True,
        parse: Callable[..., T] | None = None,
        encoding: str = "utf-8-sig",
    ) -> InMemDataset[T]:
        """Load a CSV file, one item per data row.

        With `header=True` (the default) the first row names the columns and each row becomes a
        dict `{column: text}`; with `header=False` each row is a list of strings. Values stay
        strings: pass `parse` (called once per row with that dict or list) to convert them into
        your item type. Every row must have as many fields as the first; a ragged row raises
        `DatasetError` naming the file and line. Blank lines are skipped. The default encoding,
        `utf-8-sig`, reads plain UTF-8 and also drops the byte-order mark spreadsheets write.

        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "houses.csv"
        >>> _ = p.write_text("rooms,price\\n3,250.0\\n5,410.5\\n")
        >>> ds = InMemDataset.from_csv(p, parse=lambda r: (int(r["rooms"]), float(r["price"])))
        >>> list(ds)
        [(3, 250.0), (5, 410.5)]
        """
        path = Path(path)
        try:
            with path.open(newline="", encoding=encoding) as f:
                rows = [(n, row) for n, row in enumerate(csv.reader(f, delimiter=delimiter), 1)]
        except OSError as e:
            raise DatasetError(f"from_csv: cannot read {path}: {e.strerror or e}") from e
        except (csv.Error, UnicodeDecodeError) as e:
            raise DatasetError(f"from_csv: {path} is not valid CSV ({encoding}): {e}") from e

        rows = [(n, row) for n, row in rows if row]
        if not rows:
            return cls([])
        width = len(rows[0][1])
        for n, row in rows:
            if len(row) != width:
                raise DatasetError(
                    f"from_csv: {path} line {n} has {len(row)} fields, the first row has {width}; "
                    f"check the delimiter ({delimiter!r}) and quoting"
                )

        records: list[dict[str, str]] | list[list[str]]
        if header:
            names = rows[0][1]
            if len(set(names)) != len(names):
                raise DatasetError(f"from_csv: {path} has repeated column names: {names}")
            records = [dict(zip(names, row, strict=True)) for _, row in rows[1:]]
        else:
            records = [row for _, row in rows]
        if parse is None:
            return cls(records)  # type: ignore[arg-type]  # without parse, T is the row type
        return cls(parse(r) for r in records)
