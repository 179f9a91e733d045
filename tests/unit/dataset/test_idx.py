"""The IDX parser: header, dimensions, big-endian values, corrupt files."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from pyrite.dataset import DatasetError, parse_idx


def idx(code: int, shape: tuple[int, ...], payload: bytes) -> bytes:
    return bytes([0, 0, code, len(shape)]) + struct.pack(f">{len(shape)}I", *shape) + payload


def test_uint8_images() -> None:
    arr = parse_idx(idx(0x08, (2, 2, 3), bytes(range(12))))
    assert arr.shape == (2, 2, 3)
    assert arr.dtype == "uint8"
    assert arr.data.tobytes() == bytes(range(12))
    assert arr.to_numpy()[1, 0].tolist() == [6, 7, 8]
    assert repr(arr) == "IdxArray(shape=(2, 2, 3), dtype='uint8')"


def test_big_endian_values() -> None:
    arr = parse_idx(idx(0x0C, (3,), struct.pack(">3i", 1, -2, 70000)))
    assert arr.dtype == "int32"
    assert arr.to_numpy().tolist() == [1, -2, 70000]
    assert arr.to_numpy().dtype == np.dtype("int32")
    f = parse_idx(idx(0x0D, (1, 2), struct.pack(">2f", 1.5, -0.25)))
    assert f.to_numpy().tolist() == [[1.5, -0.25]]


def test_labels_file() -> None:
    arr = parse_idx(idx(0x08, (4,), bytes([5, 0, 4, 1])))
    assert arr.shape == (4,)
    assert list(arr.data) == [5, 0, 4, 1]


def test_bad_magic_names_the_source() -> None:
    with pytest.raises(DatasetError, match=r"idx: /data/x is not an IDX file: magic 0x1f8b0800"):
        parse_idx(b"\x1f\x8b\x08\x00rest", source="/data/x")
    with pytest.raises(DatasetError, match="not an IDX file"):
        parse_idx(bytes([0, 0, 0x42, 1, 0, 0, 0, 0]))


def test_truncated_and_padded_files() -> None:
    good = idx(0x08, (2, 3), bytes(6))
    with pytest.raises(
        DatasetError, match=r"f.idx has 13 bytes; its header \(shape \(2, 3\), uint8\) needs 18"
    ):
        parse_idx(good[:13], source="f.idx")
    with pytest.raises(DatasetError, match="needs 18"):
        parse_idx(good + b"\0", source="f.idx")
    with pytest.raises(DatasetError, match="truncated inside its header"):
        parse_idx(good[:6])
    with pytest.raises(DatasetError, match="too short"):
        parse_idx(b"\0\0")
