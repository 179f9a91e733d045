"""A photo file as the model's 227x227 RGB bytes, natively, with Pillow (the `data` extra):
decoded (EXIF orientation applied), resized so that its shorter side is 256 (bilinear), then
centre-cropped to 227x227, as the Caffe model's training did. The page does the same with the
browser's own image decoding (page/app.js).
"""

from __future__ import annotations

import os

from .predict import SIDE

SHORTER_SIDE = 256  # resized to this, then the centre SIDE x SIDE is cropped
#: the most pixels the resize may make (a 65000x1 strip would become 16,640,000x256)
MAX_RESIZED = 16_000_000


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
    from pyrite.dataset.image import check_image_size, too_big
    try:
        with Image.open(path) as opened:
            check_image_size(*opened.size, None)  # from the header: nothing decoded yet
            w, h, *_ = crop_box(*opened.size)
            if w * h > MAX_RESIZED:
                raise ValueError(f"the photo is {opened.size[0]}x{opened.size[1]} pixels: with "
                                 f"its shorter side at {SHORTER_SIDE} it would be {w}x{h}; "
                                 f"crop it nearer to a square first")
            image = ImageOps.exif_transpose(opened).convert("RGB")
    except Image.DecompressionBombError as exc:
        raise too_big(None) from exc
    except UnidentifiedImageError as exc:
        raise ValueError(f"{path} is not an image Pillow can read (JPEG, PNG, WebP, ...)") \
            from exc
    w, h, left, top, right, bottom = crop_box(*image.size)
    image = image.resize((w, h), Image.Resampling.BILINEAR).crop((left, top, right, bottom))
    return image.tobytes()


__all__ = ["MAX_RESIZED", "SHORTER_SIDE", "crop_box", "photo_pixels"]
