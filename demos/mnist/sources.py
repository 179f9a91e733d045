"""Training the guide model on digits from elsewhere: a Hugging Face dataset, Parquet, SQLite.

`datasets("hf:mnist")` or `datasets("digits.parquet")` gives (train, valid) datasets of the
items `MnistBatcher` takes, `{"image": 784 bytes, "label": int}`. The source needs two columns:

- `image`: a 28x28 image, either encoded (PNG/JPEG bytes, or the `{"bytes", "path"}` struct a
  Hugging Face Image column holds), or 784 raw grayscale bytes, or a list of 784 ints 0-255;
  colour images are turned to gray (ITU-R 601 luma);
- `label`: the digit, an int 0-9.

A Hugging Face source validates on its "test" split (or "validation"); a single-split source
(Parquet, SQLite) holds out its last 10 % for validation.
"""

from __future__ import annotations

from typing import Any

from pyrite.dataset import Image, MapperDataset, PartialDataset, decode_image_bytes
from pyrite.dataset.base import Dataset
from pyrite.dataset.sources import is_split_source, open_dataset, split_names
from pyrite.errors import DatasetError

SIDE = 28
PIXELS = SIDE * SIDE
#: the part of a single-split source kept for validation
VALID_FRACTION = 0.1


def _gray(image: Image, source: str) -> bytes:
    if (image.height, image.width) != (SIDE, SIDE):
        raise DatasetError(f"{source}: an image is {image.height}x{image.width}; the MNIST "
                           f"model takes {SIDE}x{SIDE} digits (resize the dataset first)")
    if image.channels == 1:
        return image.data
    data = image.data
    c = image.channels
    r, g, b = data[0::c], data[1::c], data[2::c]
    if r == g == b:
        return r
    # pure Python (784 pixels), so it also runs in a page, where numpy may be missing
    return bytes((x * 299 + y * 587 + z * 114 + 500) // 1000 for x, y, z in zip(r, g, b,
                                                                                 strict=True))


def to_item(row: dict[str, Any], source: str) -> dict[str, bytes | int]:
    """A source row as the item `MnistBatcher` takes (see the module docstring)."""
    missing = [c for c in ("image", "label") if c not in row]
    if missing:
        raise DatasetError(f"{source}: the rows have no {missing} column(s); the MNIST "
                           f"training needs 'image' and 'label' (it has {sorted(row)})")
    image, label = row["image"], row["label"]
    if isinstance(image, dict):
        if image.get("bytes") is None:
            raise DatasetError(f"{source}: an image column struct holds no bytes")
        image = decode_image_bytes(image["bytes"], source)
    if isinstance(image, Image):
        pixels = _gray(image, source)
    elif isinstance(image, (bytes, bytearray)) and len(image) == PIXELS:
        pixels = bytes(image)
    elif isinstance(image, (bytes, bytearray)):
        pixels = _gray(decode_image_bytes(bytes(image), source), source)
    elif isinstance(image, list) and len(image) == PIXELS:
        try:
            pixels = bytes(image)
        except (TypeError, ValueError) as e:
            raise DatasetError(f"{source}: an image list must hold ints 0-255") from e
    else:
        raise DatasetError(f"{source}: the 'image' column holds {type(image).__name__}; "
                           "expected an encoded image, 784 bytes or 784 ints")
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label <= 9:
        raise DatasetError(f"{source}: a label is {label!r}; labels must be ints 0-9")
    return {"image": pixels, "label": label}


def datasets(spec: str) -> tuple[Dataset[Any], Dataset[Any]]:
    """(train, valid) MNIST-style items from the source `spec` (see `open_dataset`)."""
    train = open_dataset(spec, "train")
    first = train.get(0)
    if first is None:
        raise DatasetError(f"{spec} has no rows")
    to_item(first, spec)  # wrong columns or types are reported before training starts
    if is_split_source(spec):
        names = split_names(spec)
        valid_split = next((s for s in ("test", "validation", "valid") if s in names), None)
        if valid_split is None:
            raise DatasetError(f"{spec} has splits {names}; the MNIST training validates on a "
                               "'test' or 'validation' split")
        valid = open_dataset(spec, valid_split)
    else:
        n = train.len()
        cut = n - max(1, int(n * VALID_FRACTION))
        if cut <= 0:
            raise DatasetError(f"{spec} has {n} row; at least 2 are needed to train and "
                               "validate")
        train, valid = PartialDataset(train, 0, cut), PartialDataset(train, cut, n)
    return (MapperDataset(train, lambda row: to_item(row, spec)),
            MapperDataset(valid, lambda row: to_item(row, spec)))
