"""conv2d and its two gradients as WGSL kernels: `shaders/conv2d.wgsl` (direct convolution,
4 output channels per invocation), `conv2d_input_grad.wgsl` (one invocation per input pixel,
gathering over the taps that reached it) and `conv2d_weight_grad.wgsl` (one workgroup per
channel pair, chunk of taps and slice of the batch's pixels, every tap of the chunk summed in
registers), or the implicit GEMMs of `conv_gemm.py`, or (few output channels: a forward, a
stride-1 input gradient) the channel-block kernel of `conv_channels.py`.

All three read padding, stride, dilation and groups from run-time metadata, so one compiled
pipeline serves every conv layer; padding is never materialised. They take f32 tensors in any
layout (non-contiguous views are copied dense first); the backend sends other dtypes to the
composites of `pyrite.backend.module_ops`. The Autodiff rule for conv2d
(`core/backend/autodiff_module.py`) calls these through `conv2d_saving`, `conv2d_input_grad` and
`conv2d_weight_grad`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

from ..backend.module_ops import Pads, Pair, conv_out_size
from ..dtype import DType
from . import (
    conv_channels,
    conv_direct,
    conv_gemm,
    conv_plan,
    conv_slices,
    conv_strided_grad,
    conv_wgrad,
    conv_winograd,
    linalg,
    matmul_variants,
    software,
)
from .codegen import BITS_FN, WORKGROUP, KernelKey, render, window_words
from .conv_direct import Block
from .fused import DenseEpilogue as Epilogue
from .kernels import Kernels
from .matmul_config import tile
from .tensor import GpuTensor

_REDUCE_WORKGROUP = 64  # invocations of a direct weight-gradient workgroup
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


def _pipeline(k: Kernels, template: str, workgroup: int, epilogue: Epilogue | None = None,
              block: Block = conv_direct.PLAIN) -> object:
    if template != "conv2d":
        key = KernelKey(template, "", _F32, 0, (workgroup,))
        return k.cached(key) or k.pipeline(key, render(f"{template}.wgsl", workgroup=workgroup))
    extra = epilogue.key() if epilogue is not None else ()
    key = KernelKey(template, block.name, _F32, 0, (workgroup, *extra))
    found = k.cached(key)
    if found is not None:  # the epilogue's source is generated on a miss only
        return found
    code = BITS_FN + epilogue.source(EPILOGUE_BINDING) if epilogue is not None else _PLAIN_OUT
    return k.pipeline(key, render(f"{template}.wgsl", workgroup=workgroup, epilogue=code,
                                  **conv_direct.statements(block)))


_DIRECT = "direct"
_GEMM = "gemm/"


def _out_hw(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair, padding: Pads,
            dilation: Pair) -> Pair:
    padded = (x_shape[2] + sum(padding[0]), x_shape[3] + sum(padding[1]))
    return conv_out_size(padded, (w_shape[2], w_shape[3]), stride, dilation)


def prefers_gemm(family: str, m: int, n: int, kdim: int, taps: int) -> bool:
    """The heuristic (autotune off, or autotune's first guess): whether the implicit GEMM
    beats the direct kernel, for a GEMM of M x K @ K x N per group (`conv_gemm.sizes`). Fitted
    to every conv of the MNIST model and SqueezeNet 1.1, each op timed on the direct kernel and
    on the GEMM with each of six tiles on the H100
    (benchmarks/results/conv_layers_h100_s4_sweep.json):
    - forward: the GEMM from 32 output channels, and from 16 on a 1x1 kernel. Below that the
      direct kernel's 4 channels per invocation reuse each input read across a window's taps
      (MNIST's conv2, 16 channels of 3x3, ran 51 us direct against 64 as a GEMM).
    - input gradient: the GEMM from 32 input channels, and from 16 on a 1x1 kernel (a 3x3
      with 16 input channels ran 317 us direct, 416 as the fastest GEMM; with 32-64, the GEMM
      won by 6-15%; a first layer's 3 channels at stride 2 ran 6x faster direct).
    - weight gradient: the GEMM from 1024 weights per group (its K split in slices); below it
      the direct kernel (MNIST's conv1, 72 weights: 139 us against 166)."""
    if family == "conv2d_weight_grad_kernel":
        return m * n >= 1024
    return m >= 32 or (m >= 16 and taps == 1)


def _choose(k: Kernels, family: str, gemm: tuple[int, int, int], groups: int, taps: int,
            run: Callable[[str], object], plain: bool = False,
            blocks: Callable[[], Sequence[Block]] = tuple, channels: bool = False) -> str:
    """"direct", "gemm/<tile>", "channels/<form>" (`conv_channels.py`, where `channels`: a
    forward, or a stride-1 input gradient) or (a `plain` 1x1 layer's ops) "matmul" for a conv
    of this shape bucket: timed by autotune, else the heuristic (`prefers_gemm`, with
    `conv_gemm.choose_tile`'s tile, software adapters included, and `conv_channels.choose`
    natively). "direct" runs the heuristic's block (`conv_direct.choose_block`); autotune also
    times the direct kernel with each of `blocks()`, as "direct/<block>"."""
    m, n, kdim = gemm
    limits = k.runtime.limits
    soft = software.software(k.runtime.adapter)
    sliced = _sliced(k)
    first = _heuristic(family, m, n, kdim, groups, taps,
                       limits.max_compute_workgroup_storage_size, soft, plain, channels,
                       limits.max_compute_workgroups_per_dimension, sliced)
    if k.autotune.mode == "off":
        return first

    def names() -> list[str]:
        tiled = [_GEMM + c.name for c in conv_gemm.tiles(k, m, n, kdim, groups)]
        direct = [_DIRECT] + [f"{_DIRECT}/{b.name}" for b in blocks()]
        whole = [_MATMUL] if plain and not soft else []
        w_shape = (m * groups, kdim // taps, taps, 1)
        blocked = [f.name for f in map(conv_channels.Form, (8, 16, 32))
                   if channels and taps <= conv_channels.MAX_TAPS and conv_channels.fits(
                       f, w_shape, n, groups, limits.max_compute_workgroup_storage_size,
                       limits.max_compute_workgroups_per_dimension)]
        own = [conv_wgrad.PREFIX + conv_wgrad.choose_tile(m, n, soft)] \
            if family == "conv2d_weight_grad_kernel" else \
            [f.name for f in (conv_slices.WIDE, conv_slices.NARROW) if sliced and conv_slices.fits(
                f, limits.max_compute_workgroup_storage_size, sliced)]
        return [first] + [c for c in (*direct, *tiled, *blocked, *whole, *own) if c != first]

    return k.autotune.pick(family, (n, m, kdim, groups), DType.F32, names, run)


# The direct kernel with its blocks of channels x pixels (`conv_direct.py`) beside the GEMM,
# re-fitted on the H100 after the blocks came (conv_layers_h100_s5_lead.json, autotune off):
# a forward or input gradient of at least DIRECT_MIN_COLUMNS GEMM columns (output pixels of
# the batch, or input pixels) and at most DIRECT_MAX_TERMS terms per output runs direct on a
# native adapter, whatever `prefers_gemm` says. SqueezeNet's conv1 forward (204,304 columns,
# 27 terms) took 105 us direct against 160 as the GEMM, fire2's 1x1 forwards 36-55 against
# 45-58 and the 56x56 layers' 1x1 input gradients 0.87-0.93x the GEMM's time; with more terms
# (fire2/3's 3x3 forwards, 144) or fewer columns (the 28x28 layers, 12,544) the GEMM won.
DIRECT_MIN_COLUMNS = 32768
DIRECT_MAX_TERMS = 128
_MATMUL = "matmul"
# C_out * C_in of a 1x1 layer (stride 1, unpadded, one group) from which its gradients run as
# the plain batched matmul (`linalg.py`: vec4 loads, no gather): on the H100 SqueezeNet's
# conv10 (1000 x 512) took 204 us for the input gradient and 208 for the weight gradient that
# way, 390 and 415-449 as conv GEMMs; the fire layers' 1x1s (at most 256 x 64 or 64 x 512)
# ran 0.6-1.9x slower as matmuls (conv_layers_h100_s5_a.json). Its forward too (without
# Fusion's epilogue, which stays with the GEMM): 189 us as the matmul without the bias against
# 320 as the conv GEMM (conv_layers_h100_s5_lead.json); the bias costs one elementwise pass.
MATMUL_MIN_WEIGHTS = 1 << 18
# Weight gradients run on their own tiled kernel (`conv_wgrad.py`, "wgrad/<tile>"): every one
# on a native adapter (but the plain 1x1 layers of MATMUL_MIN_WEIGHTS), and on a page's
# software adapter those the GEMM took (`prefers_gemm`). On the H100, as dispatched against
# cuDNN in the same run (conv_layers_h100_s7w.json against _s6_lead.json): the 26 that the
# GEMM ran took a median 0.56x their time (SqueezeNet's conv1 86 us against 334, the 3x3
# expands 64-97 against 96-266); MNIST's conv1 57 us against 87 on the direct kernel; all 28
# at >= 0.5x cuDNN in every pair. On lavapipe, a CPU adapter as a page's is, the 64x64 tile
# took 0.30-0.72x the software GEMM tile's time on three layers in two runs of a loaded
# machine (benchmarks/conv_wgrad_software.py).
WEIGHT_GRAD_TILED = True


def _plain(w_shape: tuple[int, ...], stride: Pair, padding: Pads, groups: int) -> bool:
    """A 1x1 conv that is a matmul per image: stride 1, no padding, one group."""
    return w_shape[2] == w_shape[3] == 1 and stride == (1, 1) and groups == 1 and \
        padding == ((0, 0), (0, 0))


def _sliced(k: Kernels) -> int:
    """`_heuristic`'s `sliced`: the invocations per workgroup where conv_slices.py's kernel
    applies, else 0."""
    return k.runtime.limits.max_compute_invocations_per_workgroup if conv_slices.applies(k) else 0


@lru_cache(maxsize=256)
def _heuristic(family: str, m: int, n: int, kdim: int, groups: int, taps: int,
               workgroup_bytes: int, soft: bool = False, plain: bool = False,
               channels: bool = False, max_groups: int = 65535, sliced: int = 0) -> str:
    # `sliced`: the invocations per workgroup where conv_slices.py's kernel applies, else 0
    if sliced and family != "conv2d_weight_grad_kernel":
        sliced_form = conv_slices.choose(m, n, kdim, taps, family == "conv2d_kernel",
                                         workgroup_bytes, sliced)
        if sliced_form is not None:
            return sliced_form.name
    if channels and not soft:  # the GEMM's M x K per group is the conv's (out, in x taps)
        form = conv_channels.choose(m, kdim // taps, taps, n, groups, workgroup_bytes,
                                    max_groups, family == "conv2d_input_grad_kernel")
        if form is not None:
            return form.name
    if plain and not soft and (
            (family == "conv2d_input_grad_kernel" and m * kdim >= MATMUL_MIN_WEIGHTS)
            or (family == "conv2d_weight_grad_kernel" and m * n >= MATMUL_MIN_WEIGHTS)
            or (family == "conv2d_kernel" and m * kdim >= MATMUL_MIN_WEIGHTS)):
        return _MATMUL
    if family == "conv2d_weight_grad_kernel" and WEIGHT_GRAD_TILED and (
            not soft or prefers_gemm(family, m, n, kdim, taps)):
        return conv_wgrad.PREFIX + conv_wgrad.choose_tile(m, n, soft)
    if not prefers_gemm(family, m, n, kdim, taps) or (
            not soft and family != "conv2d_weight_grad_kernel" and n >= DIRECT_MIN_COLUMNS
            and kdim <= DIRECT_MAX_TERMS):
        return _DIRECT
    mode = {"conv2d_input_grad_kernel": conv_gemm.INPUT_GRAD,
            "conv2d_weight_grad_kernel": conv_gemm.WEIGHT_GRAD}.get(family, conv_gemm.FORWARD)
    return _GEMM + conv_gemm.choose_tile((m, n, kdim), groups, mode, workgroup_bytes,
                                         soft).name


def _view(t: GpuTensor) -> tuple[object, ...]:
    return t.shape, t.strides, t.offset, t.dtype


def _epilogue_key(epilogue: Epilogue | None) -> tuple[object, ...]:
    """What of fusion's epilogue a launch plan depends on: its kernel and its words."""
    return () if epilogue is None else (epilogue.key(), tuple(epilogue.words))


def _epilogue_buffers(epilogue: Epilogue | None) -> list[object]:
    return [] if epilogue is None else [v.block.buffer for v in epilogue.views]  # type: ignore[attr-defined]  # views are GpuTensors


def conv2d(k: Kernels, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None, stride: Pair,
           padding: Pads, dilation: Pair, groups: int,
           epilogue: Epilogue | None = None) -> GpuTensor:
    """(N, C_in, H, W) * (C_out, C_in/groups, KH, KW) (+ bias) -> dense (N, C_out, OH, OW);
    `epilogue` (fusion's) computes what is stored from each output value. The direct kernel
    or the implicit GEMM (`conv_gemm.py`), whichever autotune timed faster for the shape
    bucket (`_choose`); repeated calls replay their launch plan (`conv_plan.py`)."""
    x = k.dense(x)
    bias = k.dense(bias) if bias is not None else None
    key = ("conv2d", _view(x), _view(weight), None if bias is None else _view(bias), stride,
           padding, dilation, groups, _epilogue_key(epilogue))
    operands = [x.block.buffer, weight.block.buffer, *_epilogue_buffers(epilogue)]
    if bias is not None:
        operands.append(bias.block.buffer)
    out = conv_plan.planned(k, key, operands, lambda kk: _conv2d(
        kk, x, weight, bias, stride, padding, dilation, groups, epilogue))
    assert out is not None
    return out


def _conv2d(k: Kernels, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None, stride: Pair,
            padding: Pads, dilation: Pair, groups: int,
            epilogue: Epilogue | None) -> GpuTensor:
    oh, ow = _out_hw(x.shape, weight.shape, stride, padding, dilation)
    shape = (x.shape[0], weight.shape[0], oh, ow)
    if math.prod(shape) == 0:
        return k.empty(shape, DType.F32, "conv2d")
    made: list[GpuTensor] = []

    def launch(name: str, ep: Epilogue | None = None) -> GpuTensor:
        if name == _MATMUL:  # a plain 1x1 layer: y[n] = W @ x[n], then the bias added
            return _matmul_forward(k, x, weight, bias, shape)
        if not made:
            made.append(k.empty(shape, DType.F32, "conv2d"))
        out = made[0]
        if name.startswith(_DIRECT):
            block = Block.parse(name[len(_DIRECT) + 1:]) if "/" in name else None
            _direct(k, out, x, weight, bias, stride, padding, dilation, groups, ep, block)
        elif name.startswith(conv_channels.PREFIX):
            conv_channels.run(k, out, x, weight, bias, stride, padding, dilation, groups,
                              conv_channels.Form.parse(name), ep)
        elif name.startswith(conv_slices.PREFIX):
            conv_slices.run(k, conv_slices.Form.parse(name), out, x, k.dense(weight), bias,
                            x.shape, stride, padding, dilation, groups, conv_gemm.FORWARD, ep)
        else:
            conv_gemm.run(k, tile(name[len(_GEMM):]), out, x, k.dense(weight), bias,
                          x.shape, stride, padding, dilation, groups, conv_gemm.FORWARD, ep)
        return out

    gemm = conv_gemm.sizes(x.shape, weight.shape, (oh, ow), groups, conv_gemm.FORWARD)
    taps = weight.shape[2] * weight.shape[3]
    def blocks() -> list[Block]:  # autotune's candidates, asked for only when it times
        return conv_direct.candidates(x.shape[0], weight.shape[0], groups, oh, ow)
    name = _choose(k, "conv2d_kernel", gemm, groups, taps, launch,
                   _plain(weight.shape, stride, padding, groups), blocks, True)
    if epilogue is not None and name == _MATMUL:  # the epilogue goes with the GEMM
        name = _GEMM + conv_gemm.default_tile(k, gemm, groups, conv_gemm.FORWARD).name
    return launch(name, epilogue)


def _matmul_forward(k: Kernels, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None,
                    shape: tuple[int, int, int, int]) -> GpuTensor:
    """A plain 1x1 conv's forward as `linalg.py`'s batched matmul W @ x[n] (vec4 loads, no
    gather), the bias then added in place by one elementwise kernel."""
    n, c_out, oh, ow = shape
    c_in = x.shape[1]
    w = k.contiguous(weight).reshaped((1, c_out, c_in)).expanded((n, c_out, c_in))
    out = linalg.matmul(k, w, x.reshaped((n, c_in, oh * ow)))
    if bias is not None:  # into a new tensor: a dispatch may not read and write one buffer
        b = bias.reshaped((1, c_out, 1)).expanded(out.shape)
        out = k.map("conv2d_bias", "", [out, b], k.empty(out.shape, DType.F32, "conv2d"),
                    "v0 + v1")
    return out.reshaped(shape)


def _direct(k: Kernels, out: GpuTensor, x: GpuTensor, weight: GpuTensor,
            bias: GpuTensor | None, stride: Pair, padding: Pads, dilation: Pair, groups: int,
            epilogue: Epilogue | None = None, block: Block | None = None) -> None:
    """conv2d.wgsl into `out`, `block` channels x pixels per invocation (None: the
    heuristic's, `conv_direct.choose_block`); the weight is read through its strides (any
    view)."""
    n, c_out, oh, ow = out.shape
    if block is None:
        terms = weight.numel // c_out
        block = conv_direct.choose_block(n, c_out, groups, oh, ow, terms,
                                         software.software(k.runtime.adapter))
    blocks = -(-(c_out // groups) // block.channels)  # channel blocks per group
    total = block.invocations(n, c_out, groups, oh, ow)
    meta = [total, *_geometry(x.shape, weight.shape, (oh, ow), stride, padding, dilation,
                              groups), blocks, int(bias is not None), weight.offset,
            *weight.strides]
    bias_buffer = bias.block.buffer if bias is not None else weight.block.buffer
    wg = k.autotune.workgroup(
        "conv2d", (total, weight.numel // c_out), DType.F32, WORKGROUP,
        lambda: _direct(k, out, x, weight, bias, stride, padding, dilation, groups,
                        block=block))
    tail = epilogue.bindings(k) if epilogue is not None else []
    k.launch(_pipeline(k, "conv2d", wg, epilogue, block),
             [k.meta(meta), x.block.buffer, weight.block.buffer, bias_buffer, out.block.buffer,
              *tail], k.grid(-(-total // wg)), 2.0 * out.numel * weight.numel // c_out)


def conv2d_input_grad(k: Kernels, grad: GpuTensor, weight: GpuTensor,
                      input_shape: tuple[int, ...], stride: Pair, padding: Pads, dilation: Pair,
                      groups: int) -> GpuTensor:
    """d conv2d / d x: dense (N, C_in, H, W) from the output gradient (N, C_out, OH, OW); the
    direct kernels or the implicit GEMM, chosen as `conv2d` chooses."""
    out = conv2d_input_grad_fused(k, grad, weight, input_shape, stride, padding, dilation,
                                  groups, None)
    assert out is not None  # declined only with an epilogue
    return out


def conv2d_input_grad_fused(k: Kernels, grad: GpuTensor, weight: GpuTensor,
                            input_shape: tuple[int, ...], stride: Pair, padding: Pads,
                            dilation: Pair, groups: int,
                            epilogue: Epilogue | None) -> GpuTensor | None:
    """`conv2d_input_grad` with fusion's `epilogue` computing what is stored from each input
    gradient value (the mask of the activation before the conv, in a backward pass); None
    where the kernel chosen takes no epilogue (the strided direct gather)."""
    grad = k.dense(grad)
    key = ("conv2d_input_grad", _view(grad), _view(weight), tuple(input_shape), stride,
           padding, dilation, groups, _epilogue_key(epilogue))
    operands = [grad.block.buffer, weight.block.buffer, *_epilogue_buffers(epilogue)]
    return conv_plan.planned(k, key, operands, lambda kk: _conv2d_input_grad(
        kk, grad, weight, input_shape, stride, padding, dilation, groups, epilogue))


def _conv2d_input_grad(k: Kernels, grad: GpuTensor, weight: GpuTensor,
                       input_shape: tuple[int, ...], stride: Pair, padding: Pads,
                       dilation: Pair, groups: int,
                       epilogue: Epilogue | None) -> GpuTensor | None:
    input_shape = tuple(input_shape)
    if math.prod(input_shape) == 0:
        return k.empty(input_shape, DType.F32, "conv2d_input_grad")
    made: list[GpuTensor] = []

    def launch(name: str, ep: Epilogue | None = None) -> GpuTensor:
        if name == _MATMUL:  # a plain 1x1 layer: dx[n] = W^T @ dy[n]
            n, c_in, h, w = input_shape
            c_out = weight.shape[0]
            wt = k.contiguous(weight).reshaped((1, c_out, c_in)).permuted((0, 2, 1))
            return linalg.matmul(k, wt.expanded((n, c_in, c_out)),
                                 grad.reshaped((n, c_out, h * w))).reshaped(input_shape)
        if not made:
            made.append(k.empty(input_shape, DType.F32, "conv2d_input_grad"))
        out = made[0]
        if name == _DIRECT:
            _direct_input_grad(k, out, grad, weight, stride, padding, dilation, groups, ep)
        elif name.startswith(conv_channels.PREFIX):
            _channels_input_grad(k, out, grad, weight, stride, padding, dilation, groups,
                                 conv_channels.Form.parse(name), ep)
        elif name.startswith(conv_slices.PREFIX):
            conv_slices.run(k, conv_slices.Form.parse(name), out, grad, k.dense(weight), None,
                            input_shape, stride, padding, dilation, groups,
                            conv_gemm.INPUT_GRAD, ep)
        else:
            conv_gemm.run(k, tile(name[len(_GEMM):]), out, grad, k.dense(weight), None,
                          input_shape, stride, padding, dilation, groups, conv_gemm.INPUT_GRAD,
                          ep)
        return out

    gemm = conv_gemm.sizes(input_shape, weight.shape, grad.shape[2:], groups,
                           conv_gemm.INPUT_GRAD)
    taps = weight.shape[2] * weight.shape[3]
    flippable = conv_gemm.flipped_padding(weight.shape, stride, padding, dilation) is not None
    name = _choose(k, "conv2d_input_grad_kernel", gemm, groups, taps, launch,
                   _plain(weight.shape, stride, padding, groups), channels=flippable)
    if epilogue is not None and name == _MATMUL:  # the epilogue goes with the GEMM
        name = _GEMM + conv_gemm.default_tile(k, gemm, groups, conv_gemm.INPUT_GRAD).name
    if epilogue is not None and name == _DIRECT and \
            conv_gemm.flipped_padding(weight.shape, stride, padding, dilation) is None:
        return None
    return launch(name, epilogue)


def _channels_input_grad(k: Kernels, out: GpuTensor, grad: GpuTensor, weight: GpuTensor,
                         stride: Pair, padding: Pads, dilation: Pair, groups: int,
                         form: conv_channels.Form, epilogue: Epilogue | None = None) -> None:
    """A stride-1 input gradient on `conv_channels.py`'s kernel: the forward conv of the
    gradient with the flipped, transposed weight."""
    pads = conv_gemm.flipped_padding(weight.shape, stride, padding, dilation)
    if pads is None:
        raise ValueError(f"the {form.name} input gradient needs stride 1 and padding within the "
                         f"kernel's reach (stride {stride}, padding {padding}): use direct or a "
                         f"gemm variant")
    conv_channels.run(k, out, grad, conv_gemm.flipped_weight(k, weight, groups), None, (1, 1),
                      pads, dilation, groups, form, epilogue)


def _direct_input_grad(k: Kernels, out: GpuTensor, grad: GpuTensor, weight: GpuTensor,
                       stride: Pair, padding: Pads, dilation: Pair, groups: int,
                       epilogue: Epilogue | None = None, block: Block | None = None,
                       staged: bool | None = None) -> None:
    """The direct input gradient into `out`; `epilogue` and `block` (the forward kernel's,
    None: its heuristic's) only on the stride-1 path. A strided one runs the gather with its
    weights staged (`conv_strided_grad.py`) where `staged` (None: where that applies)."""
    pads = conv_gemm.flipped_padding(weight.shape, stride, padding, dilation)
    if pads is not None:
        # a stride-1 conv's input gradient is a conv of the gradient with the flipped,
        # transposed kernel: the forward kernel does it faster than the gather below
        _direct(k, out, grad, conv_gemm.flipped_weight(k, weight, groups), None, (1, 1), pads,
                dilation, groups, epilogue, block)
        return
    assert epilogue is None, "the strided input-gradient gather takes no epilogue"
    weight = k.dense(weight)
    if staged if staged is not None else conv_strided_grad.applies(k, out.shape, weight.shape,
                                                                   stride, groups):
        conv_strided_grad.run(k, out, grad, weight, stride, padding, dilation, groups)
        return
    n, c_in, h, w = out.shape
    cg = weight.shape[1]
    # one invocation per pixel of each phase class (stride^2 classes of ceil(H/sh) x ceil(W/sw))
    # and block of 4 input channels of a group
    total = n * groups * -(-cg // 4) * stride[0] * stride[1] * -(-h // stride[0]) * \
        -(-w // stride[1])
    meta = [total, *_geometry(out.shape, weight.shape, grad.shape[2:], stride, padding,
                              dilation, groups)]
    k.launch(_pipeline(k, "conv2d_input_grad", WORKGROUP),
             [k.meta(meta), grad.block.buffer, weight.block.buffer, out.block.buffer],
             k.grid(-(-total // WORKGROUP)), 2.0 * grad.numel * weight.numel // weight.shape[0])


def conv2d_weight_grad(k: Kernels, x: GpuTensor, grad: GpuTensor,
                       weight_shape: tuple[int, ...], stride: Pair, padding: Pads,
                       dilation: Pair, groups: int) -> GpuTensor:
    """d conv2d / d weight: dense (C_out, C_in/groups, KH, KW); the direct kernel or the
    implicit GEMM (K split over the batch's pixels), chosen as `conv2d` chooses."""
    x, grad = k.dense(x), k.dense(grad)
    key = ("conv2d_weight_grad", _view(x), _view(grad), tuple(weight_shape), stride, padding,
           dilation, groups)
    out = conv_plan.planned(k, key, [x.block.buffer, grad.block.buffer],
                            lambda kk: _conv2d_weight_grad(kk, x, grad, weight_shape, stride,
                                                           padding, dilation, groups))
    assert out is not None
    return out


def _conv2d_weight_grad(k: Kernels, x: GpuTensor, grad: GpuTensor,
                        weight_shape: tuple[int, ...], stride: Pair, padding: Pads,
                        dilation: Pair, groups: int) -> GpuTensor:
    weight_shape = tuple(weight_shape)
    out = k.empty(weight_shape, DType.F32, "conv2d_weight_grad")
    if out.numel == 0:
        return out

    def launch(name: str) -> None:
        if name == _MATMUL:  # a plain 1x1 layer: dw = sum over n of dy[n] @ x[n]^T
            n, c_in, h, w = x.shape
            c_out = weight_shape[0]
            parts = linalg.matmul(k, grad.reshaped((n, c_out, h * w)),
                                  x.reshaped((n, c_in, h * w)).permuted((0, 2, 1)))
            matmul_variants.add_partials(k, parts, out, 1, n)
        elif name == _DIRECT:
            _direct_weight_grad(k, out, x, grad, stride, padding, dilation, groups)
        elif name.startswith(conv_wgrad.PREFIX):
            conv_wgrad.run(k, out, x, grad, stride, padding, dilation, groups,
                           *conv_wgrad.parse(name))
        else:
            conv_gemm.run(k, tile(name[len(_GEMM):]), out, x, grad, None, x.shape, stride,
                          padding, dilation, groups, conv_gemm.WEIGHT_GRAD)

    gemm = conv_gemm.sizes(x.shape, weight_shape, grad.shape[2:], groups,
                           conv_gemm.WEIGHT_GRAD)
    taps = weight_shape[2] * weight_shape[3]
    launch(_choose(k, "conv2d_weight_grad_kernel", gemm, groups, taps, launch,
                   _plain(weight_shape, stride, padding, groups)))
    return out


def weight_grad_slices(pairs_chunks: int, terms: int, soft: bool = False) -> int:
    """Slices of the direct weight gradient's reduction (`terms` = N*OH*OW): enough that the
    (channel pair, tap chunk, slice) workgroups reach WEIGHT_GRAD_WORKGROUPS, each slice at
    least WEIGHT_GRAD_MIN_TERMS long, at most WEIGHT_GRAD_MAX_SLICES (SOFTWARE_MAX_SLICES on a
    page's software adapter, whose choices stay as they were; 1: no partial sums)."""
    want = -(-WEIGHT_GRAD_WORKGROUPS // pairs_chunks)
    most = SOFTWARE_MAX_SLICES if soft else WEIGHT_GRAD_MAX_SLICES
    return max(1, min(most, want, terms // WEIGHT_GRAD_MIN_TERMS))


WEIGHT_GRAD_TAPS = 16  # taps per workgroup of the direct weight gradient at most (registers)
WEIGHT_GRAD_WORKGROUPS = 2048  # workgroups the slices aim for (about 16 per H100 SM)
WEIGHT_GRAD_MIN_TERMS = 256  # reduction terms per slice at least (4 per invocation)
# slices at most: with the split sum's lanes (matmul_config.sum_lanes) MNIST's conv1 (72
# weights) took 58 us in 128 slices against 75 in 32 on the H100 (conv_layers_h100_s6_a.json);
# the sum used to read a weight's slices in turn (128 took 28 us)
WEIGHT_GRAD_MAX_SLICES = 128
SOFTWARE_MAX_SLICES = 32


def _direct_weight_grad(k: Kernels, out: GpuTensor, x: GpuTensor, grad: GpuTensor,
                        stride: Pair, padding: Pads, dilation: Pair, groups: int,
                        slices: int | None = None) -> None:
    """conv2d_weight_grad.wgsl into `out`: a workgroup per (co, c) channel pair, chunk of taps
    and slice of the batch's output pixels; several slices write partial sums that
    `matmul_variants.add_partials` adds. `slices`: that many (None: `weight_grad_slices`)."""
    c_out, cg, kh, kw = out.shape
    taps = kh * kw
    chunk = min(taps, WEIGHT_GRAD_TAPS)
    chunks = -(-taps // chunk)
    terms = grad.numel // grad.shape[1]
    slices = slices or weight_grad_slices(c_out * cg * chunks, terms,
                                          software.software(k.runtime.adapter))
    length = -(-terms // slices)
    count = c_out * cg * chunks * slices
    meta = [count, *_geometry(x.shape, out.shape, grad.shape[2:], stride, padding, dilation,
                              groups), x.shape[0], chunks, slices, length, out.numel]
    target = out if slices == 1 else k.empty((slices, out.numel), DType.F32, "conv2d_wgrad")
    key = KernelKey("conv2d_weight_grad", "", _F32, 0, (_REDUCE_WORKGROUP, chunk))
    pipeline = k.cached(key) or k.pipeline(key, render(
        "conv2d_weight_grad.wgsl", workgroup=_REDUCE_WORKGROUP, taps=chunk))
    k.launch(pipeline, [k.meta(meta), x.block.buffer, grad.block.buffer, target.block.buffer],
             k.grid(count))
    if slices > 1:
        matmul_variants.add_partials(k, target, out, 1, slices)


# ---- variants by name, launched by hand (benchmarks/conv_layers.py) ----------------------------
OPS = ("forward", "input_grad", "weight_grad")
_FAMILIES = {"forward": ("conv2d_kernel", conv_gemm.FORWARD),
             "input_grad": ("conv2d_input_grad_kernel", conv_gemm.INPUT_GRAD),
             "weight_grad": ("conv2d_weight_grad_kernel", conv_gemm.WEIGHT_GRAD)}


def heuristic_variant(k: Kernels, op: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                      stride: Pair, padding: Pads, dilation: Pair, groups: int) -> str:
    """The variant that `op` ("forward", "input_grad" or "weight_grad") of this conv runs
    with autotune off on this device: "direct", "gemm/<tile>" or "matmul" (the names
    `launch_variant` takes, and autotune's)."""
    family, mode = _FAMILIES[op]
    out_hw = _out_hw(x_shape, w_shape, stride, padding, dilation)
    limits = k.runtime.limits
    channels = op == "forward" or (op == "input_grad" and conv_gemm.flipped_padding(
        w_shape, stride, padding, dilation) is not None)
    return _heuristic(family, *conv_gemm.sizes(x_shape, w_shape, out_hw, groups, mode), groups,
                      w_shape[2] * w_shape[3], limits.max_compute_workgroup_storage_size,
                      software.software(k.runtime.adapter),
                      _plain(w_shape, stride, padding, groups), channels,
                      limits.max_compute_workgroups_per_dimension, _sliced(k))


def launch_variant(k: Kernels, op: str, name: str, out: GpuTensor, a: GpuTensor, b: GpuTensor,
                   bias: GpuTensor | None, x_shape: tuple[int, ...], stride: Pair,
                   padding: Pads, dilation: Pair, groups: int) -> None:
    """One variant of a conv op into `out` (dense), chosen by hand, no plan: the forward
    (`a` the input, `b` the weight, `bias`), the input gradient (`a` dy, `b` the weight) or
    the weight gradient (`a` the input, `b` dy); `x_shape` the input's shape. `name`:
    "direct" (the heuristic's block), "direct/<block>" (the forward, `conv_direct.Block`),
    "direct/s<slices>" (the weight gradient's reduction in that many slices),
    "direct/staged" or "direct/gather" (a strided input gradient with its weights staged,
    `conv_strided_grad.py`, or not), "gemm/<tile>" (`conv_gemm.run` with a
    `matmul_config.tile`; call it directly for its other options), "slices/<BM>x<BN>s<S>"
    (the forward and input gradient with K split inside the workgroup, `conv_slices.py`) or
    "winograd" (a stride-1 3x3 forward or input gradient, `conv_winograd.py`; no rule picks
    it: it lost to the GEMM on the H100).
    A layer's "matmul" route allocates its result, and is not one of these."""
    conv = (stride, padding, dilation, groups)
    if name == conv_winograd.NAME and op != "weight_grad":
        (conv_winograd.input_grad if op == "input_grad" else conv_winograd.forward)(
            k, out, a, b, *conv, *((bias,) if op == "forward" else ()))
    elif op == "weight_grad" and name.startswith(conv_wgrad.PREFIX):
        conv_wgrad.run(k, out, a, b, *conv, *conv_wgrad.parse(name))
    elif name.startswith(_GEMM):
        mode = _FAMILIES[op][1]
        conv_gemm.run(k, tile(name[len(_GEMM):]), out, a, b, bias, x_shape, *conv, mode)
    elif name.startswith(conv_slices.PREFIX) and op != "weight_grad":
        conv_slices.run(k, conv_slices.Form.parse(name), out, a, k.dense(b), bias, x_shape,
                        *conv, _FAMILIES[op][1])
    elif name.startswith(conv_channels.PREFIX) and op != "weight_grad":
        form = conv_channels.Form.parse(name)
        if op == "forward":
            conv_channels.run(k, out, a, b, bias, *conv, form)
        else:
            _channels_input_grad(k, out, a, b, *conv, form)
    elif name != _DIRECT and not name.startswith(_DIRECT + "/"):
        raise ValueError(f"unknown conv variant {name!r}: use direct, direct/<block>, "
                         f"direct/s<slices>, gemm/<tile> or (forward, input gradient) "
                         f"channels/<C>[s<S>], slices/<BM>x<BN>s<S> or winograd")
    elif op == "forward":
        block = Block.parse(name[len(_DIRECT) + 1:]) if "/" in name else None
        _direct(k, out, a, b, bias, *conv, block=block)
    elif op == "input_grad":
        staged = {conv_strided_grad.NAME: True, _DIRECT + "/gather": False}.get(name)
        _direct_input_grad(k, out, a, b, *conv, staged=staged)
    else:
        slices = int(name[len(_DIRECT) + 2:]) if "/" in name else None
        _direct_weight_grad(k, out, a, b, *conv, slices=slices)
