"""Torch storages and dtypes as pyrite reads them, and the copy of a strided view."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...dtype import DType
from ...errors import RecordError

#: the elements a file's tensors may hold beyond their storages (stride 0, expanded views), all
#: tensors together
MAX_EXPANDED = 1 << 22

# torch storage class name -> (pyrite dtype, bytes per element in the file)
_STORAGES: dict[str, tuple[DType, int]] = {
    "DoubleStorage": (DType.F64, 8), "FloatStorage": (DType.F32, 4),
    "HalfStorage": (DType.F16, 2), "BFloat16Storage": (DType.F32, 2),
    "LongStorage": (DType.I64, 8), "IntStorage": (DType.I32, 4), "ShortStorage": (DType.I16, 2),
    "CharStorage": (DType.I8, 1), "ByteStorage": (DType.U8, 1), "BoolStorage": (DType.BOOL, 1),
}
# torch dtype name -> storage class name
_TORCH_DTYPES = {
    "float64": "DoubleStorage", "double": "DoubleStorage", "float32": "FloatStorage",
    "float": "FloatStorage", "float16": "HalfStorage", "half": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "long": "LongStorage",
    "int32": "IntStorage", "int": "IntStorage", "int16": "ShortStorage", "short": "ShortStorage",
    "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
}


def _elements(raw: bytes, itemsize: int) -> memoryview[int]:
    """`raw` as a memoryview of `itemsize`-byte unsigned integers (for strided copies)."""
    view = memoryview(raw)
    if itemsize == 1:
        return view.cast("B")
    if itemsize == 2:
        return view.cast("H")
    if itemsize == 4:
        return view.cast("I")
    return view.cast("Q")


def _err(source: str, message: str) -> RecordError:
    return RecordError(f"{source}: {message}")


# ---- the pieces the unpickler builds -------------------------------------------------------

@dataclass(frozen=True)
class _StorageType:
    """A torch storage class (`torch.FloatStorage`) or dtype (`torch.float32`)."""
    name: str

    @property
    def dtype(self) -> DType:
        return _STORAGES[self.name][0]

    @property
    def itemsize(self) -> int:
        return _STORAGES[self.name][1]


@dataclass
class _Storage:
    kind: _StorageType
    numel: int
    raw: bytes  # exactly numel * itemsize bytes, little-endian


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _gather(storage: _Storage, offset: int, size: tuple[int, ...],
            stride: tuple[int, ...]) -> bytes:
    """The elements of the strided view, contiguous in row-major order (sizes checked)."""
    k = storage.kind.itemsize
    numel = math.prod(size)
    if numel == 0:
        return b""
    contiguous, acc = [], 1
    for s in reversed(size):
        contiguous.append(acc)
        acc *= s
    contiguous.reverse()
    if all(st == c or sz == 1 for sz, st, c in zip(size, stride, contiguous, strict=True)):
        return bytes(storage.raw[offset * k:(offset + numel) * k])
    view = _elements(storage.raw, k)
    if not size:
        return view[offset:offset + 1].tobytes()
    last, last_stride = size[-1], stride[-1]
    out = bytearray()
    index = [0] * (len(size) - 1)
    while True:
        start = offset + sum(i * st for i, st in zip(index, stride, strict=False))
        if last_stride == 0:
            out += view[start:start + 1].tobytes() * last
        else:
            out += view[start:start + (last - 1) * last_stride + 1:last_stride].tobytes()
        d = len(index) - 1
        while d >= 0:
            index[d] += 1
            if index[d] < size[d]:
                break
            index[d] = 0
            d -= 1
        if d < 0:
            return bytes(out)


def _byteswap(raw: bytes, k: int) -> bytes:
    if k == 1:
        return raw
    out = bytearray(len(raw))
    for j in range(k):
        out[j::k] = raw[k - 1 - j::k]
    return bytes(out)

