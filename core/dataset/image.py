"""`Image`, the decoded-pixels record datasets return, and `decode_image` (Pillow, lazily).

An `Image` holds plain bytes so that it needs neither numpy nor Pillow once decoded; `to_numpy`
gives an array view for batchers that want one.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..errors import DatasetError

if TYPE_CHECKING:
    import numpy as np

#: the most pixels pyrite decodes from one image file (8,000 x 8,000); checked from the file's
#: header before anything is decoded, so a small file declaring a huge image costs nothing
MAX_PIXELS = 64_000_000


def check_image_size(width: int, height: int, source: object | None) -> None:
    """Refuse an image of more than MAX_PIXELS pixels (or of no pixels) before decoding it.
    `source` (a path) starts the message; None: the caller names it."""
    if width <= 0 or height <= 0 or width * height > MAX_PIXELS:
        raise too_big(source, f"{width}x{height} pixels")


def too_big(source: object | None, size: str | None = None) -> DatasetError:
    """The error of an image over MAX_PIXELS (Pillow refuses the largest when opening them)."""
    what = f"the image is {size}, more than" if size else "the image has more than"
    prefix = f"{source}: " if source is not None else ""
    return DatasetError(f"{prefix}{what} the {MAX_PIXELS:,} pixels (8000x8000) pyrite decodes; "
                        f"scale it down first")


@dataclass(frozen=True, repr=False)
class Image:
    """Decoded pixels: `height` rows of `width` pixels of `channels` uint8 values each.

    Layout: `data` is row-major HWC (for RGB: r, g, b of the top-left pixel first), so its length
    is `height * width * channels` and the value of channel `c` at row `y`, column `x` is
    `data[(y * width + x) * channels + c]`. Values are 0..255.

    >>> img = Image(1, 2, 3, bytes([255, 0, 0, 0, 0, 255]))
    >>> img.pixel(0, 1), img.shape
    ((0, 0, 255), (1, 2, 3))
    """

    height: int
    width: int
    channels: int
    data: bytes

    def __post_init__(self) -> None:
        expected = self.height * self.width * self.channels
        if len(self.data) != expected:
            raise DatasetError(
                f"Image: {self.height}x{self.width}x{self.channels} needs {expected} bytes, "
                f"got {len(self.data)}"
            )

    @property
    def shape(self) -> tuple[int, int, int]:
        """(height, width, channels): the HWC shape of the pixels."""
        return (self.height, self.width, self.channels)

    def pixel(self, y: int, x: int) -> tuple[int, ...]:
        """The channel values at row `y`, column `x` (0-based, from the top-left corner)."""
        if not (0 <= y < self.height and 0 <= x < self.width):
            raise IndexError(f"pixel ({y}, {x}) outside a {self.height}x{self.width} image")
        start = (y * self.width + x) * self.channels
        return tuple(self.data[start : start + self.channels])

    def to_numpy(self) -> np.ndarray:
        """A read-only uint8 array of shape (height, width, channels) over `data` (no copy)."""
        import numpy as np

        return np.frombuffer(self.data, dtype=np.uint8).reshape(self.shape)

    def __repr__(self) -> str:
        return f"Image(height={self.height}, width={self.width}, channels={self.channels})"


def decode_image(path: str | PathLike[str]) -> Image:
    """Read and decode the image file at `path` into RGB (3 channels, uint8).

    Every format Pillow reads works (JPEG, PNG, BMP, TIFF, GIF's first frame, ...). Grayscale,
    palette and CMYK images are converted to RGB; an alpha channel is dropped (not blended).
    Images of more than MAX_PIXELS pixels are refused before they are decoded.
    Needs Pillow (`pip install pillow`).
    """
    path = Path(path)
    return _decode(path, path)


def decode_image_bytes(data: bytes, source: object = "image bytes") -> Image:
    """`decode_image` for an encoded image held in memory (a PNG or JPEG file's bytes, as a
    dataset column stores them); `source` names it in errors."""
    import io

    return _decode(io.BytesIO(data), source)


def _decode(file: Path | BinaryIO, source: object) -> Image:
    try:
        from PIL import Image as PilImage
        from PIL import UnidentifiedImageError
    except ImportError as e:
        raise DatasetError(
            f"decode_image: reading {source} needs Pillow, which is not installed: "
            "pip install pillow"
        ) from e
    try:
        with PilImage.open(file) as im:
            check_image_size(*im.size, source)  # from the header: nothing decoded yet
            rgb = im.convert("RGB")
            return Image(rgb.height, rgb.width, 3, rgb.tobytes())
    except DatasetError:
        raise
    except PilImage.DecompressionBombError as e:
        raise too_big(source) from e
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as e:
        # Pillow raises OSError for truncated files, UnidentifiedImageError for non-images
        raise DatasetError(f"decode_image: cannot decode {source}: {e}") from e
