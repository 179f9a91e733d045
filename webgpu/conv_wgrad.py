"""conv2d's weight gradient as a tiled GEMM of its own (`shaders/conv2d_wgrad_tiled.wgsl`).

A weight gradient is dW[co, (ci, ky, kx)] = sum over the batch's output pixels of dy times the
input under the tap: a small output (cog x cg*KH*KW per group, 16-256 by 27-2304 in SqueezeNet
and the MNIST model) over a long reduction (N*OH*OW, 12,544-204,304 terms). The implicit GEMM
(`conv_gemm.py`, the matmul's template with conv2d_gemm.wgsl's gathers) ran it at a third of
cuDNN's speed on most of those layers: its gather divides the pixel and tap indices anew at
every load. This kernel walks each invocation's pixel lane with carries instead and keeps the
taps of its columns fixed, splits the pixels into slices of `length` so that the workgroups fill
the GPU, and adds the slices' partial sums with `matmul_variants.add_partials` (its documented,
deterministic order).

`conv.py` chooses it by name ("wgrad/<tile>" or "wgrad/<tile>/l<length>", `TILES`) beside the
direct kernel and the GEMM.
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import matmul_variants, software
from .codegen import KernelKey, render
from .kernels import Kernels
from .tensor import GpuTensor
from .unchecked_module import ALL_CHECKS, LOOP_BOUNDING

PREFIX = "wgrad/"
STEP = 16  # pixels per step of the kernel (BK); a slice's length is a multiple of it
# Tiles as rows x columns of dW (rows: output channels of a group; columns: cg*KH*KW): each
# invocation adds a 4 x 4 block, so a tile of BM x BN has BM*BN/16 invocations (64 to 256).
TILES = {"64x64": (16, 16), "32x64": (16, 8), "16x64": (16, 4), "64x32": (8, 16),
         "64x16": (4, 16), "32x32": (8, 8)}
# The slices: enough (tile, slice) workgroups for TARGET_INVOCATIONS invocations in all (about
# 2048 per H100 multiprocessor, 132 of them), each slice at least MIN_LENGTH pixels, at most
# MAX_SLICES slices. A page's software adapter runs on a few CPU threads: SOFTWARE_INVOCATIONS.
# In Chromium's SwiftShader the 16x64 tile (16 B columns loaded per invocation) lost the device
# (conformance's 16 x 108 gradient) where 64x64 ran every case; lavapipe runs every tile. So a
# page's software adapter takes 64x64 whatever the shape.
SOFTWARE_TILE = "64x64"
TARGET_INVOCATIONS = 1 << 18
SOFTWARE_INVOCATIONS = 1 << 12
MIN_LENGTH = 256
MAX_SLICES = 1024
# Natively the module keeps only naga's loop bounding (its header's index-safety note), as
# `conv_gemm.NATIVE_CHECKS`; a page compiles every check.
NATIVE_CHECKS = LOOP_BOUNDING
_F32 = (DType.F32, DType.F32, DType.F32)


def choose_tile(m: int, n: int, soft: bool = False) -> str:
    """The tile for a weight gradient of `m` rows (cog) by `n` columns (cg*KH*KW): the
    narrowest of 16, 32 and 64 that holds each side, widened to at least 64 invocations
    (a 16-row gradient takes 64 columns, a 32 x 16 one 64 rows); SOFTWARE_TILE on a page's
    software adapter."""
    if soft:
        return SOFTWARE_TILE
    bm = 16 if m <= 16 else 32 if m <= 32 else 64
    bn = 16 if n <= 16 else 32 if n <= 32 else 64
    if bm * bn < 1024:
        if bm == 16:
            bn = 64
        else:
            bm = 64
    return f"{bm}x{bn}"


def slice_length(tile: str, m: int, n: int, groups: int, total: int, soft: bool = False) -> int:
    """Pixels per slice for a weight gradient of `m` x `n` per group over `total` pixels on
    `tile` (a multiple of STEP): the shortest of at least MIN_LENGTH that keeps the slices'
    invocations at TARGET_INVOCATIONS (SOFTWARE_INVOCATIONS on a page's software adapter) and
    the slices at MAX_SLICES at most."""
    wg_x, wg_y = TILES[tile]
    tiles = -(-m // (4 * wg_y)) * -(-n // (4 * wg_x)) * groups
    target = SOFTWARE_INVOCATIONS if soft else TARGET_INVOCATIONS
    slices = max(1, target // (tiles * wg_x * wg_y))
    length = max(MIN_LENGTH, -(-total // slices), -(-total // MAX_SLICES))
    return -(-length // STEP) * STEP


def parse(name: str) -> tuple[str, int | None]:
    """("<tile>", length or None) of a variant name "wgrad/<tile>[/l<length>]"."""
    parts = name[len(PREFIX):].split("/")
    tile = parts[0]
    if tile not in TILES or len(parts) > 2 or (len(parts) == 2 and not (
            parts[1].startswith("l") and parts[1][1:].isdigit() and int(parts[1][1:]) > 0
            and int(parts[1][1:]) % STEP == 0)):
        raise ValueError(f"unknown weight-gradient variant {name!r}: use wgrad/<tile> or "
                         f"wgrad/<tile>/l<length>, tile one of {', '.join(TILES)}, length a "
                         f"multiple of {STEP}")
    return tile, int(parts[1][1:]) if len(parts) == 2 else None


_LANES = "xyzw"


def statements(wg_x: int, wg_y: int) -> dict[str, str]:
    """conv2d_wgrad_tiled.wgsl's generated placeholders for a tile of `wg_x` x `wg_y`
    invocations, every loop over loads, products and sums unrolled (naga's loop bounding keeps
    a driver from unrolling them, and a private array indexed at run time lives in memory)."""
    threads = wg_x * wg_y
    quads_a, quads_b = 16 // wg_x, 16 // wg_y  # quads of 4 rows (columns) an invocation loads
    step = threads // STEP  # quads between one invocation's quads
    sa, sb = wg_y + 1, wg_x + 1  # vec4s per pixel in workgroup memory (the shader's SA, SB)
    ind, ind3 = "    ", "            "
    setup, declare, loads, stores = [], [], [], []
    for i in range(quads_a):
        setup += [f"{ind}let ar{i} = row0 + 4 * (quad + {i * step});",
                  f"{ind}let ao{i} = (g * cog + ar{i}) * plane;"]
        regs = [f"ra{i}_{c}" for c in range(4)]
        declare += [f"{ind}var {r} = 0.0;" for r in regs]
        for c, reg in enumerate(regs):
            loads += [f"{ind3}{reg} = 0.0;",
                      f"{ind3}if (inside && ar{i} + {c} < cog) {{",
                      f"{ind3}    {reg} = dy[dy_at + ao{i} + {c} * plane];",
                      f"{ind3}}}"]
        stores.append(f"{ind3}as_[a_at + {i * step}u] = vec4<f32>({', '.join(regs)});")
    for i in range(quads_b):
        regs = []
        for c in range(4):
            q = f"{i}_{c}"
            setup += [f"{ind}let bc{q} = col0 + 4 * (quad + {i * step}) + {c};",
                      f"{ind}let bi{q} = bc{q} / taps;",
                      f"{ind}let bt{q} = bc{q} - bi{q} * taps;",
                      f"{ind}let bky{q} = bt{q} / kw;",
                      f"{ind}let bo{q} = (g * cg + bi{q}) * hw;",
                      f"{ind}var by{q} = bky{q} * cm[10] - cm[8];",
                      f"{ind}if (bc{q} >= kdim) {{ by{q} = OUTSIDE; }}",
                      f"{ind}let bx{q} = (bt{q} - bky{q} * kw) * cm[11] - cm[9];"]
            declare.append(f"{ind}var rb{q} = 0.0;")
            loads += [f"{ind3}rb{q} = 0.0;",
                      f"{ind3}let iy{q} = iy0 + by{q};",
                      f"{ind3}let ix{q} = ix0 + bx{q};",
                      f"{ind3}if (inside && iy{q} >= 0 && iy{q} < h && ix{q} >= 0 && ix{q} < w) {{",
                      f"{ind3}    rb{q} = x[x_at + bo{q} + iy{q} * w + ix{q}];",
                      f"{ind3}}}"]
            regs.append(f"rb{q}")
        stores.append(f"{ind3}bs[b_at + {i * step}u] = vec4<f32>({', '.join(regs)});")
    products = []
    for kk in range(STEP):
        products += [f"{ind3}let av{kk} = as_[{kk * sa}u + ty];",
                     f"{ind3}let bv{kk} = bs[{kk * sb}u + tx];"]
        products += [f"{ind3}acc{r} += av{kk}.{_LANES[r]} * bv{kk};" for r in range(4)]
    output = []
    for r in range(4):
        output.append(f"{ind}if (r0 + {r} < cog) {{")
        for c in range(4):
            output += [f"{ind}    if (c0 + {c} < kdim) {{",
                       f"{ind}        out[base + (r0 + {r}) * kdim + c0 + {c}] = "
                       f"acc{r}.{_LANES[c]};",
                       f"{ind}    }}"]
        output.append(f"{ind}}}")
    return {"setup": "\n".join(setup), "declare": "\n".join(declare),
            "loads": "\n".join(loads), "stores": "\n".join(stores),
            "products": "\n".join(products), "output": "\n".join(output)}


def _native(k: Kernels) -> bool:
    return k.runtime.adapter.backend not in (software.BROWSER_BACKEND, software.RECORDER_BACKEND)


def run(k: Kernels, out: GpuTensor, x: GpuTensor, dy: GpuTensor, stride: Pair, padding: Pads,
        dilation: Pair, groups: int, tile: str | None = None,
        length: int | None = None) -> None:
    """dW of conv2d into `out` (dense, (C_out, cg, KH, KW)) from the input `x` and the output
    gradient `dy` (both dense): on `tile` (None: `choose_tile`), in slices of `length` pixels
    (None: `slice_length`), the slices' partial sums then added (a second dispatch)."""
    n_img, c_in, h, w = x.shape
    c_out, cg, kh, kw = out.shape
    oh, ow = dy.shape[2], dy.shape[3]
    cog = c_out // groups
    kdim = cg * kh * kw
    total = n_img * oh * ow
    soft = software.software(k.runtime.adapter)
    tile = tile or choose_tile(cog, kdim, soft)
    wg_x, wg_y = TILES[tile]
    if length is None:
        length = slice_length(tile, cog, kdim, groups, total, soft)
    most = max(1, k.runtime.limits.max_compute_workgroups_per_dimension // groups)
    if -(-total // length) > most:  # the grid's z holds groups * slices
        shortest = -(-total // most)
        length = -(-shortest // STEP) * STEP
    slices = max(1, -(-total // length))
    (pt, _), (pl, _) = padding
    words = [h, w, oh, ow, kh, kw, *stride, pt, pl, *dilation, c_in, c_out, cg, cog, kdim,
             total, length, slices]
    target = out if slices == 1 else k.empty((groups * slices, cog * kdim), DType.F32,
                                             "conv2d_wgrad")
    checks = NATIVE_CHECKS if _native(k) else ALL_CHECKS
    key = KernelKey("conv2d_wgrad_tiled", tile, _F32, 0, (checks,))
    pipeline = k.cached(key) or k.pipeline(
        key, render("conv2d_wgrad_tiled.wgsl", wg_x=wg_x, wg_y=wg_y,
                    **statements(wg_x, wg_y)), checks=checks)
    grid = (-(-kdim // (4 * wg_x)), -(-cog // (4 * wg_y)), groups * slices)
    k.launch(pipeline, [k.meta(words), x.block.buffer, dy.block.buffer, target.block.buffer],
             grid, cost=2.0 * c_out * kdim * total)
    if slices > 1:
        matmul_variants.add_partials(k, target, out, groups, slices)


__all__ = ["MAX_SLICES", "MIN_LENGTH", "NATIVE_CHECKS", "PREFIX", "SOFTWARE_TILE", "STEP",
           "TARGET_INVOCATIONS",
           "TILES", "choose_tile", "parse", "run", "slice_length", "statements"]
