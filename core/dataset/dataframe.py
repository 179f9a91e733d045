"""`DataframeDataset`: the rows of a polars or pandas DataFrame as dict items.

The book's `DataframeDataset` holds a polars frame; pyrite takes whichever of polars and pandas
the user passes (neither is a dependency of pyrite: the frame's own library does the work).
Rows are converted a block at a time (`blocks.py`), so the frame is never turned into Python
objects as a whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import DatasetError
from .arrow import check_columns, user_decoders
from .blocks import BlockDataset, BlockRows, Row


def _library(frame: Any) -> str:
    module = type(frame).__module__.split(".")[0]
    if module in ("polars", "pandas"):
        kind = type(frame).__name__
        if kind == "DataFrame":
            return module
        if module == "polars" and kind == "LazyFrame":
            raise DatasetError("DataframeDataset: a polars LazyFrame has no rows yet; "
                               "pass frame.collect()")
        if kind == "Series":
            raise DatasetError(f"DataframeDataset: got a {module} Series; pass a DataFrame "
                               "(series.to_frame())")
    raise DatasetError(f"DataframeDataset: expected a polars or pandas DataFrame, got "
                       f"{type(frame).__module__}.{type(frame).__name__}")


class DataframeDataset(BlockDataset):
    """The rows of `frame` (a polars or pandas DataFrame) as dicts `{column: value}`.

    `columns` keeps only those columns (in that order); `image_columns` / `audio_columns` name
    columns of encoded images or audio to decode in `get` (see `columns.py`). pandas' index is
    not part of the items; use `frame.reset_index()` to keep it as a column. The frame must not
    change while the dataset is in use.
    """

    def __init__(self, frame: Any, *, columns: Iterable[str] | None = None,
                 image_columns: Iterable[str] = (), audio_columns: Iterable[str] = ()) -> None:
        self.library = _library(frame)
        self._arrays: list[Any] | None = None
        names = [str(c) for c in frame.columns]
        if len(set(names)) != len(names):
            raise DatasetError("DataframeDataset: the frame has repeated column names "
                               f"{names}; rename them first")
        self.columns = check_columns("DataframeDataset", names, columns)
        if self.library == "polars":
            self.frame = frame.select(self.columns)
            convert: Callable[[int, int], list[Any]] = self._polars_rows
            one: Callable[[int], Row] = self._polars_row
            make: Callable[[Any], Row] = self._tuple_row
        else:
            if names != list(frame.columns):
                raise DatasetError("DataframeDataset: a pandas frame's column names must be "
                                   "strings; rename them (frame.columns = [...])")
            self.frame = frame[self.columns]
            convert = self._pandas_rows
            one = self._pandas_row
            make = dict
        self.decoders = user_decoders("DataframeDataset", self.columns, image_columns,
                                      audio_columns)
        self._rows = BlockRows(len(self.frame), convert, one, make)

    def _polars_rows(self, start: int, stop: int) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.frame.slice(start, stop - start).rows()
        return rows

    def _tuple_row(self, values: tuple[Any, ...]) -> Row:
        return dict(zip(self.columns, values, strict=True))

    def _pandas_rows(self, start: int, stop: int) -> list[Row]:
        rows: list[Row] = self.frame.iloc[start:stop].to_dict("records")
        return rows

    def _polars_row(self, index: int) -> Row:
        row: Row = self.frame.row(index, named=True)
        return row

    def _pandas_row(self, index: int) -> Row:
        if self._arrays is None:  # each column as a numpy array, made at the first scattered read
            self._arrays = [self.frame[c].to_numpy() for c in self.columns]
        row: Row = {}
        for c, a in zip(self.columns, self._arrays, strict=True):
            value = a[index]
            row[c] = value.item() if hasattr(value, "item") else value  # numpy scalar -> Python
        return row

    def __repr__(self) -> str:
        return f"DataframeDataset({self.library}, {self.len()} rows, columns={self.columns})"
