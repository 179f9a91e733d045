"""conv2d and its input gradient as implicit GEMMs on the tiled matmul kernel.

`shaders/matmul_tiled.wgsl` (tiles in workgroup memory, register blocking, double buffering;
its tile configurations in `matmul_config.py`) is rendered with the load and store functions of
`shaders/conv2d_gemm.wgsl` in place of the plain matmul's: the im2col matrix is gathered tile
by tile as it is loaded, never written out, and the product is scattered into NCHW as it is
stored, through fusion's epilogue when there is one. One matmul batch index per group.

The weight gradient's reduction runs over every output pixel of the batch while its output is
small: there the matmul splits K into slices (`splits`), each slice a batch index of its own,
and `matmul_variants.add_partials` adds the partial sums (any number of slices, one kernel).
This module owns the GEMM form only; `conv.py` chooses between it and the direct kernels per
shape bucket (autotune, or its heuristic).

Natively the GEMM's modules are compiled without naga's bounds checks (NATIVE_CHECKS), and a
GEMM of whole tiles renders conv2d_gemm.wgsl's INTERIOR form, which compares no extent
(NATIVE_INTERIOR, `interior`); a page keeps checked, guarded modules. On the H100 the 3x3
GEMMs ran up to 1.44x faster (benchmarks/README.md, session 6b).
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import conv_geometry, matmul_config, matmul_options, matmul_variants, software
from .codegen import BITS_FN, KernelKey, render
from .fused import DenseEpilogue
from .kernels import Kernels
from .matmul_config import TileConfig
from .tensor import GpuTensor
from .unchecked_module import ALL_CHECKS, LOOP_BOUNDING

EPILOGUE_BINDING = 6  # after a, b, c, the uniform, the geometry and the bias
_PLAIN_OUT = "fn pyrite_out(v: f32, i: i32) -> f32 { return v; }"
_F32 = (DType.F32, DType.F32, DType.F32)


NO_END = (1 << 31) - 1  # bias_end of an unsplit forward with a bias: every batch index


def geometry_words(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_hw: Pair, stride: Pair,
              padding: Pads, dilation: Pair, groups: int, bias_end: int) -> list[int]:
    """conv2d_gemm.wgsl's `cm` words (`bias_end`: 0 without a bias)."""
    _, c_in, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    (pt, _), (pl, _) = padding
    return [h, w, *out_hw, kh, kw, *stride, pt, pl, *dilation, c_in, c_out, cg,
            c_out // groups, bias_end]


FORWARD, INPUT_GRAD, WEIGHT_GRAD = 0, 1, 2  # conv2d_gemm.wgsl's MODE
FLIPPED = 3  # the input gradient at stride 1 as a forward conv (conv2d_gemm.wgsl's MODE 3)
MAX_SPLITS = 64  # slices of K at most unless a rule says otherwise (any number adds in one kernel)
MIN_SPLIT = 512  # reduction terms per slice below which splitting K costs more than it gains
# K-split rules, (workgroups to reach, shortest slice[, most slices]), of native adapters
# (a page's software adapter keeps `splits`' default, as software.py wants), fitted on the H100
# to SqueezeNet's and MNIST's layers (conv_layers_h100_s5_a/_b/_c.json, the 64x64 tile):
# - weight gradient, several taps: (1024, 128), the best sum over the layers (the 3x3 layers
#   moved less than the noise between rules);
# - weight gradient, 1x1: (2048, 64): fire6-fire9's ran 70-107 us against 143-168 with
#   (256, 512);
# - weight gradient of at most SMALL_WEIGHTS weights: up to 256 slices (4096, 64, 256):
#   SqueezeNet's conv1 (64 x 27 weights over 204,304 pixels) took 385 us against 953 with 64
#   slices, fire2's 1x1s 142-146 against 208-241. With more weights the sum kernel, which
#   reads an output's slices in turn, made 196 slices slower than 64 (fire4's 1x1s: 154 us
#   against 109);
# - input gradient of a kernel of several taps on the 64x64 tile (48 or more channels):
#   (1024, 128): fire6/7/9's 3x3 ran 165-173 us against 201-211.
WEIGHT_GRAD_SPLIT = ((1024, 128), (2048, 64))
SMALL_WEIGHTS = 2048
SMALL_WEIGHTS_SPLIT = (4096, 64, 256)
INPUT_GRAD_SPLIT = (1024, 128)
# - forward: no split. Splitting K where the tiles are few, (396, 128) (about 3 workgroups per
#   H100 SM), made SqueezeNet's 14x14 squeezes and 3x3s and its 28x28 3x3s slower as
#   dispatched (fire6's squeeze 98 us against 55, fire4-9's 3x3s 111-174 against 105-157) and
#   no split was faster than the sweep's (1024, 128) and (2048, 64) on 12 of the 20 layers
#   timed with them, tied on 3 (conv_layers_h100_s6_b.json against _s6_a). `run(split=...)`
#   still splits a forward (one group), for the sweep.


# Natively (not in a page: the browser compiles every module with its checks), the GEMM's
# modules keep only naga's loop bounding (`unchecked_module.py`; the matmul's `_nb`): every
# workgroup-array index of the tile loop is a thread's row or column and constants, every
# storage index of conv2d_gemm.wgsl's loads and stores is behind a branch on the matrix's extent
# (or whole tiles, INTERIOR) and on the padding and stride (its header). Dropping the loop
# counters too cost the matmul 12-22%, so they stay. ALL_CHECKS here compiles every check.
NATIVE_CHECKS = LOOP_BOUNDING
# Natively, a GEMM whose M, N and K (and each K slice) are whole tiles and K steps renders
# conv2d_gemm.wgsl's INTERIOR form: no load or store compares the extent (the matmul's `_in`).
NATIVE_INTERIOR = True


def native(k: Kernels) -> bool:
    """Whether `k` runs on a native adapter (wgpu-native), not a page's WebGPU or the recorder
    that stands for one."""
    return k.runtime.adapter.backend not in (software.BROWSER_BACKEND, software.RECORDER_BACKEND)


def native_gpu(k: Kernels) -> bool:
    """Whether `k` runs natively on a GPU: `native`, and neither a CPU adapter (lavapipe) nor
    a software one; where the native-only conv kernels (conv_slices.py,
    conv_strided_grad.py) may be chosen."""
    return native(k) and k.runtime.adapter.adapter_type != "CPU" and \
        not software.software(k.runtime.adapter)


def interior(cfg: TileConfig, m: int, n: int, kdim: int, length: int) -> bool:
    """Whether every workgroup of `cfg` on this GEMM (M x N outputs, K terms in slices of
    `length`) is interior: M, N, K and the slice are whole tiles and K steps, so no load or store
    reaches past an edge."""
    return matmul_options.fits_interior(cfg, m, n, kdim) and length % cfg.bk == 0


def sizes(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_hw: Pair, groups: int,
          mode: int) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM per group: forward (cog, N*OH*OW, cg*KH*KW), input gradient
    (cg, N*H*W, cog*KH*KW), weight gradient (cog, cg*KH*KW, N*OH*OW)."""
    n, _, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    cog = c_out // groups
    if mode == INPUT_GRAD:
        return cg, n * h * w, cog * kh * kw
    if mode == WEIGHT_GRAD:
        return cog, cg * kh * kw, n * out_hw[0] * out_hw[1]
    return cog, n * out_hw[0] * out_hw[1], cg * kh * kw


def splits(cfg: TileConfig, m: int, n: int, kdim: int, groups: int,
           rule: tuple[int, ...] | None = None) -> tuple[int, int]:
    """(slices of K, their length) so that a long reduction over few output tiles (a weight
    gradient, an input gradient of few channels and pixels) still fills the GPU; (1, K) when it
    already does (`matmul_config.split_k`). `rule`: (workgroups to reach, shortest slice[,
    most slices]), by default (matmul_config.MIN_WORKGROUPS, MIN_SPLIT, MAX_SPLITS)."""
    target, shortest, *most = rule or (matmul_config.MIN_WORKGROUPS, MIN_SPLIT)
    return matmul_config.split_k(cfg, m, n, kdim, groups, target=target,
                                 most=most[0] if most else MAX_SPLITS, min_split=shortest)


def flipped_padding(w_shape: tuple[int, ...], stride: Pair, padding: Pads,
                    dilation: Pair) -> Pads | None:
    """The padding of the forward conv that computes a stride-1 conv's input gradient (the
    gradient convolved with the flipped, transposed kernel); None where that does not apply
    (a stride, or padding past the kernel's reach)."""
    reach = (dilation[0] * (w_shape[2] - 1), dilation[1] * (w_shape[3] - 1))
    if stride != (1, 1) or any(p > r for pads, r in zip(padding, reach, strict=True)
                               for p in pads):
        return None
    return ((reach[0] - padding[0][0], reach[0] - padding[0][1]),
            (reach[1] - padding[1][0], reach[1] - padding[1][1]))


def flipped_weight(k: Kernels, weight: GpuTensor, groups: int) -> GpuTensor:
    """(C_out, cg, KH, KW) -> (C_in, C_out/groups, KH, KW), each tap flipped: the kernel
    that convolves conv2d's output gradient back onto its input. With one group a view of the
    weight (readers that take strides read it in place); with several a dense copy (the group
    and channel dims of the view do not merge into one)."""
    c_out, cg, kh, kw = weight.shape
    if groups == 1:
        return weight.permuted((1, 0, 2, 3)).flipped((2, 3))
    per_group = weight.reshaped((groups, c_out // groups, cg, kh, kw)) if \
        weight.is_contiguous else k.copy(weight).reshaped((groups, c_out // groups, cg, kh, kw))
    view = per_group.permuted((0, 2, 1, 3, 4)).flipped((3, 4))
    return k.copy(view).reshaped((groups * cg, c_out // groups, kh, kw))


def split_rule(mode: int, m: int, n: int, taps: int, tile: str,
               soft: bool = False) -> tuple[int, ...] | None:
    """The K-split rule (`splits`' `rule`) of a gradient GEMM of M x N outputs per group on
    `tile`; None: the default (a page's software adapter always)."""
    if soft:
        return None
    if mode == WEIGHT_GRAD:
        return SMALL_WEIGHTS_SPLIT if m * n <= SMALL_WEIGHTS else WEIGHT_GRAD_SPLIT[taps == 1]
    if mode == INPUT_GRAD and taps > 1 and tile == WIDE:
        return INPUT_GRAD_SPLIT
    return None


def run(k: Kernels, cfg: TileConfig, out: GpuTensor, x: GpuTensor, weight: GpuTensor,
        bias: GpuTensor | None, x_shape: tuple[int, ...], stride: Pair, padding: Pads,
        dilation: Pair, groups: int, mode: int,
        epilogue: DenseEpilogue | None = None, gather: bool = False,
        split: tuple[int, ...] | None = None, constant: bool | None = None) -> None:
    """Launch one implicit GEMM into `out` (dense): the forward conv (`x` the input), the input
    gradient (`x` the output gradient, `x_shape` the input's shape, `out` dx) or the weight
    gradient (`x` the input, `weight` the output gradient, `out` dw). Dense operands.

    At stride 1 the input gradient runs as the forward conv of the output gradient with the
    flipped weight (MODE 3, no division by the stride per element; not on a page's software
    adapter, whose kernels stay those software.py chose): on the H100 it ran SqueezeNet's
    3x3 input gradients 1.01-1.36x faster than the gather on the 64x64 tile
    (conv_layers_h100_s5_b.json). `gather` keeps the gather (MODE 1), which the benchmark
    times beside it.
    `split` replaces `splits`' rule for this launch (the benchmark's sweep). `constant`:
    whether the geometry is compiled into the module (`conv_geometry.py`; None: the forward
    and the input gradient where `conv_geometry.applies`, natively on a GPU; never in a page)."""
    if mode == WEIGHT_GRAD:
        w_shape, dy = out.shape, weight
        out_hw = (dy.shape[2], dy.shape[3])
    else:
        w_shape = weight.shape
        out_hw = (out.shape[2], out.shape[3]) if mode == FORWARD else (x.shape[2], x.shape[3])
    m, n, kdim = sizes(x_shape, w_shape, out_hw, groups, mode)
    soft = software.software(k.runtime.adapter)  # a page's software adapter: its own choices
    _, c_in, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    cog = c_out // groups
    plane = out_hw[0] * out_hw[1]
    count, length = 1, kdim
    if mode == INPUT_GRAD:  # per group: cog weight rows, cog dy channels, cg dx channels
        strides = (cog * cg * kh * kw, cog * plane, cg * h * w)
        if groups == 1 and epilogue is None:
            # few input channels over few pixels (a late 3x3 layer: 49 tiles of 64x64 on
            # SqueezeNet's 14x14 layers) leave the GPU idle: K in slices, each slice's dx
            # written whole at s * numel (the batch stride), then added
            count, length = splits(cfg, m, n, kdim, groups,
                                   split or split_rule(mode, m, n, kh * kw, cfg.name, soft))
            strides = (strides[0], strides[1], out.numel)
    elif mode == WEIGHT_GRAD:  # per group: cog dy channels, cg x channels, cog dw rows
        count, length = splits(cfg, m, n, kdim, groups,
                               split or split_rule(mode, m, n, kh * kw, cfg.name, soft))
        strides = (cog * plane, cg * h * w, m * n)
    else:  # per group: cog weight rows, cg x channels, cog out channels
        strides = (cog * kdim, cg * h * w, cog * plane)
        if groups == 1 and split is not None:
            # K in slices as for the input gradient, only where asked (the benchmark's sweep:
            # by default it lost, see the split rules above); the bias goes with the first slice,
            # fusion's epilogue with the sum
            count, length = splits(cfg, m, n, kdim, groups, split)
            strides = (strides[0], strides[1], out.numel)
    params = k.constant(matmul_config.params_bytes(m, n, kdim, groups, *strides, splits=count,
                                                   k_split=length), uniform=True)
    bias_end = 0 if bias is None else (out.numel if count > 1 else NO_END)
    words = geometry_words(x_shape, w_shape, out_hw, stride, padding, dilation, groups, bias_end)
    flipped = flipped_padding(w_shape, stride, padding, dilation) \
        if mode == INPUT_GRAD and not gather and not soft else None
    if flipped is not None:  # the forward conv dy (N, C_out, OH, OW) -> dx (N, C_in, H, W)
        words = geometry_words(x.shape, (c_in, cog, kh, kw), (h, w), stride, flipped, dilation,
                          groups, 0)
        mode = FLIPPED
    geometry = k.meta(words)
    target = out if count == 1 else k.empty((groups, count, m * n), DType.F32, "conv2d_gemm")
    a, b = weight, x  # the weight gradient passes dy as `weight`: A is dy, B is x
    bindings = [a.block.buffer, b.block.buffer, target.block.buffer, params, geometry,
                (bias if bias is not None else a).block.buffer]
    sum_epilogue: DenseEpilogue | None = None
    extra: tuple[object, ...] = ()
    if epilogue is not None and count > 1:
        sum_epilogue = epilogue  # the slices' sum stores through it
    elif epilogue is not None:
        bindings += epilogue.bindings(k)
        extra = epilogue.key()
    layout = "nt" if mode == WEIGHT_GRAD else "nn"  # x read along the pixels (conv2d_gemm.wgsl)
    on_native = native(k)
    inside = on_native and NATIVE_INTERIOR and interior(cfg, m, n, kdim, length)
    checks = cfg.checks & NATIVE_CHECKS if on_native else ALL_CHECKS
    if constant is None:  # the weight gradient's GEMM keeps its form (not timed baked)
        constant = mode != WEIGHT_GRAD and conv_geometry.applies(
            k.runtime.adapter.adapter_type, on_native)
    baked = conv_geometry.constant_words(words) if constant and on_native else None
    key = KernelKey("conv2d_gemm", cfg.name, _F32, 0, (mode, inside, checks, baked,
                                                        *cfg.cache_key(False, layout), *extra))
    pipeline = k.cached(key)
    if pipeline is None:
        code = (BITS_FN + epilogue.source(EPILOGUE_BINDING)) \
            if epilogue is not None and extra else _PLAIN_OUT
        io = render("conv2d_gemm.wgsl", mode=mode, interior=str(inside).lower(), epilogue=code,
                    geometry=conv_geometry.source(baked))
        pipeline = k.pipeline(key, matmul_config.render(cfg, False, "", layout, io),
                              checks=checks)
    # the FLOPs (the submit policy, batch.py: the GPU starts on a long batch of convs while
    # the host records what follows, as conv_channels.py's and conv_wgrad.py's launches do)
    k.launch(pipeline, bindings, cfg.dispatch(m, n, groups * count), 2.0 * m * n * kdim * groups)
    if count > 1:  # the partial sums of the K slices, added up into the output
        matmul_variants.add_partials(k, target, out, groups, count, sum_epilogue)


def tiles(k: Kernels, m: int, n: int, kdim: int, groups: int, most: int = 4) -> list[TileConfig]:
    """The tile configurations worth timing for a GEMM of these sizes: the heuristic's two
    (WIDE, NARROW), then `matmul_config.candidates`' (`most` in all)."""
    limits = k.runtime.limits
    found = [c for c in (matmul_config.CONFIGS[WIDE], matmul_config.CONFIGS[NARROW])
             if c.workgroup_bytes <= limits.max_compute_workgroup_storage_size]
    found += matmul_config.candidates(m, n, kdim, groups,
                                      limits.max_compute_workgroup_storage_size,
                                      limits.max_compute_invocations_per_workgroup,
                                      matmul_variants.subgroups_usable(k))
    return list(dict.fromkeys(found))[:most]


# The heuristic's tiles: measured on the H100 over every conv GEMM of the MNIST model and
# SqueezeNet 1.1, forward and both gradients (benchmarks/results/conv_layers_h100_s4_sweep.json),
# 64x64 (ping-pong) was the fastest of six tiles on most, and 32x64 on forward and input
# gradient GEMMs with at most 32 rows (a 64-row tile would run half empty); the weight
# gradient, whose split K makes the workgroups whatever the tile, ran 2-23% faster on 64x64
# there too. Larger tiles lost wherever they left fewer workgroups than the GPU has
# multiprocessors, which is most of these layers.
WIDE = "t64x64x16_4x4_u16_pp"
NARROW = "t32x64x16_4x4_u16"  # at most 32 rows of the GEMM (output or input channels)
FALLBACK = "t32x32x16_4x4_u16"  # the least workgroup memory (8 KiB)
# A weight gradient of at most this many output channels per group and more than 64 columns
# runs on NARROW: in three H100 runs MNIST's conv2 (16 x 72 weights) took 98, 147 and 136 us
# there against 144, 187 and 161 on WIDE, SqueezeNet's fire3 squeeze (16 x 128) 128, 178 and
# 148 against 178, 218 and 583; fire2's squeeze (16 x 64, one column tile either way) lost
# 135, 157 and 148 against 124, 135 and 113 (conv_layers_h100_s5_lead, _s6_a, _s6_b .json).
NARROW_WEIGHT_GRAD_ROWS = 16


def choose_tile(gemm: tuple[int, int, int], groups: int, mode: int,
                max_workgroup_bytes: int = 16384, software: bool = False) -> TileConfig:
    """The heuristic's tile for a conv GEMM (`mode`) of (M, N, K) per group: on a page's
    software adapter (`software.py`) the matmul's software ladder; else NARROW up to 32 rows
    (for the weight gradient NARROW_WEIGHT_GRAD_ROWS, with more than 64 columns), WIDE above,
    and FALLBACK where the device gives less workgroup memory than that tile needs."""
    m, n, kdim = gemm
    if software:
        return matmul_config.choose_config(m, n, kdim, groups, max_workgroup_bytes,
                                           software=True)
    narrow = (m <= NARROW_WEIGHT_GRAD_ROWS and n > 64) if mode == WEIGHT_GRAD else m <= 32
    cfg = matmul_config.CONFIGS[NARROW if narrow else WIDE]
    if cfg.workgroup_bytes > max_workgroup_bytes:
        return matmul_config.CONFIGS[FALLBACK]
    return cfg


def default_tile(k: Kernels, gemm: tuple[int, int, int], groups: int, mode: int) -> TileConfig:
    """The heuristic's tile (no timing) for a GEMM of (M, N, K) per group in `mode` on this
    device."""
    return choose_tile(gemm, groups, mode, k.runtime.limits.max_compute_workgroup_storage_size,
                       software.software(k.runtime.adapter))


__all__ = ["EPILOGUE_BINDING", "FALLBACK", "FLIPPED", "FORWARD", "INPUT_GRAD", "NARROW",
           "NATIVE_CHECKS", "NATIVE_INTERIOR", "NO_END", "WEIGHT_GRAD", "WIDE", "choose_tile",
           "default_tile", "flipped_padding", "flipped_weight", "geometry_words", "interior",
           "native", "native_gpu", "run", "sizes",
           "split_rule", "splits", "tiles"]
