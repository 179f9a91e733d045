"""`ArrowDataset`: the rows of an Arrow table as dict items, read without copying the table.

An Arrow table (`pyarrow.Table`) is columnar memory, often a memory-mapped file (a Hugging Face
dataset's cache is one). Items are converted to Python a block of rows at a time
(`blocks.BlockRows`), so the table is never turned into Python objects as a whole. Encoded
image and audio columns decode in `get` (`columns.py`). Needs `pyarrow` (`pip install
pyarrow`, or the `pyrite[parquet]` extra); importing this module does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import DatasetError
from .blocks import BlockDataset, BlockRows, Row
from .columns import Decoder, audio_decoder, image_decoder

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]


def need_pyarrow(who: str) -> Any:
    """The pyarrow module, or a DatasetError that says how to install it."""
    try:
        import pyarrow
    except ImportError as e:
        raise DatasetError(
            f"{who} needs pyarrow, which is not installed: pip install pyarrow "
            "(or pip install 'pyrite[parquet]')"
        ) from e
    return pyarrow


def check_columns(who: str, have: Sequence[str], wanted: Iterable[str] | None) -> list[str]:
    """`wanted` (all of `have` when None), or a DatasetError naming the missing ones."""
    if wanted is None:
        return list(have)
    wanted = list(wanted)
    missing = [c for c in wanted if c not in have]
    if missing:
        raise DatasetError(f"{who}: no column(s) {missing}; the columns are {list(have)}")
    return wanted


def user_decoders(who: str, columns: Sequence[str], image_columns: Iterable[str],
                  audio_columns: Iterable[str]) -> dict[str, Decoder]:
    """Decoders for the columns a user names as images or audio (checked to exist)."""
    decoders: dict[str, Decoder] = {}
    for name in check_columns(who, columns, image_columns):
        decoders[name] = image_decoder(name)
    for name in check_columns(who, columns, audio_columns):
        decoders[name] = audio_decoder(name)
    return decoders


class ArrowDataset(BlockDataset):
    """The rows of `table` (a `pyarrow.Table`) as dicts `{column: value}`.

    `columns` keeps only those columns (in that order). Encoded image and audio columns decode
    in `get`: the ones in `decoders` (built from the source's schema by the loaders) and the
    ones named in `image_columns` / `audio_columns`. Values are Python values as
    `pyarrow`'s `to_pylist` gives them (ints, floats, str, bytes, lists, dicts, None).
    """

    def __init__(self, table: pa.Table, *, columns: Iterable[str] | None = None,
                 image_columns: Iterable[str] = (), audio_columns: Iterable[str] = (),
                 decoders: Mapping[str, Decoder] | None = None) -> None:
        who = type(self).__name__
        need_pyarrow(who)
        names = list(table.column_names)
        self.columns = check_columns(who, names, columns)
        self.table = table if self.columns == names else table.select(self.columns)
        self.decoders = {k: v for k, v in (decoders or {}).items() if k in self.columns}
        self.decoders.update(user_decoders(who, self.columns, image_columns, audio_columns))
        self._cols = [self.table.column(c) for c in self.columns]
        # blocks hold the dicts pyarrow makes; each read returns a copy (BlockRows' default)
        self._rows = BlockRows(self.table.num_rows, self._convert, self._one)

    def _convert(self, start: int, stop: int) -> list[Row]:
        rows: list[Row] = self.table.slice(start, stop - start).to_pylist()
        return rows

    def _one(self, index: int) -> Row:
        return {c: col[index].as_py() for c, col in zip(self.columns, self._cols, strict=True)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.len()} rows, columns={self.columns})"
