"""Data onto the device in another dtype than it arrives in: half-precision values unpacked to
f32 by a kernel (`shaders/unpack_f16.wgsl`), so loading a half-precision record costs one
upload and one dispatch, not a host-side conversion of every value (slow in pure Python, as in
a page)."""

from __future__ import annotations

from ..dtype import DType
from .codegen import WORKGROUP, KernelKey, header, render
from .kernels import Kernels
from .tensor import GpuTensor


def unpack_f16(k: Kernels, raw: bytes, shape: tuple[int, ...]) -> GpuTensor:
    """An f32 tensor of `shape` from little-endian f16 bytes."""
    out = k.empty(shape, DType.F32, "from_data")
    numel = len(raw) // 2
    words = k.pool.alloc(len(raw) + (-len(raw) % 4), "from_data")
    k.write(words.buffer, 0, raw + b"\0" * (-len(raw) % 4))
    key = KernelKey("unpack_f16", "", (DType.F16, DType.F32))
    pipeline = k.cached(key) or k.pipeline(key, render(
        "unpack_f16.wgsl", enable=header(()), workgroup=WORKGROUP))
    k.launch(pipeline, [k.meta([numel]), words.buffer, out.block.buffer],
             k.grid(-(-numel // WORKGROUP)))
    return out


__all__ = ["unpack_f16"]
