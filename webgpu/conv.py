"""conv2d and its two gradients as WGSL kernels: `shaders/conv2d.wgsl` (direct convolution,
4 output channels per invocation), `conv2d_input_grad.wgsl` (one invocation per input pixel,
gathering over the taps that reached it) and `conv2d_weight_grad.wgsl` (one workgroup per
weight, a tree sum over batch and pixels).

All three read padding, stride, dilation and groups from run-time metadata, so one compiled
pipeline serves every conv layer; padding is never materialised. They take f32 tensors in any
layout (non-contiguous views are copied dense first); the backend sends other dtypes to the
composites of `pyrite.backend.module_ops`. The Autodiff rule for conv2d
(`core/backend/autodiff_module.py`) calls these through `conv2d_saving`, `conv2d_input_grad` and
`conv2d_weight_grad`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from ..backend.module_ops import Pads, Pair, conv_out_size
from ..dtype import DType
from . import conv_gemm, matmul_config, software
from .codegen import BITS_FN, WORKGROUP, KernelKey, render, window_words
from .fused import DenseEpilogue as Epilogue
from .kernels import Kernels
from .matmul_config import CONFIGS
from .software import GEMM_MIN_K
from .tensor import GpuTensor

_REDUCE_WORKGROUP = 64  # invocations summing one weight's N*OH*OW terms
_F32 = (DType.F32, DType.F32, DType.F32)


def _geometry(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_hw: Pair, stride: Pair,
              padding: Pads, dilation: Pair, groups: int) -> list[int]:
    """The metadata words shared by the three kernels, after `total`: the window
    (`shaders/window.wgsl`), then [C_in, C_out, cg, cog]."""
    _, c_in, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    # the kernels take exactly two spatial dims (H, W): one word per dim
    return [*window_words((h, w), out_hw, (kh, kw), stride, padding, dilation),
            c_in, c_out, cg, c_out // groups]


_PLAIN_OUT = "fn pyrite_out(v: f32, i: i32) -> f32 { return v; }"
EPILOGUE_BINDING = 5  # the first binding of an epilogue in conv2d.wgsl


def _pipeline(k: Kernels, template: str, workgroup: int,
              epilogue: Epilogue | None = None) -> object:
    if template != "conv2d":
        key = KernelKey(template, "", _F32, 0, (workgroup,))
        return k.cached(key) or k.pipeline(key, render(f"{template}.wgsl", workgroup=workgroup))
    extra = epilogue.key() if epilogue is not None else ()
    key = KernelKey(template, "", _F32, 0, (workgroup, *extra))
    code = BITS_FN + epilogue.source(EPILOGUE_BINDING) if epilogue is not None else _PLAIN_OUT
    return k.cached(key) or k.pipeline(key, render(f"{template}.wgsl", workgroup=workgroup,
                                                   epilogue=code))


_DIRECT = "direct"
_GEMM = "gemm/"


def _out_hw(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair, padding: Pads,
            dilation: Pair) -> Pair:
    padded = (x_shape[2] + sum(padding[0]), x_shape[3] + sum(padding[1]))
    return conv_out_size(padded, (w_shape[2], w_shape[3]), stride, dilation)


def prefers_gemm(family: str, m: int, n: int, kdim: int, taps: int) -> bool:
    """The heuristic (autotune off, or its first guess): whether the implicit GEMM beats the
    direct kernel, for a GEMM of M x K @ K x N per group. From each conv layer of the MNIST
    model and SqueezeNet 1.1 on the H100 (benchmarks/results/conv_layers_h100.json): the
    forward GEMM wins from 32 output channels, or 16 with a reduction of 128 (MNIST's conv2,
    16 channels x 72, runs 1.9x faster direct); the input gradient's GEMM wins on 1x1 kernels
    only (a 3x3's has M = the few input channels, and the direct kernel, a conv with the
    flipped kernel, runs 1.3-2x faster); the weight gradient's from 32768 weights per group
    (the direct kernel's workgroup per weight wins below, 2-10x on the small layers)."""
    if family == "conv2d_input_grad_kernel":
        return taps == 1 and m >= 16
    if family == "conv2d_weight_grad_kernel":
        return m * n >= 32768
    return m >= 32 or (m >= 16 and kdim >= 128)


def _choose(k: Kernels, family: str, gemm: tuple[int, int, int], groups: int, taps: int,
            run: Callable[[str], object]) -> str:
    """"direct" or "gemm/<tile>" for a conv of this shape bucket: timed by autotune, else the
    heuristic (`prefers_gemm`, with `choose_config`'s tile)."""
    m, n, kdim = gemm
    limits = k.runtime.limits
    first = _heuristic(family, m, n, kdim, groups, taps,
                       limits.max_compute_workgroup_storage_size,
                       software.software(k.runtime.adapter))
    if k.autotune.mode == "off":
        return first

    def names() -> list[str]:
        tiled = [_GEMM + c.name for c in conv_gemm.tiles(k, m, n, kdim, groups)]
        return [first] + [c for c in (_DIRECT, *tiled) if c != first]

    return k.autotune.pick(family, (n, m, kdim, groups), DType.F32, names, run)


@lru_cache(maxsize=256)
def _heuristic(family: str, m: int, n: int, kdim: int, groups: int, taps: int,
               workgroup_bytes: int, soft: bool = False) -> str:
    if soft and family == "conv2d_kernel" and kdim < GEMM_MIN_K:
        return _DIRECT  # a page's software adapter (software.py): a first layer's 27 terms
    if not prefers_gemm(family, m, n, kdim, taps):
        return _DIRECT
    return _GEMM + matmul_config.choose_config(m, n, kdim, groups, workgroup_bytes,
                                               software=soft).name


def conv2d(k: Kernels, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None, stride: Pair,
           padding: Pads, dilation: Pair, groups: int,
           epilogue: Epilogue | None = None) -> GpuTensor:
    """(N, C_in, H, W) * (C_out, C_in/groups, KH, KW) (+ bias) -> dense (N, C_out, OH, OW);
    `epilogue` (fusion's) computes what is stored from each output value. The direct kernel
    or the implicit GEMM (`conv_gemm.py`), whichever autotune timed faster for the shape
    bucket (`_choose`)."""
    x = k.contiguous(x)
    oh, ow = _out_hw(x.shape, weight.shape, stride, padding, dilation)
    out = k.empty((x.shape[0], weight.shape[0], oh, ow), DType.F32, "conv2d")
    if out.numel == 0:
        return out
    bias = k.contiguous(bias) if bias is not None else None

    def launch(name: str, ep: Epilogue | None = None) -> None:
        if name == _DIRECT:
            _direct(k, out, x, weight, bias, stride, padding, dilation, groups, ep)
        else:
            conv_gemm.run(k, CONFIGS[name[len(_GEMM):]], out, x, k.contiguous(weight), bias,
                          x.shape, stride, padding, dilation, groups, conv_gemm.FORWARD, ep)

    gemm = conv_gemm.sizes(x.shape, weight.shape, (oh, ow), groups, conv_gemm.FORWARD)
    taps = weight.shape[2] * weight.shape[3]
    launch(_choose(k, "conv2d_kernel", gemm, groups, taps, launch), epilogue)
    return out


def _direct(k: Kernels, out: GpuTensor, x: GpuTensor, weight: GpuTensor,
            bias: GpuTensor | None, stride: Pair, padding: Pads, dilation: Pair, groups: int,
            epilogue: Epilogue | None = None) -> None:
    """conv2d.wgsl into `out`; the weight is read through its strides (any view)."""
    n, c_out, oh, ow = out.shape
    blocks = -(-(c_out // groups) // 4)  # 4-channel blocks per group
    total = n * groups * blocks * oh * ow
    meta = [total, *_geometry(x.shape, weight.shape, (oh, ow), stride, padding, dilation,
                              groups), blocks, int(bias is not None), weight.offset,
            *weight.strides]
    bias_buffer = bias.block.buffer if bias is not None else weight.block.buffer
    wg = k.autotune.workgroup(
        "conv2d", (total, weight.numel // c_out), DType.F32, WORKGROUP,
        lambda: _direct(k, out, x, weight, bias, stride, padding, dilation, groups))
    tail = epilogue.bindings(k) if epilogue is not None else []
    k.launch(_pipeline(k, "conv2d", wg, epilogue),
             [k.meta(meta), x.block.buffer, weight.block.buffer, bias_buffer, out.block.buffer,
              *tail], k.grid(-(-total // wg)))


def conv2d_input_grad(k: Kernels, grad: GpuTensor, weight: GpuTensor,
                      input_shape: tuple[int, ...], stride: Pair, padding: Pads, dilation: Pair,
                      groups: int) -> GpuTensor:
    """d conv2d / d x: dense (N, C_in, H, W) from the output gradient (N, C_out, OH, OW); the
    direct kernels or the implicit GEMM, chosen as `conv2d` chooses."""
    grad = k.contiguous(grad)
    out = k.empty(tuple(input_shape), DType.F32, "conv2d_input_grad")
    if out.numel == 0:
        return out

    def launch(name: str) -> None:
        if name == _DIRECT:
            _direct_input_grad(k, out, grad, weight, stride, padding, dilation, groups)
        else:
            conv_gemm.run(k, CONFIGS[name[len(_GEMM):]], out, grad, k.contiguous(weight), None,
                          tuple(input_shape), stride, padding, dilation, groups,
                          conv_gemm.INPUT_GRAD)

    gemm = conv_gemm.sizes(tuple(input_shape), weight.shape, grad.shape[2:], groups,
                           conv_gemm.INPUT_GRAD)
    taps = weight.shape[2] * weight.shape[3]
    launch(_choose(k, "conv2d_input_grad_kernel", gemm, groups, taps, launch))
    return out


def _direct_input_grad(k: Kernels, out: GpuTensor, grad: GpuTensor, weight: GpuTensor,
                       stride: Pair, padding: Pads, dilation: Pair, groups: int) -> None:
    reach = (dilation[0] * (weight.shape[2] - 1), dilation[1] * (weight.shape[3] - 1))
    if stride == (1, 1) and all(p <= r for pads, r in zip(padding, reach, strict=True)
                                for p in pads):
        # a stride-1 conv's input gradient is a conv of the gradient with the flipped,
        # transposed kernel: the forward kernel does it faster than the gather below
        pads = tuple((r - p[0], r - p[1]) for p, r in zip(padding, reach, strict=True))
        _direct(k, out, grad, _transposed(k, weight, groups), None, (1, 1), pads, dilation,
                groups)
        return
    weight = k.contiguous(weight)
    meta = [out.numel, *_geometry(out.shape, weight.shape, grad.shape[2:], stride, padding,
                                  dilation, groups)]
    k.launch(_pipeline(k, "conv2d_input_grad", WORKGROUP),
             [k.meta(meta), grad.block.buffer, weight.block.buffer, out.block.buffer],
             k.grid(-(-out.numel // WORKGROUP)))


def _transposed(k: Kernels, weight: GpuTensor, groups: int) -> GpuTensor:
    """(C_out, cg, KH, KW) -> (C_in, C_out/groups, KH, KW), each tap flipped: the kernel
    that convolves conv2d's output gradient back onto its input. With one group a view of the
    weight (conv2d reads it through its strides); with several a dense copy (the group and
    channel dims of the view do not merge into one)."""
    c_out, cg, kh, kw = weight.shape
    if groups == 1:
        return weight.permuted((1, 0, 2, 3)).flipped((2, 3))
    per_group = weight.reshaped((groups, c_out // groups, cg, kh, kw)) if \
        weight.is_contiguous else k.copy(weight).reshaped((groups, c_out // groups, cg, kh, kw))
    view = per_group.permuted((0, 2, 1, 3, 4)).flipped((3, 4))
    return k.copy(view).reshaped((groups * cg, c_out // groups, kh, kw))


def conv2d_weight_grad(k: Kernels, x: GpuTensor, grad: GpuTensor,
                       weight_shape: tuple[int, ...], stride: Pair, padding: Pads,
                       dilation: Pair, groups: int) -> GpuTensor:
    """d conv2d / d weight: dense (C_out, C_in/groups, KH, KW); the direct kernel or the
    implicit GEMM (K split over the batch's pixels), chosen as `conv2d` chooses."""
    x, grad = k.contiguous(x), k.contiguous(grad)
    out = k.empty(tuple(weight_shape), DType.F32, "conv2d_weight_grad")
    if out.numel == 0:
        return out

    def launch(name: str) -> None:
        if name == _DIRECT:
            _direct_weight_grad(k, out, x, grad, stride, padding, dilation, groups)
        else:
            conv_gemm.run(k, CONFIGS[name[len(_GEMM):]], out, x, grad, None, x.shape, stride,
                          padding, dilation, groups, conv_gemm.WEIGHT_GRAD)

    gemm = conv_gemm.sizes(x.shape, tuple(weight_shape), grad.shape[2:], groups,
                           conv_gemm.WEIGHT_GRAD)
    taps = weight_shape[2] * weight_shape[3]
    launch(_choose(k, "conv2d_weight_grad_kernel", gemm, groups, taps, launch))
    return out


def _direct_weight_grad(k: Kernels, out: GpuTensor, x: GpuTensor, grad: GpuTensor,
                        stride: Pair, padding: Pads, dilation: Pair, groups: int) -> None:
    meta = [out.numel, *_geometry(x.shape, out.shape, grad.shape[2:], stride, padding,
                                  dilation, groups), x.shape[0]]
    wg = k.autotune.workgroup(
        "conv2d_weight_grad", (out.numel, grad.numel // grad.shape[1]), DType.F32,
        _REDUCE_WORKGROUP,
        lambda: _direct_weight_grad(k, out, x, grad, stride, padding, dilation, groups))
    k.launch(_pipeline(k, "conv2d_weight_grad", wg),
             [k.meta(meta), x.block.buffer, grad.block.buffer, out.block.buffer],
             k.grid(out.numel))
