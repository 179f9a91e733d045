"""Data onto the device in another dtype than it arrives in, and many tensors at once.

Half-precision values are unpacked to f32 by a kernel (`shaders/unpack_f16.wgsl`), so loading
a half-precision record costs no host-side conversion of every value (slow in pure Python, as
in a page). `upload_many` loads a whole record: every tensor's bytes go into one staging buffer
with one write, then each is unpacked (f16 to f32) or copied into its own buffer, all in one
command buffer. Before, each tensor had its own staging buffer and write, and since a write
submits the work recorded before it, a record of N tensors cost N submits (7 for MNIST in a
page). A tensor that replaces a param `init_from_record` built (`uninitialized`, listed in
`Kernels.blank`) is written into that param's buffer instead of a new one.
"""

from __future__ import annotations

import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..data import TensorData
from ..dtype import DType
from .codegen import WORKGROUP, KernelKey, header, render
from .kernels import Kernels
from .memory import aligned_size
from .runtime import Buffer
from .tensor import GpuTensor

if TYPE_CHECKING:
    from .backend import WebGpu

_STAGED = 64 << 20  # most bytes staged in one buffer (a larger record takes several)


def _unpack(k: Kernels, src: Buffer, first: int, out: GpuTensor) -> None:
    """Dispatch the unpack of `out.numel` f16 values from word `first` of `src`."""
    key = KernelKey("unpack_f16", "", (DType.F16, DType.F32))
    pipeline = k.cached(key) or k.pipeline(key, render(
        "unpack_f16.wgsl", enable=header(()), workgroup=WORKGROUP))
    k.launch(pipeline, [k.meta([out.numel, first]), src, out.block.buffer],
             k.grid(-(-out.numel // WORKGROUP)))


def unpack_f16(k: Kernels, raw: bytes, shape: tuple[int, ...]) -> GpuTensor:
    """An f32 tensor of `shape` from little-endian f16 bytes."""
    out = k.empty(shape, DType.F32, "from_data")
    words = k.pool.alloc(aligned_size(len(raw)), "from_data")
    k.write(words.buffer, 0, raw + b"\0" * (-len(raw) % 4))
    _unpack(k, words.buffer, 0, out)
    return out


def _payload(data: TensorData, stored: DType) -> tuple[bytes, bool]:
    """(the bytes to stage, whether they are f16 to unpack into f32) for `data` kept as
    `stored`: what `WebGpu.from_data` / `from_data_as` would write."""
    if data.dtype is DType.F16 and stored is DType.F32:
        return data.bytes, True
    converted = data.convert(stored)
    if stored is DType.BOOL:  # stored as u32 words
        return array.array("I", list(converted.bytes)).tobytes(), False
    return converted.bytes, False


def _into(k: Kernels, into: GpuTensor | None, shape: tuple[int, ...],
          dtype: DType) -> GpuTensor:
    """`into`'s buffer when it is an `uninitialized` one of this shape and dtype (taken: it
    holds a value from now on), else a new tensor."""
    if into is not None and into.block in k.blank and into.shape == shape \
            and into.dtype is dtype and into.is_contiguous and into.offset == 0:
        k.blank.discard(into.block)
        return GpuTensor.dense(into.block, shape, dtype)
    return k.empty(shape, dtype, "from_data")


def upload_many(backend: WebGpu, items: Sequence[tuple[TensorData, DType, GpuTensor | None]]
                ) -> list[GpuTensor]:
    """Each `(data, dtype, into)` as a tensor kept as `dtype` (see `Backend.from_data_many`),
    staged together: one write per 64 MiB of bytes, no submit of its own."""
    k = backend.kernels
    if k.recorder is not None:  # a capture records uploads one by one (kernels.write)
        return [backend.from_data(d) if d.dtype is dt else backend.from_data_as(d, dt)
                for d, dt, _ in items]
    limit = min(_STAGED, k.runtime.limits.max_allocation)
    outs: list[GpuTensor] = []
    blob = bytearray()
    staged: list[tuple[int, int, bool, GpuTensor]] = []  # (offset, size, unpack, out)
    for data, dtype, into in items:
        stored = backend.stored_dtype(dtype)
        raw, unpack = _payload(data, stored)
        out = _into(k, into, data.shape, stored)
        outs.append(out)
        if not raw:
            continue
        size = aligned_size(len(raw))
        if blob and len(blob) + size > limit:
            _stage(k, blob, staged)
            blob, staged = bytearray(), []
        staged.append((len(blob), size, unpack, out))
        blob += raw
        blob += b"\0" * (size - len(raw))
    if blob:
        _stage(k, blob, staged)
    return outs


def _stage(k: Kernels, blob: bytearray, staged: list[tuple[int, int, bool, GpuTensor]]) -> None:
    """One write of `blob`, then each tensor unpacked or copied out of it."""
    block = k.pool.alloc(len(blob), "from_data")
    k.write(block.buffer, 0, bytes(blob))
    for offset, size, unpack, out in staged:
        if unpack:
            _unpack(k, block.buffer, offset // 4, out)
        else:
            k.runtime.copy_buffer(block.buffer, offset, out.block.buffer, 0, size)


__all__ = ["unpack_f16", "upload_many"]
