"""`ImageFolderDataset`: images on disk with class labels, decoded on each `get`.

Only the file list and labels are held in memory; pixels are read when an item is asked for,
so a threaded `DataLoader` decodes in parallel (Pillow releases the GIL while decoding).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from pathlib import Path
from typing import TypeAlias

from ..errors import DatasetError
from .base import Dataset
from .image import Image, decode_image

# Burn's list; matched without regard to case ("IMG_1.JPG" counts)
IMAGE_EXTENSIONS = ("bmp", "jpg", "jpeg", "png", "tiff")

Label: TypeAlias = "int | list[int]"
ImageItem: TypeAlias = "dict[str, Image | int | list[int] | str]"


class ImageFolderDataset(Dataset[ImageItem]):
    """Labelled images read from disk; items are `{"image": Image, "label": ..., "path": str}`.

    Build one with `classification` (one folder per class) or `multilabel` (a list of files
    and their labels). `image` is an RGB `Image` (HWC uint8 bytes, see `image.py`), decoded on
    each `get`; `label` is the class index for classification and a multi-hot list of 0/1 (one
    entry per class, in `classes` order) for multi-label; `path` is the file's path.
    """

    def __init__(self, items: Sequence[tuple[Path, Label]], classes: Sequence[str]) -> None:
        self.items = list(items)
        self.classes = list(classes)

    def get(self, index: int) -> ImageItem | None:
        if not 0 <= index < len(self.items):
            return None
        path, label = self.items[index]
        # a copy of a multi-hot list, so a caller editing it cannot change later items
        label = label if isinstance(label, int) else list(label)
        return {"image": decode_image(path), "label": label, "path": str(path)}

    def len(self) -> int:
        return len(self.items)

    @classmethod
    def classification(
        cls, root: str | PathLike[str], *, extensions: Iterable[str] = IMAGE_EXTENSIONS
    ) -> ImageFolderDataset:
        """One sub-folder of `root` per class: `root/cat/1.jpg` is labelled "cat".

        Classes are the sub-folders holding at least one image, sorted by name; the label is the
        class's index in `self.classes`. Images are found at any depth under their class folder,
        in sorted path order. Files directly in `root`, other extensions and hidden entries
        (names starting with ".") are ignored. `extensions` are matched without case and
        without the dot.
        """
        root = Path(root)
        if not root.is_dir():
            raise DatasetError(f"ImageFolderDataset.classification: {root} is not a folder")
        exts = {e.lower().lstrip(".") for e in extensions}
        found: dict[str, list[Path]] = {}
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not _hidden(p, root)):
            files = sorted(
                p
                for p in folder.rglob("*")
                if p.is_file() and p.suffix.lower().lstrip(".") in exts and not _hidden(p, root)
            )
            if files:
                found[folder.name] = files
        if not found:
            raise DatasetError(
                f"ImageFolderDataset.classification: no images under {root}; expected "
                f"{root}/<class>/<image> with extensions {sorted(exts)}"
            )
        classes = sorted(found)
        items: list[tuple[Path, Label]] = [
            (path, label) for label, name in enumerate(classes) for path in found[name]
        ]
        return cls(items, classes)

    @classmethod
    def multilabel(
        cls,
        items: Iterable[tuple[str | PathLike[str], Sequence[str]]],
        classes: Sequence[str],
    ) -> ImageFolderDataset:
        """Images with any number of labels each, given as `(path, [class names])` pairs.

        The label becomes a multi-hot list over `classes`, in the order given:
        with classes `["animal", "cat", "dog"]`, `("a.jpg", ["animal", "dog"])` gets `[1, 0, 1]`.
        Every file must exist and every label be one of `classes`.
        """
        classes = list(classes)
        if len(set(classes)) != len(classes):
            raise DatasetError(f"ImageFolderDataset.multilabel: repeated class names in {classes}")
        index = {name: i for i, name in enumerate(classes)}
        out: list[tuple[Path, Label]] = []
        for raw_path, labels in items:
            path = Path(raw_path)
            if not path.is_file():
                raise DatasetError(f"ImageFolderDataset.multilabel: no image file at {path}")
            hot = [0] * len(classes)
            for name in labels:
                if name not in index:
                    raise DatasetError(
                        f"ImageFolderDataset.multilabel: {path} has label {name!r}, "
                        f"which is not one of the classes {classes}"
                    )
                hot[index[name]] = 1
            out.append((path, hot))
        return cls(out, classes)


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)
