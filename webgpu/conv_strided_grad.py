"""The strided conv's input gradient with its weights staged in workgroup memory
(`shaders/conv2d_input_grad_staged.wgsl`).

A strided input gradient has no flipped-forward form (`conv_gemm.flipped_padding`), and a first
layer's few input channels leave the GEMM's rows mostly empty (SqueezeNet's conv1: 3 input
channels, M = 3 against tiles of 16-64 rows), so it runs the direct gather of
`conv2d_input_grad.wgsl`: one invocation per input pixel and block of 4 input channels, which
reads 4 weights from storage for every gradient value. Here the workgroup stages its block's
weights once (C_out / groups x taps vec4s) and its geometry is compiled in, so the inner loop
is one storage read and one shared vec4 per output channel. Natively on a GPU only (`applies`),
as `conv.py`'s input gradient at a stride; a page and CPU adapters keep the plain gather.
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import conv_gemm, software
from .codegen import KernelKey, render
from .kernels import Kernels
from .tensor import GpuTensor

WORKGROUP = 256  # pixels per workgroup
NAME = "direct/staged"  # `conv.py`'s variant name (the plain gather: "direct/gather")
_F32 = (DType.F32, DType.F32, DType.F32)
_WORDS = ("H", "W", "OH", "OW", "KH", "KW", "SH", "SW", "PT", "PL", "DH", "DW", "C_IN", "C_OUT",
          "CG", "COG")


def _grid(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair,
          groups: int) -> tuple[int, int, int]:
    n, _, h, w = x_shape
    pixels = stride[0] * stride[1] * -(-h // stride[0]) * -(-w // stride[1])
    return -(-pixels // WORKGROUP), n * groups * -(-w_shape[1] // 4), 1


def fits(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair, groups: int,
         max_workgroup_bytes: int, max_workgroups: int) -> bool:
    """Whether the device holds the staged weights (C_out / groups x taps vec4s) and the
    grid (pixels, and (image, group, block) rows)."""
    c_out, _, kh, kw = w_shape
    return (c_out // groups) * kh * kw * 16 <= max_workgroup_bytes and \
        max(_grid(x_shape, w_shape, stride, groups)) <= max_workgroups


def applies(k: Kernels, x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair,
            groups: int) -> bool:
    """Whether `conv.py`'s strided input gradient runs here staged: natively on a GPU (not a
    page, not a CPU adapter), where it fits."""
    limits = k.runtime.limits
    return conv_gemm.native(k) and k.runtime.adapter.adapter_type != "CPU" and \
        not software.software(k.runtime.adapter) and \
        fits(x_shape, w_shape, stride, groups, limits.max_compute_workgroup_storage_size,
             limits.max_compute_workgroups_per_dimension)


def run(k: Kernels, out: GpuTensor, grad: GpuTensor, weight: GpuTensor, stride: Pair,
        padding: Pads, dilation: Pair, groups: int) -> None:
    """dx into `out` (N, C_in, H, W) from the output gradient `grad` and the dense `weight`
    (C_out, C_in / groups, KH, KW) of a conv with this stride, padding, dilation and groups."""
    n, c_in, h, w = out.shape
    c_out, cg, kh, kw = weight.shape
    (pt, _), (pl, _) = padding
    words = (h, w, grad.shape[2], grad.shape[3], kh, kw, *stride, pt, pl, *dilation, c_in,
             c_out, cg, c_out // groups)
    key = KernelKey("conv2d_input_grad_staged", "", _F32, 0, (WORKGROUP, words))
    pipeline = k.cached(key)
    if pipeline is None:
        geometry = "\n".join(f"const {name}: i32 = {v};" for name, v in zip(_WORDS, words,
                                                                          strict=True))
        pipeline = k.pipeline(key, render("conv2d_input_grad_staged.wgsl", workgroup=WORKGROUP,
                                          geometry=geometry))
    k.launch(pipeline, [grad.block.buffer, weight.block.buffer, out.block.buffer],
             _grid(out.shape, weight.shape, stride, groups))


__all__ = ["NAME", "WORKGROUP", "applies", "fits", "run"]
