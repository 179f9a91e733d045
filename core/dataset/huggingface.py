"""`HuggingfaceDatasetLoader`: a Hugging Face dataset (Hub, cache or local folder) as a dataset.

As in the Burn book: `HuggingfaceDatasetLoader("mnist").dataset("train")`. Burn converts the
split into an SQLite file; pyrite reads the Arrow files that the `datasets` library already
keeps in its cache (memory-mapped, so a split is never copied into Python objects as a whole)
through `ArrowDataset`. Items are dicts; Image and Audio columns decode to `Image` / `Audio`;
`dataset.classes(column)` gives a ClassLabel column's names.

Needs the `datasets` library (`pip install 'pyrite[hf]'`); importing this module does not.
Offline, a dataset in the cache loads as it is (set `HF_HUB_OFFLINE=1` so that nothing is
tried on the network); one that is neither cached nor reachable is a `DatasetError` that says so.
"""

from __future__ import annotations

import copy
import os
from os import PathLike
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from .arrow import ArrowDataset
from .columns import decoders_for_features


def _need_datasets() -> Any:
    try:
        import datasets  # type: ignore[import-untyped]
    except ImportError as e:
        raise DatasetError(
            "HuggingfaceDatasetLoader needs the datasets library, which is not installed: "
            "pip install 'pyrite[hf]' (or pip install datasets)"
        ) from e
    return datasets


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


class HuggingfaceDataset(ArrowDataset):
    """One split of a Hugging Face dataset: its Arrow table read as dict items.

    `features` is the split's `datasets.Features`; `classes(column)` lists a ClassLabel
    column's class names (the items hold the int labels).
    """

    def __init__(self, split: Any, **options: Any) -> None:
        if getattr(split, "_indices", None) is not None:
            split = split.flatten_indices()  # a selected/shuffled view: materialise its rows
        self.features = split.features
        super().__init__(split.data.table, decoders=decoders_for_features(self.features),
                         **options)

    def classes(self, column: str) -> list[str]:
        feature = self.features.get(column)
        names = getattr(feature, "names", None)
        if names is None:
            raise DatasetError(f"HuggingfaceDataset: column {column!r} is not a ClassLabel "
                               f"column; its feature is {feature!r}")
        return list(names)


class HuggingfaceDatasetLoader:
    """Loads splits of the dataset `name`: a Hub id (`"mnist"`, `"user/name"`), a folder written
    by `datasets`' `save_to_disk`, or a local folder of data files (Parquet, CSV, JSON, ...).

    Options as in Burn, as keyword arguments or `with_*` methods (each returns a new loader):
    `subset` (the Hub's config name), `cache_dir` (the `datasets` cache; default
    `HF_DATASETS_CACHE`), `token` (for private datasets), `revision`. Burn's `with_base_dir`
    (where its SQLite copy goes) and `with_use_python_venv` have no counterpart: pyrite reads
    the `datasets` cache directly, in this Python.
    """

    def __init__(self, name: str | PathLike[str], subset: str | None = None, *,
                 cache_dir: str | PathLike[str] | None = None, token: str | None = None,
                 revision: str | None = None) -> None:
        self.name = os.fspath(name)
        if not self.name:
            raise DatasetError("HuggingfaceDatasetLoader: the dataset name is empty; give a "
                               "Hub id such as 'mnist' or a local folder")
        self.subset = subset
        self.cache_dir = os.fspath(cache_dir) if cache_dir is not None else None
        self.token = token
        self.revision = revision

    def _with(self, **changes: Any) -> HuggingfaceDatasetLoader:
        loader = copy.copy(self)
        for key, value in changes.items():
            setattr(loader, key, value)
        return loader

    def with_subset(self, subset: str) -> HuggingfaceDatasetLoader:
        return self._with(subset=subset)

    def with_cache_dir(self, cache_dir: str | PathLike[str]) -> HuggingfaceDatasetLoader:
        return self._with(cache_dir=os.fspath(cache_dir))

    with_huggingface_cache_dir = with_cache_dir

    def with_huggingface_token(self, token: str) -> HuggingfaceDatasetLoader:
        return self._with(token=token)

    def with_revision(self, revision: str) -> HuggingfaceDatasetLoader:
        return self._with(revision=revision)

    def _saved(self) -> Path | None:
        path = Path(self.name)
        if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
            return path
        return None

    def splits(self) -> list[str]:
        """The split names the dataset has (from a saved folder or the builder's info)."""
        datasets = _need_datasets()
        saved = self._saved()
        try:
            if saved is not None:
                loaded = datasets.load_from_disk(str(saved))
                return list(loaded.keys()) if hasattr(loaded, "keys") else ["train"]
            return list(datasets.get_dataset_split_names(
                self.name, self.subset, token=self.token, revision=self.revision))
        except Exception as e:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot"
            raise self._cannot("list the splits of", e) from e

    def dataset(self, split: str, **options: Any) -> HuggingfaceDataset:
        """The split `split` ("train", "test", a slice such as "train[:10%]") as a dataset.
        `options` go to `ArrowDataset` (`columns`, `image_columns`, `audio_columns`)."""
        datasets = _need_datasets()
        saved = self._saved()
        try:
            if saved is not None:
                loaded = datasets.load_from_disk(str(saved))
                if hasattr(loaded, "keys"):
                    if split not in loaded:
                        raise DatasetError(
                            f"HuggingfaceDatasetLoader: {self.name} has no split {split!r}; "
                            f"its splits are {list(loaded.keys())}")
                    loaded = loaded[split]
            else:
                loaded = datasets.load_dataset(
                    self.name, self.subset, split=split, cache_dir=self.cache_dir,
                    token=self.token, revision=self.revision)
        except DatasetError:
            raise
        except Exception as e:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot"
            raise self._cannot(f"load split {split!r} of", e) from e
        if not hasattr(loaded, "data"):
            raise DatasetError(f"HuggingfaceDatasetLoader: {self.name} split {split!r} is a "
                               "streaming dataset; pyrite reads downloaded splits only")
        return HuggingfaceDataset(loaded, **options)

    def _cannot(self, what: str, e: BaseException) -> DatasetError:
        where = self.cache_dir or os.environ.get("HF_DATASETS_CACHE") or "the datasets cache"
        subset = f" (subset {self.subset!r})" if self.subset else ""
        offline = os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get(
            "HF_DATASETS_OFFLINE") == "1"
        hint = ("it is not in the cache and HF_HUB_OFFLINE=1 forbids downloading; run once "
                "online or point cache_dir at a cache that has it" if offline else
                "check the name, the network, or run once online so that it is cached")
        return DatasetError(
            f"HuggingfaceDatasetLoader: cannot {what} {self.name!r}{subset} "
            f"(cache: {where}): {_first_line(e)}; {hint}")
