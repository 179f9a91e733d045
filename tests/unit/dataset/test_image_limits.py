"""Images whose header declares too many pixels, or a shape whose resize would be huge, are
refused with one clear error before anything is decoded (a 142-byte PNG of 65000x1 made
`pyrite infer squeezenet` take 16.9 GB; a 20000x20000 one was a traceback)."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest

from pyrite.dataset import decode_image
from pyrite.dataset.image import MAX_PIXELS
from pyrite.errors import DatasetError

PIL = pytest.importorskip("PIL.Image")


def png(path: Path, width: int, height: int) -> Path:
    """A small PNG file whose header says `width` x `height` (its pixel data is 1x1's)."""
    out = io.BytesIO()
    PIL.new("RGB", (1, 1), (200, 10, 10)).save(out, format="PNG")
    data = bytearray(out.getvalue())
    at = data.index(b"IHDR")
    data[at + 4:at + 12] = struct.pack(">II", width, height)
    crc = zlib.crc32(bytes(data[at:at + 17])) & 0xFFFFFFFF
    data[at + 17:at + 21] = struct.pack(">I", crc)
    path.write_bytes(bytes(data))
    return path


def test_a_declared_huge_image_is_refused_before_decoding(tmp_path: Path) -> None:
    big = png(tmp_path / "big.png", 20_000, 20_000)
    assert big.stat().st_size < 200
    with pytest.raises(DatasetError, match=r"big.png: the image has more than the 64,000,000 "
                                           r"pixels \(8000x8000\) pyrite decodes; scale it"):
        decode_image(big)
    assert 20_000 * 20_000 > MAX_PIXELS
    with pytest.raises(DatasetError, match=r"is 9000x9000 pixels, more than the 64,000,000"):
        decode_image(png(tmp_path / "nine.png", 9_000, 9_000))


def test_the_classifier_refuses_a_strip_whose_resize_is_huge(tmp_path: Path) -> None:
    from pyrite.demos.image_classification.image import photo_pixels
    strip = png(tmp_path / "strip.png", 65_000, 1)
    with pytest.raises(ValueError, match=r"65000x1 pixels: with its shorter side at 256 it "
                                         r"would be 16640000x256; crop it"):
        photo_pixels(strip)
    with pytest.raises(DatasetError, match="^the image has more than the 64,000,000 pixels"):
        photo_pixels(png(tmp_path / "big.png", 20_000, 20_000))


def test_the_cli_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyrite.demos.image_classification.image import photo_pixels
    strip = png(tmp_path / "strip.png", 65_000, 1)
    try:
        photo_pixels(strip)
    except (OSError, ValueError) as exc:  # what `pyrite infer squeezenet` catches and prints
        assert "\n" not in str(exc)
    else:
        pytest.fail("not refused")


def test_ordinary_images_still_decode(tmp_path: Path) -> None:
    path = tmp_path / "ok.png"
    PIL.new("RGB", (300, 200), (1, 2, 3)).save(path)
    image = decode_image(path)
    assert (image.width, image.height) == (300, 200)
