"""The options of a tiled matmul `TileConfig` that keep its tile: which thread of the workgroup
computes which block of C, and how early a K step's tiles are loaded.

The tile (`matmul_config.TileConfig`: its sizes, unrolling, ping-pong and constant-row forms)
fixes what each thread computes; these options change neither that nor the product:

- `warp_rows` (name suffix `_w{rows}x{cols}`): the 32 lanes of a warp cover a block of rows x
  cols of the thread grid instead of one grid row (or two). A warp's inner-loop reads of the
  workgroup tiles then touch rows x (TM / 4) vec4s of A and cols x (TN / 4) of B instead of
  (TM / 4) (or twice that) and 32 x (TN / 4).
- `prefetch` (`_d2`, ping-pong tiles only): two sets of staging registers, so a K step's tiles
  are loaded from global memory two steps before they are multiplied (a whole step of
  products between the load and its store into workgroup memory, instead of none).
- `buffers` (`_b1`): one workgroup buffer of each tile instead of two, so a K step twice as
  deep fits the same memory (128x256x32 in 48 KiB). The next step's global loads still go to
  registers during the products; storing them waits for a second barrier, after every thread
  has read the tile (two barriers per step instead of one, half as many steps).
- `checks` (`_nc`: no checks; `_nb`: no bounds checks; `_nl`: no loop bounding): the module
  is compiled without naga's run-time index clamps and/or its hidden loop counters
  (`unchecked_module.py`), natively only. Every index of the template is in bounds by
  construction: workgroup indices are the thread's row or column and constants, storage reads
  and writes are guarded by the matrix's extent, which the host derives from the buffers it
  binds; every loop runs a count of K steps or a constant.
- `interior` (`_in`): the global loads and C's stores compare no bound and select no zero.
  Only for products whose M, N and K are multiples of the tile (`fits_interior`: 4096^3,
  most model layers), where no workgroup reaches an edge; `matmul_config.for_shape` swaps it
  for the guarded form on any other shape, so a ragged product never runs it.
- `clamped` (`_cl`): for products whose K is whole K steps but whose M or N is ragged: the
  loads compare nothing along K and clamp the row or column along M or N to the operand's
  last one (one `min`, no branch); what a clamped load reads only reaches rows or columns of
  C past its edge, which the (guarded) stores skip.
- `hoist` (`_ha`, with `_in`): each global load's index is computed once per thread for the
  first K step; a step adds one offset (`dk / 4` along a row, `dk * ld / 4` across rows)
  instead of recomputing row * ld + column for every load.
- `hoist_stores` (`_hs`, constant-row tiles): the workgroup-memory indices each staging
  register is stored at (k-row, vec4 group, thread row or column, lane) are computed once per
  thread instead of in every K step.

A config with options is named by its tile's name and their suffixes
(`t64x64x16_4x4_u16_pp_cr_w8x4_d2`: `matmul_config.tile` resolves such names). Measured on the
H100 with `benchmarks/webgpu_matmul.py --configs` (benchmarks/README.md, sessions 5 and 6):
`_w8x4_d2` speeds the 64x64 tile up at 1024^3 and slows the 128x256 one down at 2048^3 and
4096^3; `_nb` speeds the 128x256 one up, `_nl` and `_nc` slow it down, `_b1` on 128x256x32
loses to it; `_in` speeds it up 11% at 2048^3 and 4096^3, `_cl` 9-11% at 2000^3 and 4000^3,
`_ha` and `_hs` add nothing beyond the spread, and `_in` gives MEDIUM's twin nothing at
1024^3 (session 6b). The native ladder takes `_w8x4_d2` and `_nb` (`matmul_config.ladder`),
and natively WIDE runs `_in` or `_cl` where the shape allows (`matmul_config.for_shape`).
Standard library only, like `matmul_config.py` and `matmul_render.py` (the benchmark loads
them by path).
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from .unchecked_module import ALL_CHECKS, BOUNDS_CHECKS, LOOP_BOUNDING

if TYPE_CHECKING:
    from .matmul_config import TileConfig

WARP = 32  # lanes the warp layout is drawn for (NVIDIA's warp; any size stays correct)
# the suffix of each combination of naga's run-time checks (unchecked_module.py)
_CHECKS_SUFFIX = {ALL_CHECKS: "", 0: "_nc", LOOP_BOUNDING: "_nb", BOUNDS_CHECKS: "_nl"}
_SUFFIX_CHECKS = {v[1:]: k for k, v in _CHECKS_SUFFIX.items() if v}
# the options without a value
_FLAGS = {"in": "interior", "cl": "clamped", "ha": "hoist", "hs": "hoist_stores"}
_SUFFIX = re.compile(r"_(w(\d+)x(\d+)|d(\d+)|b(\d+)|n[cbl]|in|cl|ha|hs)$")


def check_options(cfg: TileConfig) -> None:
    """ValueError naming the problem when `cfg`'s options do not fit its tile."""
    if cfg.warp_rows:
        cols = WARP // cfg.warp_rows if 0 < cfg.warp_rows and WARP % cfg.warp_rows == 0 else 0
        if not cols or cfg.wg_x % cols or cfg.wg_y % cfg.warp_rows:
            raise ValueError(
                f"{cfg.name}: a warp of {cfg.warp_rows} grid rows needs warp_rows to divide"
                f" {WARP} and the {cfg.wg_y} x {cfg.wg_x} thread grid to split into such blocks")
        if cfg.subgroup:
            raise ValueError(f"{cfg.name}: the subgroup variant needs lanes along a grid row")
    if cfg.prefetch not in (1, 2) or (cfg.prefetch == 2 and not cfg.pingpong):
        raise ValueError(f"{cfg.name}: prefetch is 1, or 2 with the ping-pong loop (pingpong)")
    if cfg.checks not in _CHECKS_SUFFIX:
        raise ValueError(f"{cfg.name}: checks is a combination of unchecked_module's bits")
    if cfg.hoist and not cfg.interior:
        raise ValueError(f"{cfg.name}: hoisted load indices (_ha) need the interior tile (_in)")
    if cfg.clamped and cfg.interior:
        raise ValueError(f"{cfg.name}: a tile is interior (_in) or clamped (_cl), not both")
    if cfg.hoist_stores and not cfg.const_rows:
        raise ValueError(f"{cfg.name}: hoisted store indices (_hs) need a constant-row tile (_cr)")
    if cfg.buffers not in (1, 2) or (cfg.buffers == 1 and cfg.prefetch != 1):
        raise ValueError(f"{cfg.name}: buffers is 2, or 1 with prefetch 1 (_b1 without _d2)")


def suffix(cfg: TileConfig) -> str:
    """The name suffix of `cfg`'s options (empty: none), in `split_name`'s order."""
    out = f"_w{cfg.warp_rows}x{WARP // cfg.warp_rows}" if cfg.warp_rows else ""
    out += f"_d{cfg.prefetch}" if cfg.prefetch != 1 else ""
    out += f"_b{cfg.buffers}" if cfg.buffers != 2 else ""
    out += "_in" if cfg.interior else ""
    out += "_cl" if cfg.clamped else ""
    out += "_ha" if cfg.hoist else ""
    out += "_hs" if cfg.hoist_stores else ""
    return out + _CHECKS_SUFFIX[cfg.checks]


def split_name(name: str) -> tuple[str, dict[str, int]]:
    """(the tile's name, the `TileConfig` fields its option suffixes set):
    `t..._pp_cr_w8x4_d2` gives ("t..._pp_cr", {"warp_rows": 8, "prefetch": 2})."""
    options: dict[str, int] = {}
    while found := _SUFFIX.search(name):
        if found.group(2):
            if int(found.group(2)) * int(found.group(3)) != WARP:
                raise ValueError(f"matmul tile {name!r}: a warp block _wRxC needs R * C = {WARP}")
            options.setdefault("warp_rows", int(found.group(2)))
        elif found.group(4):
            options.setdefault("prefetch", int(found.group(4)))
        elif found.group(5):
            options.setdefault("buffers", int(found.group(5)))
        elif found.group(1) in _FLAGS:
            options.setdefault(_FLAGS[found.group(1)], True)
        else:
            options.setdefault("checks", _SUFFIX_CHECKS[found.group(1)])
        name = name[:found.start()]
    return name, options


def fits_interior(cfg: TileConfig, m: int, n: int, k: int) -> bool:
    """Whether every workgroup of `cfg` on an M x K @ K x N product is interior: M, N and K
    are multiples of the tile and the K step (each K slice of a split is a multiple of 64,
    so of BK, and ends at a multiple of BK too)."""
    return m % cfg.bm == 0 and n % cfg.bn == 0 and k % cfg.bk == 0 and min(m, n, k) > 0


EDGES = ("", "cl", "in")  # guarded, clamped, interior: each allowed on fewer shapes


def edges_allowed(cfg: TileConfig, m: int, n: int, k: int) -> str:
    """The least guarded loads `cfg` may run on an M x K @ K x N product (one of EDGES):
    "in" where every workgroup is interior, "cl" where K is whole K steps, else ""."""
    if fits_interior(cfg, m, n, k):
        return "in"
    return "cl" if k % cfg.bk == 0 and min(m, n, k) > 0 else ""


def edges(cfg: TileConfig) -> str:
    """`cfg`'s loads: "in" (`_in`), "cl" (`_cl`) or "" (guarded)."""
    return "in" if cfg.interior else "cl" if cfg.clamped else ""


def with_edges(cfg: TileConfig, mode: str) -> TileConfig:
    """`cfg` with the loads of `mode` (one of EDGES; `_ha` only stays with "in"), named by
    its tile and its options."""
    return cfg if edges(cfg) == mode else _edges_twin(cfg, mode)


@lru_cache(maxsize=1024)  # asked on every launch of a tiled product (matmul_config.for_shape)
def _edges_twin(cfg: TileConfig, mode: str) -> TileConfig:
    base = split_name(cfg.name)[0]
    twin = replace(cfg, name=base, interior=mode == "in", clamped=mode == "cl",
                   hoist=cfg.hoist and mode == "in")
    return replace(twin, name=base + suffix(twin))


def with_interior(cfg: TileConfig, interior: bool) -> TileConfig:
    """`cfg` with (or without) the `_in` option (without it: guarded, without `_ha` too)."""
    return with_edges(cfg, "in" if interior else "")


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
