"""conv2d and its input gradient as implicit GEMMs on the tiled matmul kernel.

`shaders/matmul_tiled.wgsl` (tiles in workgroup memory, register blocking, double buffering;
its tile configurations in `matmul_config.py`) is rendered with the load and store functions of
`shaders/conv2d_gemm.wgsl` in place of the plain matmul's: the im2col matrix is gathered tile
by tile as it is loaded, never written out, and the product is scattered into NCHW as it is
stored, through fusion's epilogue when there is one. One matmul batch index per group.

This module owns the GEMM form only; `conv.py` chooses between it and the direct kernels per
shape bucket (autotune, or its heuristic) and keeps the weight gradient.
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import matmul_config
from .codegen import BITS_FN, KernelKey, render
from .fused import DenseEpilogue
from .kernels import Kernels
from .matmul_config import TileConfig
from .tensor import GpuTensor

EPILOGUE_BINDING = 6  # after a, b, c, the uniform, the geometry and the bias
_PLAIN_OUT = "fn pyrite_out(v: f32, i: i32) -> f32 { return v; }"
_F32 = (DType.F32, DType.F32, DType.F32)


def _geometry(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_hw: Pair, stride: Pair,
              padding: Pads, dilation: Pair, groups: int, has_bias: bool) -> list[int]:
    """conv2d_gemm.wgsl's `cm` words."""
    _, c_in, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    (pt, _), (pl, _) = padding
    return [h, w, *out_hw, kh, kw, *stride, pt, pl, *dilation, c_in, c_out, cg,
            c_out // groups, int(has_bias)]


def sizes(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_hw: Pair, groups: int,
          dgrad: bool) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM per group: forward (cog, N*OH*OW, cg*KH*KW), input gradient
    (cg, N*H*W, cog*KH*KW)."""
    n, _, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    cog = c_out // groups
    if dgrad:
        return cg, n * h * w, cog * kh * kw
    return cog, n * out_hw[0] * out_hw[1], cg * kh * kw


def run(k: Kernels, cfg: TileConfig, out: GpuTensor, x: GpuTensor, weight: GpuTensor,
        bias: GpuTensor | None, x_shape: tuple[int, ...], stride: Pair, padding: Pads,
        dilation: Pair, groups: int, dgrad: bool,
        epilogue: DenseEpilogue | None = None) -> None:
    """Launch one implicit GEMM into `out`: the forward conv (`x` the input) or the input
    gradient (`x` the output gradient, `x_shape` the input's shape, `out` dx). Dense operands."""
    w_shape = weight.shape
    out_hw = (out.shape[2], out.shape[3]) if not dgrad else (x.shape[2], x.shape[3])
    m, n, kdim = sizes(x_shape, w_shape, out_hw, groups, dgrad)
    _, c_in, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    cog = c_out // groups
    if dgrad:  # per group: cog weight rows, cog dy channels, cg dx channels
        strides = (cog * cg * kh * kw, cog * out_hw[0] * out_hw[1], cg * h * w)
    else:  # per group: cog weight rows, cg x channels, cog out channels
        strides = (cog * kdim, cg * h * w, cog * out_hw[0] * out_hw[1])
    params = k.constant(matmul_config.params_bytes(m, n, kdim, groups, *strides), uniform=True)
    geometry = k.meta(_geometry(x_shape, w_shape, out_hw, stride, padding, dilation, groups,
                                bias is not None))
    bindings = [weight.block.buffer, x.block.buffer, out.block.buffer, params, geometry,
                (bias if bias is not None else weight).block.buffer]
    extra: tuple[object, ...] = ()
    if epilogue is not None:
        bindings += epilogue.bindings(k)
        extra = epilogue.key()
    key = KernelKey("conv2d_gemm", cfg.name, _F32, 0, (dgrad, *cfg.cache_key(False), *extra))
    pipeline = k.cached(key)
    if pipeline is None:
        code = (BITS_FN + epilogue.source(EPILOGUE_BINDING)) if epilogue is not None \
            else _PLAIN_OUT
        io = render("conv2d_gemm.wgsl", dgrad="true" if dgrad else "false", epilogue=code)
        pipeline = k.pipeline(key, matmul_config.render(cfg, False, "", "nn", io))
    k.launch(pipeline, bindings, cfg.dispatch(m, n, groups))


def tiles(k: Kernels, m: int, n: int, kdim: int, groups: int, most: int = 4) -> list[TileConfig]:
    """The tile configurations worth timing for a GEMM of these sizes (best guess first)."""
    limits = k.runtime.limits
    return matmul_config.candidates(m, n, kdim, groups,
                                    limits.max_compute_workgroup_storage_size,
                                    limits.max_compute_invocations_per_workgroup)[:most]


def default_tile(k: Kernels, m: int, n: int, kdim: int, groups: int) -> TileConfig:
    """The heuristic's tile (no timing)."""
    return matmul_config.choose_config(m, n, kdim, groups,
                                       k.runtime.limits.max_compute_workgroup_storage_size)


__all__ = ["EPILOGUE_BINDING", "default_tile", "run", "sizes", "tiles"]
