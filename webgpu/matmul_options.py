"""The options of a tiled matmul `TileConfig` that keep its tile: where its threads and
workgroups sit, how its workgroup tiles are addressed, when they are loaded.

The tile (`matmul_config.TileConfig`: its sizes, unrolling, ping-pong and constant-row forms)
fixes what each thread computes; these options fix which thread and which workgroup computes
it, how the workgroup tiles are addressed and when they are staged, without changing the
product:

- `warp_rows` (name suffix `_w{rows}x{cols}`): the 32 lanes of a warp cover a block of rows x
  cols of the thread grid instead of one grid row (or two). A warp's inner-loop reads of the
  workgroup tiles then touch rows x (TM / 4) vec4s of A and cols x (TN / 4) of B, fewer
  distinct bytes per read for a squarer block (the lanes reading one vec4 share it).
- `lanes_m` (`_lm`): the transposing tile loads (A stored row-major, B stored transposed) give
  consecutive lanes consecutive rows of the operand, 4 k's each, instead of 4 lanes per row:
  each lane's 4 scalar stores into the k-major tile then hit 32 different banks, where the
  default mapping puts 4 lanes on one bank (the cost: a warp's global read covers 32 rows
  with 16 bytes each instead of 8 rows with 64).
- `k_nest` (`_kn`, constant-row tiles only): the tiles are declared [buffer][iteration of the
  inner loop][k-row within it][...], so an inner-loop read is indexed by the loop's counter
  and constants, instead of by `kk + u` (one add and one clamp per k-row, naga's Vulkan
  backend clamping every run-time index).
- `raster` (`_g{rows}`): workgroup i of the dispatch computes the tile of C found by walking
  bands of `raster` tile rows column by column, so the workgroups running at one time share
  the same few rows of A and columns of B in the L2 cache.
- `prefetch` (`_d2`, ping-pong tiles only): two sets of staging registers, so a K step's
  tiles are loaded from global memory two steps before they are multiplied (a whole step of
  products between the load and its store into workgroup memory, instead of one).
- `swizzle` (`_x`, constant-row tiles only): the vec4 of a thread's row (A) or column (B) in
  k-row k of a tile sits at position `ty ^ key(k)` (`tx ^ key(k)`), key(k) = ((k / 4) % 4) * 2
  (`swizzle_key`). The transposing stores write one row's 4 k's to k-rows 4 apart, which
  without it share a bank (BM floats per k-row, a multiple of 32): 4 lanes per bank for a
  warp's store, none with the key. Reads stay one run-time index (and an XOR) per vec4.
- `store_mid` (`_sm`, an inner loop of an even number of iterations): the staged tiles are
  stored into the free workgroup buffer halfway through the step's products rather than after
  them.

Standard library only, like `matmul_config.py` and `matmul_render.py` (the benchmark loads
them by path).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .matmul_config import TileConfig

WARP = 32  # lanes the warp layout is drawn for (NVIDIA's warp; any size stays correct)
_SUFFIX = re.compile(r"_(w(\d+)x(\d+)|lm|kn|x|sm|g(\d+)|d(\d+))$")
_FLAGS = {"lm": "lanes_m", "kn": "k_nest", "x": "swizzle", "sm": "store_mid"}


def check_options(cfg: TileConfig) -> None:
    """ValueError naming the problem when `cfg`'s layout options do not fit its tile."""
    if cfg.warp_rows:
        cols = WARP // cfg.warp_rows if WARP % cfg.warp_rows == 0 else 0
        if not cols or cfg.wg_x % cols or cfg.wg_y % cfg.warp_rows:
            raise ValueError(
                f"{cfg.name}: a warp of {cfg.warp_rows} grid rows needs warp_rows to divide"
                f" {WARP} and the {cfg.wg_y} x {cfg.wg_x} thread grid to split into such blocks")
        if cfg.subgroup:
            raise ValueError(f"{cfg.name}: the subgroup variant needs lanes along a grid row")
    if (cfg.k_nest or cfg.swizzle) and not cfg.const_rows:
        raise ValueError(f"{cfg.name}: k_nest and swizzle need the constant-row tiles"
                         " (const_rows)")
    if cfg.swizzle and any(g < 8 or g & (g - 1) for g in (cfg.wg_x, cfg.wg_y)):
        raise ValueError(f"{cfg.name}: swizzle needs a thread grid of powers of two, at least"
                         f" 8 each way (this one is {cfg.wg_y} x {cfg.wg_x})")
    if cfg.raster < 0 or cfg.warp_rows < 0:
        raise ValueError(f"{cfg.name}: raster and warp_rows are counts (0: off)")
    if cfg.prefetch not in (1, 2) or (cfg.prefetch == 2 and not cfg.pingpong):
        raise ValueError(f"{cfg.name}: prefetch is 1, or 2 with the ping-pong loop (pingpong)")
    if cfg.store_mid and (cfg.unroll == cfg.bk or (cfg.bk // cfg.unroll) % 2):
        raise ValueError(f"{cfg.name}: store_mid needs an inner loop of an even number of"
                         " iterations (unroll dividing bk / 2)")


def suffix(cfg: TileConfig) -> str:
    """The name suffix of `cfg`'s layout options (empty: none), in `split_name`'s order."""
    out = ""
    if cfg.warp_rows:
        out += f"_w{cfg.warp_rows}x{WARP // cfg.warp_rows}"
    if cfg.lanes_m:
        out += "_lm"
    if cfg.k_nest:
        out += "_kn"
    if cfg.swizzle:
        out += "_x"
    if cfg.store_mid:
        out += "_sm"
    if cfg.raster:
        out += f"_g{cfg.raster}"
    if cfg.prefetch != 1:
        out += f"_d{cfg.prefetch}"
    return out


def split_name(name: str) -> tuple[str, dict[str, object]]:
    """(the tile's name, the `TileConfig` fields its layout suffixes set): `t..._pp_cr_w8x4_kn`
    gives ("t..._pp_cr", {"warp_rows": 8, "k_nest": True})."""
    options: dict[str, object] = {}
    while found := _SUFFIX.search(name):
        text = found.group(1)
        if found.group(2):
            if int(found.group(2)) * int(found.group(3)) != WARP:
                raise ValueError(f"matmul tile {name!r}: a warp block _wRxC needs R * C = {WARP}")
            options.setdefault("warp_rows", int(found.group(2)))
        elif found.group(4):
            options.setdefault("raster", int(found.group(4)))
        elif found.group(5):
            options.setdefault("prefetch", int(found.group(5)))
        else:
            options.setdefault(_FLAGS[text], True)
        name = name[:found.start()]
    return name, options


def swizzle_key(k: int | str) -> int | str:
    """The XOR key of k-row `k` (a number, or a WGSL u32 expression): ((k / 4) % 4) * 2, at most
    6, so it keeps a vec4 within its group of 8 (a grid of at least 8, a power of two)."""
    if isinstance(k, int):
        return (k >> 1) & 6
    return f"((({k}) >> 1u) & 6u)"


def thread_map(cfg: TileConfig) -> str:
    """WGSL setting `tx`, `ty` (the thread's column and row of the grid) from `t`."""
    if not cfg.warp_rows:
        return "let tx = t % WG_X;\n    let ty = t / WG_X;"
    cols = WARP // cfg.warp_rows
    across = cfg.wg_x // cols  # warps per band of warp_rows grid rows
    return (f"// warps of {cfg.warp_rows} x {cols} threads of the grid (matmul_options.py)\n"
            f"    let lane = t % {WARP}u;\n"
            f"    let warp = t / {WARP}u;\n"
            f"    let tx = (warp % {across}u) * {cols}u + lane % {cols}u;\n"
            f"    let ty = (warp / {across}u) * {cfg.warp_rows}u + lane / {cols}u;")


def tile_map(cfg: TileConfig) -> str:
    """WGSL setting `m0`, `n0` (the workgroup's first row and column of C)."""
    if not cfg.raster:
        return "let m0 = wid.y * BM;\n    let n0 = wid.x * BN;"
    g = f"{cfg.raster}u"
    return ("// bands of tile rows, walked column by column (matmul_options.py)\n"
            "    let tile = wid.y * nwg.x + wid.x;\n"
            f"    let band = tile / ({g} * nwg.x);\n"
            f"    let first = band * {g};\n"
            f"    let tall = min({g}, nwg.y - first);\n"
            f"    let within = tile - band * {g} * nwg.x;\n"
            "    let m0 = (first + within % tall) * BM;\n"
            "    let n0 = (within / tall) * BN;")


def builtins(cfg: TileConfig) -> str:
    """The entry point's extra arguments: the subgroup lane, the dispatch's size."""
    out = ""
    if cfg.subgroup:
        out += ",\n        @builtin(subgroup_invocation_id) sid: u32"
    if cfg.raster:
        out += ",\n        @builtin(num_workgroups) nwg: vec3<u32>"
    return out
