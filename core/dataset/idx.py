"""The IDX file format (MNIST's): parse the header, check the size, expose the values.

Layout, all big-endian: two zero bytes, a type code, the number of dimensions `d`, then `d`
uint32 sizes, then the values in row-major order. This module reads bytes; it does not open,
download or decompress files (see `mnist.py`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING

from ..errors import DatasetError

if TYPE_CHECKING:
    import numpy as np

# type code -> (name, bytes per value, big-endian numpy dtype)
IDX_TYPES: dict[int, tuple[str, int, str]] = {
    0x08: ("uint8", 1, ">u1"),
    0x09: ("int8", 1, ">i1"),
    0x0B: ("int16", 2, ">i2"),
    0x0C: ("int32", 4, ">i4"),
    0x0D: ("float32", 4, ">f4"),
    0x0E: ("float64", 8, ">f8"),
}


@dataclass(frozen=True, repr=False)
class IdxArray:
    """The contents of an IDX file: `shape`, the value type's name, and the raw values.

    `data` is a zero-copy view of the values as stored (big-endian, row-major); for uint8
    files such as MNIST's, item `k` of the first dimension is `data[k*m:(k+1)*m]` with `m` the
    product of the other dimensions.
    """

    shape: tuple[int, ...]
    dtype: str
    data: memoryview

    def to_numpy(self) -> np.ndarray:
        """The values as a numpy array of `shape`, in native byte order (copied if swapped)."""
        import numpy as np

        code = next(c for c, (name, _, _) in IDX_TYPES.items() if name == self.dtype)
        arr = np.frombuffer(self.data, dtype=IDX_TYPES[code][2]).reshape(self.shape)
        return arr.astype(arr.dtype.newbyteorder("="), copy=False)

    def __repr__(self) -> str:
        return f"IdxArray(shape={self.shape}, dtype={self.dtype!r})"


def parse_idx(data: bytes, *, source: str = "<bytes>") -> IdxArray:
    """Parse an uncompressed IDX file held in `data`; errors name `source` (e.g. the file path).

    Raises `DatasetError` on a bad magic number, an unknown type code, or a size that disagrees
    with the header (a truncated or padded file).

    >>> parse_idx(bytes([0, 0, 8, 2, 0, 0, 0, 1, 0, 0, 0, 2, 7, 9])).shape
    (1, 2)
    """
    view = memoryview(data)
    if len(view) < 4:
        raise DatasetError(f"idx: {source} is too short for an IDX header ({len(view)} bytes)")
    zero, code, ndim = view[0:2].tobytes(), view[2], view[3]
    if zero != b"\0\0" or code not in IDX_TYPES:
        magic = view[0:4].hex()
        raise DatasetError(
            f"idx: {source} is not an IDX file: magic 0x{magic}; expected 0x0000TTDD with a "
            f"type code TT in {[f'{c:02x}' for c in IDX_TYPES]} (a gzip file starts with 1f8b)"
        )
    header = 4 + 4 * ndim
    if len(view) < header:
        raise DatasetError(f"idx: {source} is truncated inside its header of {ndim} sizes")
    shape = struct.unpack(f">{ndim}I", view[4:header])
    name, width, _ = IDX_TYPES[code]
    expected = header + prod(shape) * width
    if len(view) != expected:
        raise DatasetError(
            f"idx: {source} has {len(view)} bytes; its header (shape {shape}, {name}) "
            f"needs {expected}. The file is truncated or corrupt: delete it and fetch it again"
        )
    return IdxArray(tuple(shape), name, view[header:])
