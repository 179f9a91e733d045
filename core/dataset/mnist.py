"""`MnistDataset`: the MNIST handwritten digits, found locally or downloaded, checked, parsed.

Owns MNIST's file names, mirrors and checksums and the item layout. Finding the data folder and
downloading live in `download.py`; the IDX format in `idx.py`.
"""

from __future__ import annotations

import gzip
import zlib
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from ..errors import DatasetError, DownloadError
from .base import Dataset
from .download import TIMEOUT_S, data_root, download_file, verify_file
from .idx import parse_idx

if TYPE_CHECKING:
    import numpy as np

MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)

# SHA-256 of the original gzip'd files (their MD5s are the well-known f68b3c2d..., d53e105e...,
# 9fb629c4..., ec29112d...)
FILES: dict[str, tuple[str, str]] = {
    # split: (images file, labels file)
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
SHA256: dict[str, str] = {
    "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",  # noqa: E501
    "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",  # noqa: E501
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",  # noqa: E501
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",  # noqa: E501
}

HEIGHT = WIDTH = 28
PIXELS = HEIGHT * WIDTH

MnistItem: TypeAlias = "dict[str, bytes | int]"


class MnistDataset(Dataset[MnistItem]):
    """MNIST's "train" (60,000) or "test" (10,000) split; items `{"image": bytes, "label": int}`.

    `image` is 784 bytes: 28 rows of 28 uint8 pixels, row-major, 0 = background, 255 = ink
    (`np.frombuffer(item["image"], np.uint8).reshape(28, 28)` gives the array). `label` is the
    digit, 0-9. Both splits are decoded once, at construction, into one buffer each; `get`
    slices it (no numpy needed). `arrays()` gives the whole split as numpy arrays.

    The four gzip'd IDX files are looked for in `<data>/mnist/`, where `<data>` is `root` if
    given, else `$PYRITE_DATA`, else `~/.cache/pyrite`. A missing file is downloaded (unless
    `download=False`) from the mirrors in `MIRRORS`; every file, local or downloaded, is checked
    against its SHA-256 before use, and a local file that fails is reported, never replaced.
    """

    def __init__(
        self,
        split: Literal["train", "test"],
        *,
        root: str | PathLike[str] | None = None,
        download: bool = True,
        timeout: float = TIMEOUT_S,
    ) -> None:
        if split not in FILES:
            raise DatasetError(f"MnistDataset: unknown split {split!r}; use 'train' or 'test'")
        self.split = split
        self.folder = data_root(root) / "mnist"
        images_name, labels_name = FILES[split]
        images_path = _fetch(self.folder / images_name, download, timeout)
        labels_path = _fetch(self.folder / labels_name, download, timeout)

        images = parse_idx(_gunzip(images_path), source=str(images_path))
        labels = parse_idx(_gunzip(labels_path), source=str(labels_path))
        if images.dtype != "uint8" or images.shape[1:] != (HEIGHT, WIDTH):
            raise DatasetError(
                f"MnistDataset: {images_path} holds {images.dtype} of shape {images.shape}, "
                f"expected uint8 images of shape (N, {HEIGHT}, {WIDTH})"
            )
        if labels.dtype != "uint8" or len(labels.shape) != 1 or labels.shape[0] != images.shape[0]:
            raise DatasetError(
                f"MnistDataset: {labels_path} holds {labels.dtype} of shape {labels.shape}, "
                f"expected {images.shape[0]} uint8 labels to match {images_path}"
            )
        self._images = images.data.tobytes()
        self._labels = labels.data.tobytes()
        if self._labels and max(self._labels) > 9:
            raise DatasetError(f"MnistDataset: {labels_path} has labels above 9")

    @classmethod
    def train(cls) -> MnistDataset:
        """The 60,000 training digits (see the class for where the files are looked for)."""
        return cls("train")

    @classmethod
    def test(cls) -> MnistDataset:
        """The 10,000 test digits."""
        return cls("test")

    def get(self, index: int) -> MnistItem | None:
        if not 0 <= index < len(self._labels):
            return None
        start = index * PIXELS
        return {"image": self._images[start : start + PIXELS], "label": self._labels[index]}

    def len(self) -> int:
        return len(self._labels)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """`(images, labels)`: read-only uint8 arrays of shape (N, 28, 28) and (N,), no copy."""
        import numpy as np

        images = np.frombuffer(self._images, dtype=np.uint8).reshape(-1, HEIGHT, WIDTH)
        return images, np.frombuffer(self._labels, dtype=np.uint8)

    def __repr__(self) -> str:
        return f"MnistDataset({self.split!r}, {self.len()} items, folder={str(self.folder)!r})"


def _fetch(path: Path, download: bool, timeout: float) -> Path:
    """`path`, checked against its checksum; downloaded first when missing and allowed."""
    sha = SHA256[path.name]
    if path.is_file():
        verify_file(path, sha)
        return path
    fix = (
        f"Set PYRITE_DATA to a folder holding mnist/{path.name} (e.g. PYRITE_DATA=/data with "
        f"/data/mnist/*.gz, the four MNIST files), or pass root= to MnistDataset"
    )
    if not download:
        raise DatasetError(f"MnistDataset: {path} is missing and download=False. {fix}")
    urls = [m + path.name for m in MIRRORS]
    try:
        download_file(urls, path, sha, timeout=timeout)
    except DownloadError as e:
        raise DownloadError(f"MnistDataset: {path} is missing and {e}. No network? {fix}") from e
    return path


def _gunzip(path: Path) -> bytes:
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as e:
        raise DatasetError(f"MnistDataset: {path} is not a valid gzip file: {e}") from e
