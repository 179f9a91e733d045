"""A photo file as the model's 227x227 RGB bytes, natively, with Pillow (the `data` extra):
decoded (EXIF orientation applied), resized so that its shorter side is 256 (bilinear), then
centre-cropped to 227x227, as the Caffe model's training did. The page does the same with the
browser's own image decoding (page/app.js).
"""

from __future__ import annotations

import os

from .predict import SIDE

SHORTER_SIDE = 256  # resized to this, then the centre SIDE x SIDE is cropped


def crop_box(width: int, height: int) -> tuple[int, int, int, int, int, int]:
    """(resized width, resized height, left, top, right, bottom) for a width x height photo.

    >>> crop_box(800, 600)
    (341, 256, 57, 14, 284, 241)
    """
    scale = SHORTER_SIDE / min(width, height)
    w, h = max(SIDE, round(width * scale)), max(SIDE, round(height * scale))
    left, top = (w - SIDE) // 2, (h - SIDE) // 2
    return w, h, left, top, left + SIDE, top + SIDE


def photo_pixels(path: str | os.PathLike[str]) -> bytes:
    """The photo at `path` as 227x227x3 RGB bytes (row-major); ValueError when it is not an
    image Pillow can read."""
    try:
        from PIL import Image, ImageOps, UnidentifiedImageError
    except ImportError as exc:
        raise ModuleNotFoundError("reading photos needs Pillow: pip install 'pyrite[data]'") \
            from exc
    try:
        with Image.open(path) as opened:
            image = ImageOps.exif_transpose(opened).convert("RGB")
    except UnidentifiedImageError as exc:
        raise ValueError(f"{path} is not an image Pillow can read (JPEG, PNG, WebP, ...)") \
            from exc
    w, h, left, top, right, bottom = crop_box(*image.size)
    image = image.resize((w, h), Image.Resampling.BILINEAR).crop((left, top, right, bottom))
    return image.tobytes()


__all__ = ["SHORTER_SIDE", "crop_box", "photo_pixels"]
