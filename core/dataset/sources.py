"""One spelling for "where the data is", for command-line tools and configs.

`open_dataset(spec, split)` turns a source string into a dataset of dict rows:

- `hf:NAME` or `hf:NAME:SUBSET`: a Hugging Face dataset (`HuggingfaceDatasetLoader`); NAME is
  a Hub id or a local folder (`save_to_disk` output, or a folder of data files);
- a path ending in `.parquet`, or a folder holding `*.parquet` files: `ParquetDataset` (one
  split: asking for another is an error the caller turns into a hold-out);
- a path ending in `.db`/`.sqlite` with `:TABLE` (`data.db:train`): `SqliteDataset`;
- a path ending in `.pyds`: a dataset pack (`PackDataset`), the form web pages read.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DatasetError
from .base import Dataset
from .blocks import Row

#: what `open_dataset` accepts, for error messages and --help
SPEC_HELP = ("hf:NAME[:SUBSET] (a Hugging Face dataset), a .parquet file or a folder of them, "
             "FILE.db:TABLE (SQLite) or a .pyds dataset pack")


def is_split_source(spec: str) -> bool:
    """Whether `spec` names a source with named splits (a Hugging Face dataset)."""
    return spec.startswith("hf:")


def split_names(spec: str) -> list[str]:
    """The splits of a Hugging Face source; ["train"] for single-split sources."""
    if is_split_source(spec):
        from .huggingface import HuggingfaceDatasetLoader

        name, _, subset = spec[3:].partition(":")
        return HuggingfaceDatasetLoader(name, subset or None).splits()
    return ["train"]


def open_dataset(spec: str, split: str = "train") -> Dataset[Row]:
    """The dataset `spec` names (see the module docstring); `split` picks a Hugging Face split."""
    if not spec:
        raise DatasetError(f"no dataset given; expected {SPEC_HELP}")
    if is_split_source(spec):
        from .huggingface import HuggingfaceDatasetLoader

        name, _, subset = spec[3:].partition(":")
        return HuggingfaceDatasetLoader(name, subset or None).dataset(split)
    if split != "train":
        raise DatasetError(f"{spec} has a single split; there is no {split!r} split")
    path, _, table = spec.rpartition(":") if spec.count(":") and not Path(spec).exists() \
        else (spec, "", "")
    if Path(path).suffix in (".db", ".sqlite", ".sqlite3"):
        from .sqlite import SqliteDataset

        if not table:
            raise DatasetError(f"{spec}: name the table, as {path}:TABLE")
        return SqliteDataset(path, table)
    p = Path(spec)
    if p.suffix == ".pyds":
        from .pack import PackDataset

        return PackDataset(p)
    if p.suffix == ".parquet" or p.is_dir():
        from .parquet import ParquetDataset

        return ParquetDataset(p)
    raise DatasetError(f"{spec!r} is not a dataset source pyrite reads; expected {SPEC_HELP}")
