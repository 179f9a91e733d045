"""Tile configurations for the tiled fp32 matmul shader: the shapes, the choice among them.

`shaders/matmul_tiled.wgsl` is a template: its opening comment lists the bindings and the
`{{ placeholders }}`. This module knows the tile shapes that were measured (see
benchmarks/README.md), picks one for a problem size, splits K and packs the uniform;
`matmul_render.py` renders the WGSL for a tile (`render` is importable from here too). Both are
standard library only, so the benchmark (which loads them by path) and the webgpu backend can
use them.

Typical use::

    cfg = choose_config(m, n, k)
    aligned = is_aligned(n, k, offsets=(off_a, off_b, off_c, stride_a, stride_b, stride_c))
    code = render(cfg, aligned, layout="nt")       # WGSL source (B stored transposed)
    key = cfg.cache_key(aligned, "nt")             # pipeline cache key
    groups = cfg.dispatch(m, n, batch)             # (x, y, z) workgroups
    uniform = params_bytes(m, n, k, batch, stride_a, stride_b, stride_c, layout="nt")

Operand layouts: each of A and B is read either row-major ("n": element (r, c) at
r * ld + c) or transposed ("t": at c * ld + r), with a leading dimension `ld` (a row of a
sliced view may be longer than the matrix) and an element offset, so `x.T @ y` or
`y @ w.T` run without copying the transposed operand first.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

# rendering lives in matmul_render.py; these stay importable from here
from .matmul_options import (
    EDGES,
    check_options,
    edges,
    edges_allowed,
    split_name,
    with_edges,
)
from .matmul_render import LAYOUTS as LAYOUTS
from .matmul_render import TEMPLATE_PATH as TEMPLATE_PATH
from .matmul_render import render as render
from .unchecked_module import ALL_CHECKS


@dataclass(frozen=True)
class TileConfig:
    """One tiling of C = A @ B.

    bm x bn: tile of C per workgroup; bk: K step staged in workgroup memory;
    tm x tn: block of C per thread (multiples of 4, held in tm * tn / 4 vec4 registers).
    """

    name: str
    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    unroll: int = 1  # k's per inner-loop iteration written out in the WGSL (1 .. bk)
    subgroup: bool = False  # the quads of a row share A through subgroupShuffle (the template)
    pingpong: bool = False  # two K steps per loop iteration, buffers 0 and 1 as constants
    const_rows: bool = False  # workgroup tiles indexed by constant k-rows (matmul_render._tiles)
    # the options of `matmul_options.py` (names: the tile's, then their suffixes, `tile(name)`)
    warp_rows: int = 0  # rows of the thread grid per 32-lane warp (0: lanes along a grid row)
    prefetch: int = 1  # K steps between a tile's global load and its multiplication (1 or 2)
    buffers: int = 2  # workgroup buffers of each tile (1: two barriers per K step)
    # naga's run-time checks compiled in (unchecked_module.py's bits; < ALL natively only)
    checks: int = ALL_CHECKS
    interior: bool = False  # no bound compares: only for M, N, K multiples of the tile (`_in`)
    hoist: bool = False  # global load indices computed once, plus a per-step offset (`_ha`)
    clamped: bool = False  # loads clamped, not compared: only for K a multiple of bk (`_cl`)
    hoist_stores: bool = False  # workgroup store indices computed once per thread (`_hs`)

    def __post_init__(self) -> None:
        if self.unroll < 1 or self.bk % self.unroll:
            raise ValueError(f"{self.name}: unroll must divide bk")
        if self.tm % 4 or self.tn % 4 or self.bk % 4:
            raise ValueError(f"{self.name}: tm, tn and bk must be multiples of 4")
        if self.bm % self.tm or self.bn % self.tn:
            raise ValueError(f"{self.name}: bm must divide by tm and bn by tn")
        if (self.bm * self.bk // 4) % self.threads or (self.bk * self.bn // 4) % self.threads:
            raise ValueError(
                f"{self.name}: the A tile ({self.bm}x{self.bk}) and B tile ({self.bk}x{self.bn})"
                f" must split into whole vec4 loads over {self.threads} threads"
            )
        if self.threads > 256:
            raise ValueError(f"{self.name}: {self.threads} threads exceed WebGPU's default 256")
        if self.const_rows and self.subgroup:
            raise ValueError(f"{self.name}: constant k-rows and subgroup sharing exclude each"
                             " other")
        check_options(self)
        if self.subgroup and (self.wg_x % 4 or (self.unroll * self.tm // 4) % 4):
            raise ValueError(f"{self.name}: the subgroup variant needs rows of whole quads"
                             " (bn / tn a multiple of 4) and unroll * tm a multiple of 16")

    @property
    def wg_x(self) -> int:
        return self.bn // self.tn

    @property
    def wg_y(self) -> int:
        return self.bm // self.tm

    @property
    def threads(self) -> int:
        return self.wg_x * self.wg_y

    @property
    def loads_a(self) -> int:
        return self.bm * self.bk // 4 // self.threads

    @property
    def loads_b(self) -> int:
        return self.bk * self.bn // 4 // self.threads

    @property
    def workgroup_bytes(self) -> int:
        """Workgroup memory used: two buffers (or one) of the transposed A tile and the B tile."""
        return self.buffers * self.bk * (self.bm + self.bn) * 4

    def dispatch(self, m: int, n: int, batch: int = 1) -> tuple[int, int, int]:
        return (-(-n // self.bn), -(-m // self.bm), batch)

    def cache_key(self, aligned: bool, layout: str = "nn") -> tuple[object, ...]:
        return (
            "matmul_tiled",
            self.bm,
            self.bn,
            self.bk,
            self.tm,
            self.tn,
            self.unroll,
            bool(aligned),
            layout,
            self.subgroup,
            self.pingpong,
            self.const_rows,
            self.warp_rows,
            self.prefetch,
            self.buffers,
            self.checks,
            self.interior,
            self.hoist,
            self.hoist_stores,
            self.clamped,
        )

    def as_dict(self) -> dict[str, str | int | list[int]]:
        return {
            "name": self.name,
            "bm": self.bm,
            "bn": self.bn,
            "bk": self.bk,
            "tm": self.tm,
            "tn": self.tn,
            "unroll": self.unroll,
            "subgroup": self.subgroup,
            "pingpong": self.pingpong,
            "const_rows": self.const_rows,
            "warp_rows": self.warp_rows,
            "prefetch": self.prefetch,
            "buffers": self.buffers,
            "checks": self.checks,
            "interior": self.interior,
            "hoist": self.hoist,
            "hoist_stores": self.hoist_stores,
            "clamped": self.clamped,
            "workgroup_size": [self.threads, 1, 1],
            "workgroup_bytes": self.workgroup_bytes,
        }


SUBGROUP_SUFFIX = "_sg"
PINGPONG_SUFFIX = "_pp"

# Measured on an NVIDIA H200 and H100 through Vulkan and on lavapipe: see benchmarks/README.md.
CONFIGS: dict[str, TileConfig] = {
    c.name: c
    for c in (
        TileConfig("t128x256x8_8x16_u8", 128, 256, 8, 8, 16, 8),
        TileConfig("t128x256x16_8x16_u16", 128, 256, 16, 8, 16, 16),
        TileConfig("t256x128x16_16x8_u16", 256, 128, 16, 16, 8, 16),
        TileConfig("t128x256x16_8x16_u4", 128, 256, 16, 8, 16, 4),
        TileConfig("t128x128x8_8x8_u4", 128, 128, 8, 8, 8, 4),
        TileConfig("t128x256x16_8x16_u8", 128, 256, 16, 8, 16, 8),
        # K steps of 32: 96 KiB double-buffered, 48 KiB with one buffer (matmul_options `_b1`)
        TileConfig("t128x256x32_8x16_u8", 128, 256, 32, 8, 16, 8),
        TileConfig("t128x256x32_8x16_u16", 128, 256, 32, 8, 16, 16),
        TileConfig("t64x64x8_8x8_u8", 64, 64, 8, 8, 8, 8),
        TileConfig("t256x128x8_16x8_u8", 256, 128, 8, 16, 8, 8),
        TileConfig("t128x128x8_8x8", 128, 128, 8, 8, 8),
        TileConfig("t128x128x8_8x8_u8", 128, 128, 8, 8, 8, 8),
        TileConfig("t128x128x16_8x8", 128, 128, 16, 8, 8),
        TileConfig("t128x128x16_8x8_u4", 128, 128, 16, 8, 8, 4),
        TileConfig("t128x128x16_8x8_u16", 128, 128, 16, 8, 8, 16),
        TileConfig("t128x64x16_8x4", 128, 64, 16, 8, 4),
        TileConfig("t64x128x16_4x8", 64, 128, 16, 4, 8),
        TileConfig("t64x128x8_8x8_u8", 64, 128, 8, 8, 8, 8),
        TileConfig("t128x64x8_8x8_u8", 128, 64, 8, 8, 8, 8),
        TileConfig("t64x64x16_4x4", 64, 64, 16, 4, 4),
        TileConfig("t64x64x16_4x4_u16", 64, 64, 16, 4, 4, 16),
        TileConfig("t64x64x8_8x4", 64, 64, 8, 8, 4),
        TileConfig("t64x64x8_8x4_u8", 64, 64, 8, 8, 4, 8),
        TileConfig("t32x64x16_4x4_u16", 32, 64, 16, 4, 4, 16),
        TileConfig("t32x32x16_4x4", 32, 32, 16, 4, 4),
        TileConfig("t32x32x16_4x4_u16", 32, 32, 16, 4, 4, 16),
        TileConfig("t32x32x8_4x4_u8", 32, 32, 8, 4, 4, 8),
    )
}
# The subgroup twin of every config whose rows are whole quads: offered only where the device
# has the `subgroups` feature (and its lanes form quads as the template assumes: linalg.py
# checks that once per device before autotune may time one).
_BASE = list(CONFIGS.values())
CONFIGS.update({
    c.name + SUBGROUP_SUFFIX: replace(c, name=c.name + SUBGROUP_SUFFIX, subgroup=True)
    for c in _BASE
    if c.wg_x % 4 == 0 and (c.unroll * c.tm // 4) % 4 == 0
})
# The ping-pong twin of every config (TileConfig.pingpong): two K steps per loop iteration.
CONFIGS.update({c.name + PINGPONG_SUFFIX: replace(c, name=c.name + PINGPONG_SUFFIX, pingpong=True)
                for c in _BASE})
# The constant-row twin of every ping-pong config (TileConfig.const_rows): the same product
# with constant workgroup-memory indices but the thread's row and column.
CONST_ROWS_SUFFIX = "_cr"
CONFIGS.update({c.name + PINGPONG_SUFFIX + CONST_ROWS_SUFFIX:
                replace(c, name=c.name + PINGPONG_SUFFIX + CONST_ROWS_SUFFIX, pingpong=True,
                        const_rows=True)
                for c in _BASE})


def tile(name: str) -> TileConfig:
    """The config called `name`: one of CONFIGS, or one of them with the options that
    `matmul_options.py`'s name suffixes give (`t64x64x16_4x4_u16_pp_cr_w8x4_d2`)."""
    if name in CONFIGS:
        return CONFIGS[name]
    base, options = split_name(name)
    if base not in CONFIGS:
        raise ValueError(f"unknown matmul tile {name!r}: expected a name of"
                         " matmul_config.CONFIGS, optionally with matmul_options's suffixes")
    return replace(CONFIGS[base], name=name, **options)  # type: ignore[arg-type]


# Measured on an NVIDIA H100 through Vulkan (benchmarks/README.md, results/*_h100_s4*.json):
WIDE = "t128x256x16_8x16_u8_pp_cr"  # 48 KiB of workgroup memory, where the device gives it
DEFAULT = "t128x128x8_8x8_u4_pp_cr"  # large outputs within WebGPU's default 16 KiB
MEDIUM = "t64x64x16_4x4_u16_pp_cr"
SMALL = "t32x32x16_4x4_u16"
LADDER = (WIDE, DEFAULT, MEDIUM, SMALL)  # largest tile first
MIN_WORKGROUPS = 256  # ~2 per multiprocessor of a 132-SM GPU; fewer leaves it idle
# A tile that fills a multiprocessor alone (256 threads of 128 accumulators, 48 KiB) needs only
# about one workgroup per multiprocessor (H100, 2048^3: 128 workgroups of WIDE ran 9% faster
# than 256 of DEFAULT).
# Natively, where the device gives WIDE's 48 KiB (a page's adapter gives 16 or 32 KiB), two
# rungs take options of matmul_options.py (benchmarks/README.md, session 6):
# - WIDE compiled without naga's index clamps (its loop counters kept: dropping those cost
#   20%): 2-6% faster at 2048^3 and 4096^3 on the H100 (webgpu_matmul_h100_s6_checks.json);
# - MEDIUM's twin with warps of 8 x 4 threads and loads two K steps ahead: 4-9% faster at
#   1024^3 in session 5 and 4% in session 6 (webgpu_matmul_h100_s5_call*_1024.json,
#   webgpu_matmul_h100_s6_call1_1024.json, all in benchmarks/results/).
NATIVE_WIDE = WIDE + "_nb"
NATIVE_MEDIUM = MEDIUM + "_w8x4_d2"
TILE_MIN_WORKGROUPS = {WIDE: 128, NATIVE_WIDE: 128}
# A software adapter in a page (SwiftShader, `software.py`): register blocks of 8x8 on 64
# invocations. SwiftShader's compile time grows with the invocations per workgroup more than
# with the unrolled body (benchmarks/page_compile.py, results/page_compile_*.json): this tile
# compiled in 1-2.8 s where the 256-invocation 128x128 and 64x128 tiles took 2.3-6.6 s, and
# in the page it ran 12 of SqueezeNet's 14 conv shapes faster than every other tile, padded
# 64-row tiles on 16 and 32 channels included (`page_predict.py --conv-layers`): one rung, so
# a page compiles one tiled pipeline. Products of a few rows run `gemv.py`'s kernel instead.
SOFTWARE_LADDER: tuple[str, ...] = ("t64x64x8_8x8_u8",)  # as measured there
SOFTWARE_MIN_WORKGROUPS = 2
SOFTWARE_MAX_PADDING = 2.0


def ladder(max_workgroup_bytes: int) -> list[TileConfig]:
    """LADDER's tiles that fit `max_workgroup_bytes`, largest first, with NATIVE_WIDE and
    NATIVE_MEDIUM for WIDE and MEDIUM where WIDE fits."""
    native = {WIDE: NATIVE_WIDE, MEDIUM: NATIVE_MEDIUM}
    wide = CONFIGS[WIDE].workgroup_bytes <= max_workgroup_bytes
    return [tile(native.get(name, name) if wide else name) for name in LADDER
            if CONFIGS[name].workgroup_bytes <= max_workgroup_bytes]


#: Natively (where WIDE fits), WIDE (any of its option twins, NATIVE_WIDE included) runs
#: without bound compares in its global loads where the shape allows it: its `_in` twin where
#: every workgroup is interior (NATIVE_INTERIOR), its `_cl` twin (loads clamped) where K is
#: whole K steps and M or N ragged (NATIVE_CLAMPED). On the H100 (benchmarks/README.md,
#: session 6b): `_in` 11% faster at 2048^3 and 4096^3 (45.0 against 40.5 TFLOP/s at 4096),
#: `_cl` 9-11% at 2000^3 and 4000^3. MEDIUM's native twin at 1024^3 gained nothing from `_in`
#: (25.9 / 25.9 against 26.1 / 27.4), so the other tiles keep their guarded loads.
NATIVE_INTERIOR = True
NATIVE_CLAMPED = True
NATIVE_EDGE_TILES = (WIDE,)


def for_shape(cfg: TileConfig, m: int, n: int, k: int, max_workgroup_bytes: int) -> TileConfig:
    """`cfg` as launched on an M x K @ K x N product. A forced `_in` or `_cl` tile is kept
    where the shape allows it and otherwise falls back to the guarded loads the shape allows
    (`matmul_options.edges_allowed`): a ragged product never runs an interior tile. Natively
    (WIDE's 48 KiB fit, the ladder's rule), a tile of NATIVE_EDGE_TILES takes the least
    guarded twin NATIVE_INTERIOR and NATIVE_CLAMPED allow; elsewhere (a page, lavapipe;
    `max_workgroup_bytes` 0: only the fallback) `cfg` is otherwise unchanged."""
    allowed = EDGES.index(edges_allowed(cfg, m, n, k))
    mode = min(EDGES.index(edges(cfg)), allowed)
    if (max_workgroup_bytes and CONFIGS[WIDE].workgroup_bytes <= max_workgroup_bytes
            and split_name(cfg.name)[0] in NATIVE_EDGE_TILES):
        native = [i for i, on in ((2, NATIVE_INTERIOR), (1, NATIVE_CLAMPED)) if on and i <= allowed]
        mode = max([mode, *native])
    return with_edges(cfg, EDGES[mode])


def choose_config(
    m: int, n: int, k: int, batch: int = 1, max_workgroup_bytes: int = 16384, *,
    software: bool = False,
) -> TileConfig:
    """The configuration for a batch of M x K @ K x N products.

    The largest tile of LADDER that still gives at least MIN_WORKGROUPS workgroups (its own
    minimum in TILE_MIN_WORKGROUPS), else the smallest; a config whose workgroup memory exceeds
    the device's limit (WebGPU's default is 16384 bytes) is skipped. With `software`,
    SOFTWARE_LADDER and SOFTWARE_MIN_WORKGROUPS, and no rung padded to SOFTWARE_MAX_PADDING
    times the product.
    """
    least = SOFTWARE_MIN_WORKGROUPS if software else MIN_WORKGROUPS
    fitting = ladder(max_workgroup_bytes) if not software else [
        CONFIGS[name] for name in SOFTWARE_LADDER
        if CONFIGS[name].workgroup_bytes <= max_workgroup_bytes
    ]
    if not fitting:
        raise ValueError(f"no matmul tile fits {max_workgroup_bytes} bytes of workgroup memory")
    for cfg in fitting:
        x, y, z = cfg.dispatch(m, n, batch)
        if x * y * z < (least if software else TILE_MIN_WORKGROUPS.get(cfg.name, least)):
            continue
        padded = x * cfg.bn * y * cfg.bm
        if not software or padded < SOFTWARE_MAX_PADDING * m * n:
            return cfg
    return fitting[-1]


def choose_split(m: int, n: int, k: int, batch: int = 1,
                 max_workgroup_bytes: int = 16384, *,
                 software: bool = False) -> tuple[TileConfig, int]:
    """The heuristic's tile and slices of K (1: none) where the caller can add partial products:
    the largest tile of LADDER with K split (`split_k`) when that split alone gives it
    MIN_WORKGROUPS workgroups (1024-class products within 16 KiB: on the H100 at 1024^3,
    128x128 in 4 slices ran level with 64x64 whole, see benchmarks/README.md), else
    `choose_config`'s. With `software`, never split."""
    cfg = choose_config(m, n, k, batch, max_workgroup_bytes, software=software)
    if software:
        return cfg, 1
    fitting = ladder(max_workgroup_bytes)
    big = fitting[0]
    if cfg != big:
        count = split_k(big, m, n, k, batch)[0]
        x, y, z = big.dispatch(m, n, batch)
        if count > 1 and x * y * z * count >= MIN_WORKGROUPS:
            return big, count
    x, y, z = cfg.dispatch(m, n, batch)
    if x * y * z < MIN_WORKGROUPS and k >= LONG_K * max(m, n):
        # even the smallest tile leaves the GPU short and K is the long side: the largest
        # rung that slices of LONG_SPLIT terms bring to MIN_WORKGROUPS (MNIST's 256 x 1024 @
        # 1024 x 512: the 64x64 tile in 8 slices, 0.027 ms, against the 32x32 tile whole,
        # 0.040 ms, on the H100: results/linear_tiles_h100_s5.json, step_kernels_h100_s5_c.json)
        for rung in fitting:
            count = split_k(rung, m, n, k, batch, min_split=LONG_SPLIT)[0]
            x, y, z = rung.dispatch(m, n, batch)
            if count > 1 and x * y * z * count >= MIN_WORKGROUPS:
                return rung, count
    return cfg, 1


def candidates(
    m: int,
    n: int,
    k: int,
    batch: int = 1,
    max_workgroup_bytes: int = 16384,
    max_threads: int = 256,
    subgroup: bool = False,
) -> list[TileConfig]:
    """The configurations worth timing for a batch of M x K @ K x N products, best guess first.

    `choose_config`'s pick, then the rest of LADDER, then every other config (constant-row
    twins first, each group in CONFIGS order, largest tile first), each fitting the device's
    workgroup memory and invocations; with `subgroup`, each config's subgroup twin (when it has
    one) after it. A tile
    taller than M (or wider than N) rounded up to a power of two only computes padding where a
    smaller tile exists, so it is left out. The autotuner (`webgpu/autotune.py`) times them.
    """
    first = choose_config(m, n, k, batch, max_workgroup_bytes)
    rows = max(32, 1 << (m - 1).bit_length())
    cols = max(32, 1 << (n - 1).bit_length())
    # the constant-row twins first: they won on most tiles on the H100 (autotune's time budget
    # may end the list early)
    rest = ladder(max_workgroup_bytes) + sorted(CONFIGS.values(), key=lambda c: not c.const_rows)
    if subgroup:
        rest = [c for cfg in rest if not cfg.subgroup
                for c in (cfg, CONFIGS.get(cfg.name + SUBGROUP_SUFFIX)) if c is not None]
    found = [first]
    for cfg in rest:
        if (
            cfg not in found
            and (subgroup or not cfg.subgroup)
            and cfg.workgroup_bytes <= max_workgroup_bytes
            and cfg.threads <= max_threads
            and cfg.bm <= rows
            and cfg.bn <= cols
        ):
            found.append(cfg)
    return found


MAX_SPLITS = 16  # slices of K at most (matmul_split_sum.wgsl adds any number)
SPLIT_ALIGN = 64  # a K slice's length is a multiple of every tile's BK
MIN_SPLIT = 256  # reduction terms per slice below which splitting K costs more than it gains
LONG_K = 2  # a reduction at least this many times the output's longer side is "long"
LONG_SPLIT = 64  # terms per slice at least, splitting a long reduction the tiles cannot fill


def split_k(cfg: TileConfig, m: int, n: int, k: int, batch: int = 1, *,
            target: int = MIN_WORKGROUPS, most: int = MAX_SPLITS,
            min_split: int = MIN_SPLIT) -> tuple[int, int]:
    """(slices of K, their length) that bring `cfg`'s dispatch for a batch of M x K @ K x N
    products up to about `target` workgroups, each slice at least `min_split` long and a
    multiple of SPLIT_ALIGN; (1, K) where the tiles alone are enough or K is too short. Each
    slice writes a partial product (`params_bytes(splits=, k_split=)`), and
    `shaders/matmul_split_sum.wgsl` adds them."""
    x, y, z = cfg.dispatch(m, n, batch)
    want = min(most, -(-target // (x * y * z)), k // min_split)
    if want <= 1:
        return 1, k
    length = split_length(k, want)
    return -(-k // length), length


def split_length(k: int, splits: int) -> int:
    """The length of each of `splits` slices of K: a multiple of SPLIT_ALIGN (a slice past
    the end of K computes zeros)."""
    length = -(-k // splits)
    return -(-length // SPLIT_ALIGN) * SPLIT_ALIGN


SPLIT_SUM_PATH = TEMPLATE_PATH.parent / "matmul_split_sum.wgsl"
PLAIN_OUT = "fn pyrite_out(v: f32, i: i32) -> f32 { return v; }"  # no epilogue: v is stored


def split_sum_source(epilogue: str = PLAIN_OUT) -> str:
    """matmul_split_sum.wgsl with `epilogue` (the `pyrite_out` function; fusion's epilogue of
    a split product runs in the sum) in its one placeholder."""
    head, _, tail = SPLIT_SUM_PATH.read_text().rpartition("{{ epilogue }}")
    return head + epilogue + tail


SUM_WORKGROUPS = 512  # workgroups the split sum's lanes aim for (a few per H100 SM)
SUM_MOST_LANES = 64  # lanes per element at most (each then reads at least splits / 64 slices)
SUM_MIN_SLICES = 4  # slices each lane adds at least


def sum_lanes(total: int, splits: int) -> int:
    """matmul_split_sum.wgsl's lanes per element for `total` sums of `splits` partials: 1 (one
    invocation adds an element's slices in order) where total / 256 workgroups already reach
    SUM_WORKGROUPS, else doubled until they do, each lane adding at least SUM_MIN_SLICES
    slices. A weight gradient of 1024 weights in 196 slices had 4 workgroups of invocations
    reading 196 slices each in turn; with 32 lanes it has 128, each invocation reading 6."""
    lanes = 1
    while lanes < SUM_MOST_LANES and lanes * 2 * SUM_MIN_SLICES <= splits and \
            -(-total * lanes // 256) < SUM_WORKGROUPS:
        lanes *= 2
    return lanes


def split_sum_params(total: int, mn: int, splits: int, out_off: int = 0,
                     most: int = 65535, lanes: int = 1) -> tuple[bytes, tuple[int, int, int]]:
    """matmul_split_sum.wgsl's uniform and dispatch for `total` (batch * mn) sums of `splits`
    partials each, `lanes` invocations per sum (`sum_lanes`; 1: each sum in slice order) and
    `most` workgroups per dispatch dimension."""
    groups = -(-total * lanes // 256)
    row = min(groups, most)
    return (struct.pack("<8I", total, mn, splits, out_off, row, lanes, 0, 0),
            (row, -(-groups // row), 1))


def is_aligned(n: int, k: int, offsets: tuple[int, ...] = (), *, m: int = 0,
               layout: str = "nn") -> bool:
    """Whether the vec4 variant applies: storage rows of A (K, or M when A is stored
    transposed), of B (N, or K) and of C (N) are whole vec4s, and every element offset, leading
    dimension or batch stride in `offsets` is a multiple of 4."""
    rows = (k if layout[0] == "n" else m, n if layout[1] == "n" else k, n)
    return all(r % 4 == 0 for r in rows) and all(o % 4 == 0 for o in offsets)


def params_bytes(
    m: int, n: int, k: int, batch: int = 1, stride_a: int = 0, stride_b: int = 0, stride_c: int = 0,
    *, layout: str = "nn", lda: int = 0, ldb: int = 0, off_a: int = 0, off_b: int = 0,
    splits: int = 1, k_split: int = 0,
) -> bytes:
    """The 64-byte uniform `Params` (strides, leading dimensions and offsets in elements; a
    batch stride of 0 broadcasts that operand; `lda`/`ldb` 0: the matrix's own row length,
    K or M for A, N or K for B, by `layout`; `splits` slices of K, each `k_split` long, a
    multiple of every BK, batched on the dispatch's z after the products)."""
    words = operand_words(m, n, k, batch, stride_a, stride_b, stride_c, layout=layout,
                          lda=lda, ldb=ldb, off_a=off_a, off_b=off_b)
    return struct.pack("<16I", *words, splits, k_split or max(k, 1), 0, 0, 0)


def operand_words(
    m: int, n: int, k: int, batch: int = 1, stride_a: int = 0, stride_b: int = 0,
    stride_c: int = 0, *, layout: str = "nn", lda: int = 0, ldb: int = 0, off_a: int = 0,
    off_b: int = 0,
) -> list[int]:
    """The first 11 words of a product's `Params` uniform, shared by the tiled kernel and the
    GEMV (`gemv.py`): sizes, batch strides, leading dimensions and offsets, the defaults filled
    in as `params_bytes` documents."""
    if stride_c == 0 and batch > 1:
        stride_c = m * n
    lda = lda or (k if layout[0] == "n" else m)
    ldb = ldb or (n if layout[1] == "n" else k)
    return [m, n, k, batch, stride_a, stride_b, stride_c, lda, ldb, off_a, off_b]
