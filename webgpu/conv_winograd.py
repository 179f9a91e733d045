"""The Winograd F(2x2, 3x3) convolution: a stride-1 3x3 conv as 16 matmuls on transformed
tiles (`shaders/conv2d_winograd_{weight,input,output}.wgsl` and `linalg.matmul`).

Each 2x2 output tile of a 3x3 conv at stride 1 is A^T [(G g G^T) * (B^T d B)] A for the 4x4
input patch d that it reads; the products of one entry e of the 4x4 transforms over the input
channels are one matmul, U_e (K x C) @ V_e (C x P), P the tiles of the batch. That is 16
multiply-adds per tile and channel pair where the direct conv does 36, and the products run on
the plain batched matmul (vec4 loads, no gather) instead of the implicit GEMM's gathers. Four
dispatches: the weight transform (`U`, 16 x K x C), the input transform (`V`, 16 x C x P), the
batched matmul and the output transform (with the bias, and the bounds of an odd image's last
tiles).

A stride-1 input gradient is itself such a conv: the output gradient convolved with the
flipped, transposed kernel at `conv_gemm.flipped_padding`, which the weight transform reads in
place (`flip`). SqueezeNet's fire4-9 3x3 input gradients (C_out 128-256 onto 32-64 channels)
were bounded by the implicit GEMM's tile loop (benchmarks/README.md, session 8c); `conv.py`
runs them and the stride-1 3x3 forwards here natively on GPUs (`chosen`), where no Fusion
epilogue comes with the op (that stays with the GEMM). fp32 rounding: the transforms add and
halve, so the error stays within a few ulps of the sums (the conformance tolerances hold).
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import conv_gemm, linalg, software
from .codegen import KernelKey, render
from .kernels import Kernels
from .runtime import Pipeline
from .tensor import GpuTensor

NAME = "winograd"  # `conv.py`'s variant name
WORKGROUP = 256
# `chosen`: a conv of at least MIN_OUT output and MIN_IN input channels: fire4-9's 3x3 input
# gradients (128-256 channels onto 32-64) and forwards (32-64 onto 128-256); fire2/3's (16
# channels on one side) and MNIST's keep their kernels
MIN_OUT = 32
MIN_IN = 32
_F32 = (DType.F32, DType.F32, DType.F32)


def _tiles(out_hw: Pair) -> Pair:
    return -(-out_hw[0] // 2), -(-out_hw[1] // 2)


def _consts(names: tuple[str, ...], values: tuple[int, ...]) -> str:
    return "\n".join(f"const {n}: i32 = {v};" for n, v in zip(names, values, strict=True))


def fits(x_shape: tuple[int, ...], k_out: int, out_hw: Pair, max_workgroups: int,
         max_binding_bytes: int) -> bool:
    """Whether the grids (rows of (image, channel) planes, blocks of tiles) and the transformed
    input (16 x C x P floats, the largest buffer) fit the device."""
    n, c = x_shape[0], x_shape[1]
    th, tw = _tiles(out_hw)
    return max(n * c, n * k_out, -(-th * tw // WORKGROUP), -(-k_out * c // WORKGROUP)) <= \
        max_workgroups and 16 * c * n * th * tw * 4 <= max_binding_bytes


def takes(w_shape: tuple[int, ...], stride: Pair, padding: Pads, dilation: Pair,
          groups: int) -> bool:
    """Whether a conv of this weight (K, C, KH, KW) and geometry is a Winograd F(2x2, 3x3) conv:
    3x3, stride 1, no dilation, one group, padding at most 2 on a side."""
    return w_shape[2:] == (3, 3) and stride == (1, 1) and dilation == (1, 1) and groups == 1 \
        and all(0 <= p <= 2 for pads in padding for p in pads)


def chosen(k: Kernels, k_out: int, c_in: int) -> bool:
    """Whether `conv.py`'s forward or input gradient runs here (its conv `takes` this form, no
    epilogue):
    natively on a GPU (a page and CPU adapters keep the kernels they have), for a conv of at
    least MIN_OUT output and MIN_IN input channels."""
    return conv_gemm.native(k) and k.runtime.adapter.adapter_type != "CPU" and \
        not software.software(k.runtime.adapter) and k_out >= MIN_OUT and c_in >= MIN_IN


def _pipeline(k: Kernels, which: str, words: tuple[int, ...], names: tuple[str, ...],
              flag: tuple[str, bool]) -> Pipeline:
    key = KernelKey(f"conv2d_winograd_{which}", "", _F32, 0, (WORKGROUP, words, flag))
    found = k.cached(key)
    if found is None:
        geometry = _consts(names, words)
        if flag[0]:
            geometry += f"\nconst {flag[0]}: bool = {str(flag[1]).lower()};"
        found = k.pipeline(key, render(f"conv2d_winograd_{which}.wgsl", workgroup=WORKGROUP,
                                       geometry=geometry))
    return found


def weights(k: Kernels, weight: GpuTensor, flip: bool) -> GpuTensor:
    """U (16, K, C) of a 3x3 kernel: of `weight` (K, C, 3, 3), or with `flip` of the conv whose
    kernel is `weight` (C, K, 3, 3) flipped and transposed (an input gradient's)."""
    w = k.dense(weight)
    k_out, c = (w.shape[1], w.shape[0]) if flip else (w.shape[0], w.shape[1])
    u = k.empty((16, k_out, c), DType.F32, "conv2d_winograd")
    pipeline = _pipeline(k, "weight", (k_out, c), ("K", "C"), ("FLIP", flip))
    k.launch(pipeline, [w.block.buffer, u.block.buffer],
             (-(-k_out * c // WORKGROUP), 1, 1))
    return u


def run(k: Kernels, out: GpuTensor, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None,
        padding: Pads, flip: bool = False) -> None:
    """The stride-1 3x3 conv of `x` (N, C, IH, IW) into `out` (N, K, OH, OW, dense) with
    `padding`'s top and left (the output's size says the rest) and `bias` (K) or None: with
    `weight` (K, C, 3, 3), or with `flip` the input gradient's kernel, `weight` (C, K, 3, 3)
    flipped and transposed (`x` then the output gradient, `padding` the flipped padding)."""
    n, c, ih, iw = x.shape
    k_out, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    th, tw = _tiles((oh, ow))
    tiles = n * th * tw
    xd = k.dense(x)
    u = weights(k, weight, flip)
    v = k.empty((16, c, tiles), DType.F32, "conv2d_winograd")
    pipeline = _pipeline(k, "input", (n, c, ih, iw, th, tw, padding[0][0], padding[1][0]),
                         ("N", "C", "IH", "IW", "TH", "TW", "PT", "PL"), ("", False))
    k.launch(pipeline, [xd.block.buffer, v.block.buffer],
             (-(-th * tw // WORKGROUP), n * c, 1))
    m = k.dense(linalg.matmul(k, u, v))  # (16, K, P)
    pipeline = _pipeline(k, "output", (n, k_out, oh, ow, th, tw),
                         ("N", "K", "OH", "OW", "TH", "TW"), ("HAS_BIAS", bias is not None))
    b = m if bias is None else k.dense(bias)
    k.launch(pipeline, [m.block.buffer, b.block.buffer, out.block.buffer],
             (-(-th * tw // WORKGROUP), n * k_out, 1))


def _refuse(what: str, w_shape: tuple[int, ...], stride: Pair, padding: Pads, dilation: Pair,
            groups: int) -> ValueError:
    return ValueError(f"the {NAME} {what} needs a 3x3 kernel, stride 1, no dilation, one group "
                      f"and padding at most 2 (weight {w_shape}, stride {stride}, padding "
                      f"{padding}, dilation {dilation}, groups {groups}): use direct or a gemm "
                      f"variant")


def forward(k: Kernels, out: GpuTensor, x: GpuTensor, weight: GpuTensor, stride: Pair,
            padding: Pads, dilation: Pair, groups: int, bias: GpuTensor | None) -> None:
    """conv2d's forward (with `bias` or None) into `out`, where it `takes` this form."""
    if not takes(weight.shape, stride, padding, dilation, groups):
        raise _refuse("forward", weight.shape, stride, padding, dilation, groups)
    run(k, out, x, weight, bias, padding)


def input_grad(k: Kernels, out: GpuTensor, grad: GpuTensor, weight: GpuTensor, stride: Pair,
               padding: Pads, dilation: Pair, groups: int) -> None:
    """A conv's input gradient into `out` (N, C_in, H, W): the output gradient `grad`
    convolved with the flipped, transposed `weight` (C_out, C_in, 3, 3), at stride 1."""
    pads = conv_gemm.flipped_padding(weight.shape, stride, padding, dilation)
    if pads is None or not takes(weight.shape, stride, pads, dilation, groups):
        raise _refuse("input gradient", weight.shape, stride, padding, dilation, groups)
    run(k, out, grad, weight, None, pads, flip=True)


def forward_rule(k: Kernels, x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair,
                 padding: Pads, dilation: Pair, groups: int) -> str | None:
    """NAME where `conv.py`'s forward (without an epilogue) runs here: a conv that `takes`
    this form, `chosen` on this device, that `fits`; else None (the heuristic's)."""
    limits = k.runtime.limits
    out_hw = (x_shape[2] + sum(padding[0]) - 2, x_shape[3] + sum(padding[1]) - 2)
    if takes(w_shape, stride, padding, dilation, groups) and chosen(k, w_shape[0], w_shape[1]) \
            and fits(x_shape, w_shape[0], out_hw, limits.max_compute_workgroups_per_dimension,
                     limits.max_storage_buffer_binding_size):
        return NAME
    return None


def input_grad_rule(k: Kernels, grad_shape: tuple[int, ...], w_shape: tuple[int, ...],
                    stride: Pair, padding: Pads, dilation: Pair, groups: int) -> str | None:
    """NAME where `conv.py`'s input gradient (without an epilogue) runs here: a conv that
    `takes` this form, `chosen` on this device, that `fits`; else None (the heuristic's)."""
    pads = conv_gemm.flipped_padding(w_shape, stride, padding, dilation)
    limits = k.runtime.limits
    if pads is not None and takes(w_shape, stride, pads, dilation, groups) and \
            chosen(k, w_shape[1], w_shape[0]) and \
            fits(grad_shape, w_shape[1], (grad_shape[2] + pads[0][0] + pads[0][1] - 2,
                                          grad_shape[3] + pads[1][0] + pads[1][1] - 2),
                 limits.max_compute_workgroups_per_dimension,
                 limits.max_storage_buffer_binding_size):
        return NAME
    return None


__all__ = ["MIN_IN", "MIN_OUT", "NAME", "WORKGROUP", "chosen", "fits", "forward", "forward_rule",
           "input_grad", "input_grad_rule", "run", "takes", "weights"]
