"""Image (decoded pixels as HWC bytes) and decode_image (Pillow)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PilImage

from pyrite.dataset import DatasetError, Image, decode_image


def test_image_layout_is_row_major_hwc() -> None:
    # 2 rows x 3 columns, RGB; pixel (y, x) = (10*y + x, 100 + y, 200 + x)
    data = bytes(v for y in range(2) for x in range(3) for v in (10 * y + x, 100 + y, 200 + x))
    img = Image(2, 3, 3, data)
    assert img.shape == (2, 3, 3)
    assert img.pixel(1, 2) == (12, 101, 202)
    arr = img.to_numpy()
    assert arr.shape == (2, 3, 3)
    assert arr.dtype == np.uint8
    assert arr[1, 2].tolist() == [12, 101, 202]
    assert not arr.flags.writeable
    with pytest.raises(IndexError):
        img.pixel(2, 0)
    assert repr(img) == "Image(height=2, width=3, channels=3)"


def test_image_checks_its_size() -> None:
    with pytest.raises(DatasetError, match="2x2x3 needs 12 bytes, got 11"):
        Image(2, 2, 3, bytes(11))


def test_decode_png_exact_pixels(tmp_path: Path) -> None:
    src = np.zeros((4, 5, 3), dtype=np.uint8)
    src[1, 3] = (255, 128, 7)
    src[3, 0] = (1, 2, 3)
    path = tmp_path / "tiny.png"
    PilImage.fromarray(src).save(path)
    img = decode_image(path)
    assert (img.height, img.width, img.channels) == (4, 5, 3)
    assert img.pixel(1, 3) == (255, 128, 7)
    assert np.array_equal(img.to_numpy(), src)


def test_decode_converts_grayscale_and_alpha_to_rgb(tmp_path: Path) -> None:
    gray = tmp_path / "gray.png"
    PilImage.fromarray(np.full((2, 2), 77, dtype=np.uint8)).save(gray)
    assert decode_image(gray).pixel(0, 0) == (77, 77, 77)
    rgba = tmp_path / "rgba.png"
    PilImage.fromarray(np.full((2, 2, 4), (9, 8, 7, 0), dtype=np.uint8)).save(rgba)
    img = decode_image(rgba)
    assert img.channels == 3
    assert img.pixel(1, 1) == (9, 8, 7)


def test_decode_sample_jpegs(samples: Path) -> None:
    car = decode_image(samples / "car.jpg")
    assert car.shape == (256, 256, 3)
    pelican = decode_image(samples / "pelican.jpeg")
    assert (pelican.width, pelican.height) == (500, 375)
    assert len(pelican.data) == 500 * 375 * 3
    assert 0 <= min(pelican.data) < max(pelican.data) <= 255


def test_decode_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "not_an_image.jpg"
    bad.write_bytes(b"hello")
    with pytest.raises(DatasetError, match="cannot decode .*not_an_image.jpg"):
        decode_image(bad)
    with pytest.raises(DatasetError, match="missing.png"):
        decode_image(tmp_path / "missing.png")
