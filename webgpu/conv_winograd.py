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
place (`flip`). fp32 rounding: the transforms add and halve, so the error stays within a few
ulps of the sums (the unit tests hold it to the conformance tolerances).

No rule dispatches it. On the H100 (benchmarks/README.md, session 8d) it took 125-199 us on
SqueezeNet's fire4-9 3x3 forwards and input gradients as dispatched, against 84-172 for the
implicit GEMM by hand and 36-67 for cuDNN in the same run: four dispatches, and the transformed
operands' round trips through memory, cost more than the 2.25x fewer multiplies saved. It is a
variant by name (`conv.launch_variant`, benchmarks/conv_sweep.py) and its stages are timed
apart by benchmarks/conv_gather_cost.py, the measurements a fused form would start from.
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import conv_gemm, linalg
from .codegen import KernelKey, render
from .kernels import Kernels
from .runtime import Pipeline
from .tensor import GpuTensor

NAME = "winograd"  # `conv.py`'s variant name
WORKGROUP = 256
_F32 = (DType.F32, DType.F32, DType.F32)


def tiles(out_hw: Pair) -> Pair:
    """Rows and columns of 2x2 output tiles (a last half tile where the side is odd)."""
    return -(-out_hw[0] // 2), -(-out_hw[1] // 2)


def _consts(names: tuple[str, ...], values: tuple[int, ...]) -> str:
    return "\n".join(f"const {n}: i32 = {v};" for n, v in zip(names, values, strict=True))


def fits(x_shape: tuple[int, ...], k_out: int, out_hw: Pair, max_workgroups: int,
         max_binding_bytes: int) -> bool:
    """Whether the grids (rows of (image, channel) planes, blocks of tiles) and the transformed
    operands (16 x C x P and 16 x K x P floats, P the tiles) fit the device."""
    n, c = x_shape[0], x_shape[1]
    th, tw = tiles(out_hw)
    return max(n * c, n * k_out, -(-th * tw // WORKGROUP), -(-k_out * c // WORKGROUP)) <= \
        max_workgroups and 16 * max(c, k_out) * n * th * tw * 4 <= max_binding_bytes


def takes(w_shape: tuple[int, ...], stride: Pair, padding: Pads, dilation: Pair,
          groups: int) -> bool:
    """Whether a conv of this weight (K, C, KH, KW) and geometry is a Winograd F(2x2, 3x3) conv:
    3x3, stride 1, no dilation, one group, padding at most 2 on a side."""
    return w_shape[2:] == (3, 3) and stride == (1, 1) and dilation == (1, 1) and groups == 1 \
        and all(0 <= p <= 2 for pads in padding for p in pads)


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


def transform_input(k: Kernels, x: GpuTensor, v: GpuTensor, out_hw: Pair,
                    padding: Pads) -> None:
    """V (16, C, P) into `v` from `x` (N, C, IH, IW, dense) for an output of `out_hw`."""
    n, c, ih, iw = x.shape
    th, tw = tiles(out_hw)
    pipeline = _pipeline(k, "input", (n, c, ih, iw, th, tw, padding[0][0], padding[1][0]),
                         ("N", "C", "IH", "IW", "TH", "TW", "PT", "PL"), ("", False))
    k.launch(pipeline, [x.block.buffer, v.block.buffer], (-(-th * tw // WORKGROUP), n * c, 1))


def transform_output(k: Kernels, m: GpuTensor, bias: GpuTensor | None, out: GpuTensor) -> None:
    """`out` (N, K, OH, OW, dense) from the products M (16, K, P, dense) and `bias` (K) or
    None."""
    n, k_out, oh, ow = out.shape
    th, tw = tiles((oh, ow))
    pipeline = _pipeline(k, "output", (n, k_out, oh, ow, th, tw),
                         ("N", "K", "OH", "OW", "TH", "TW"), ("HAS_BIAS", bias is not None))
    b = m if bias is None else k.dense(bias)
    k.launch(pipeline, [m.block.buffer, b.block.buffer, out.block.buffer],
             (-(-th * tw // WORKGROUP), n * k_out, 1))


def run(k: Kernels, out: GpuTensor, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None,
        padding: Pads, flip: bool = False) -> None:
    """The stride-1 3x3 conv of `x` (N, C, IH, IW) into `out` (N, K, OH, OW, dense) with
    `padding`'s top and left (the output's size says the rest) and `bias` (K) or None: with
    `weight` (K, C, 3, 3), or with `flip` the input gradient's kernel, `weight` (C, K, 3, 3)
    flipped and transposed (`x` then the output gradient, `padding` the flipped padding)."""
    th, tw = tiles(out.shape[2:])
    v = k.empty((16, x.shape[1], x.shape[0] * th * tw), DType.F32, "conv2d_winograd")
    transform_input(k, k.dense(x), v, out.shape[2:], padding)
    m = k.dense(linalg.matmul(k, weights(k, weight, flip), v))  # (16, K, P)
    transform_output(k, m, bias, out)


def _refuse(what: str, w_shape: tuple[int, ...], stride: Pair, padding: Pads, dilation: Pair,
            groups: int) -> ValueError:
    return ValueError(f"the {NAME} {what} needs a 3x3 kernel, stride 1, no dilation, one group "
                      f"and padding at most 2 (weight {w_shape}, stride {stride}, padding "
                      f"{padding}, dilation {dilation}, groups {groups}): use direct or a gemm "
                      f"variant")


def _check_fits(k: Kernels, x_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> None:
    limits = k.runtime.limits
    if not fits(x_shape, out_shape[1], out_shape[2:], limits.max_compute_workgroups_per_dimension,
                limits.max_storage_buffer_binding_size):
        raise ValueError(f"the {NAME} conv of {x_shape} onto {out_shape} exceeds this device's "
                         f"grid or buffer-binding limits: use a gemm variant or a smaller batch")


def forward(k: Kernels, out: GpuTensor, x: GpuTensor, weight: GpuTensor, stride: Pair,
            padding: Pads, dilation: Pair, groups: int, bias: GpuTensor | None) -> None:
    """conv2d's forward (with `bias` or None) into `out`, where it `takes` this form."""
    if not takes(weight.shape, stride, padding, dilation, groups):
        raise _refuse("forward", weight.shape, stride, padding, dilation, groups)
    _check_fits(k, x.shape, out.shape)
    run(k, out, x, weight, bias, padding)


def input_grad(k: Kernels, out: GpuTensor, grad: GpuTensor, weight: GpuTensor, stride: Pair,
               padding: Pads, dilation: Pair, groups: int) -> None:
    """A conv's input gradient into `out` (N, C_in, H, W): the output gradient `grad`
    convolved with the flipped, transposed `weight` (C_out, C_in, 3, 3), at stride 1."""
    pads = conv_gemm.flipped_padding(weight.shape, stride, padding, dilation)
    if pads is None or not takes(weight.shape, stride, pads, dilation, groups):
        raise _refuse("input gradient", weight.shape, stride, padding, dilation, groups)
    _check_fits(k, grad.shape, out.shape)
    run(k, out, grad, weight, None, pads, flip=True)


__all__ = ["NAME", "WORKGROUP", "fits", "forward", "input_grad", "run", "takes", "tiles",
           "transform_input", "transform_output", "weights"]
