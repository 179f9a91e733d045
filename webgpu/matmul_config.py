"""Tile configurations for the tiled fp32 matmul shader, and rendering of its template.

`shaders/matmul_tiled.wgsl` is a template: its opening comment lists the bindings and the
`{{ placeholders }}`. This module knows the tile shapes that were measured (see
benchmarks/README.md), picks one for a problem size, and renders the WGSL for it. It is standalone
(standard library only), so the benchmark and the webgpu backend can both use it.

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

import re
import struct
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from pathlib import Path

TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "shaders" / "matmul_tiled.wgsl"

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


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
        """Workgroup memory used: two buffers of the transposed A tile and the B tile."""
        return 2 * self.bk * (self.bm + self.bn) * 4

    def dispatch(self, m: int, n: int, batch: int = 1) -> tuple[int, int, int]:
        return (-(-n // self.bn), -(-m // self.bm), batch)

    def cache_key(self, aligned: bool, layout: str = "nn"
                  ) -> tuple[str, int, int, int, int, int, int, bool, str, bool, bool]:
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
            "workgroup_size": [self.threads, 1, 1],
            "workgroup_bytes": self.workgroup_bytes,
        }


SUBGROUP_SUFFIX = "_sg"
PINGPONG_SUFFIX = "_pp"

# Measured on an NVIDIA H200 through Vulkan and on lavapipe: see benchmarks/README.md.
CONFIGS: dict[str, TileConfig] = {
    c.name: c
    for c in (
        TileConfig("t128x256x8_8x16_u8", 128, 256, 8, 8, 16, 8),
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
DEFAULT = "t128x128x8_8x8_u8_pp"  # large outputs
MEDIUM = "t64x64x16_4x4_u16_pp"
SMALL = "t32x32x16_4x4_u16"
LADDER = (DEFAULT, MEDIUM, SMALL)  # largest tile first
MIN_WORKGROUPS = 256  # ~2 per multiprocessor of a 132-SM GPU; fewer leaves it idle
# A software adapter in a page (SwiftShader, `software.py`): the largest register blocks, and
# a CPU's few threads are busy with a couple of workgroups; a rung whose tiles would compute
# SOFTWARE_MAX_PADDING times the product or more (a 128-row tile on 64 channels) is skipped
SOFTWARE_LADDER = (DEFAULT, "t64x128x16_4x8", SMALL)
SOFTWARE_MIN_WORKGROUPS = 2
SOFTWARE_MAX_PADDING = 2.0


def choose_config(
    m: int, n: int, k: int, batch: int = 1, max_workgroup_bytes: int = 16384, *,
    software: bool = False,
) -> TileConfig:
    """The configuration for a batch of M x K @ K x N products.

    The largest tile of LADDER that still gives at least MIN_WORKGROUPS workgroups, else the
    smallest; a config whose workgroup memory exceeds the device's limit (WebGPU's default is
    16384 bytes) is skipped. With `software`, SOFTWARE_LADDER and SOFTWARE_MIN_WORKGROUPS, and
    no rung padded to SOFTWARE_MAX_PADDING times the product.
    """
    ladder = SOFTWARE_LADDER if software else LADDER
    least = SOFTWARE_MIN_WORKGROUPS if software else MIN_WORKGROUPS
    fitting = [
        CONFIGS[name] for name in ladder if CONFIGS[name].workgroup_bytes <= max_workgroup_bytes
    ]
    if not fitting:
        raise ValueError(f"no matmul tile fits {max_workgroup_bytes} bytes of workgroup memory")
    for cfg in fitting:
        x, y, z = cfg.dispatch(m, n, batch)
        if x * y * z < least:
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
    MIN_WORKGROUPS workgroups (1024-class products: on the H100 at 1024^3, 128x128 in 4 slices
    ran 10% faster than 64x64 whole, see benchmarks/README.md), else `choose_config`'s. With
    `software`, never split."""
    cfg = choose_config(m, n, k, batch, max_workgroup_bytes, software=software)
    if software:
        return cfg, 1
    big = next(CONFIGS[name] for name in LADDER
               if CONFIGS[name].workgroup_bytes <= max_workgroup_bytes)
    if cfg != big:
        count = split_k(big, m, n, k, batch)[0]
        x, y, z = big.dispatch(m, n, batch)
        if count > 1 and x * y * z * count >= MIN_WORKGROUPS:
            return big, count
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

    `choose_config`'s pick, then the rest of LADDER, then every other config (CONFIGS order,
    largest tile first), each fitting the device's workgroup memory and invocations; with
    `subgroup`, each config's subgroup twin (when it has one) after it. A tile
    taller than M (or wider than N) rounded up to a power of two only computes padding where a
    smaller tile exists, so it is left out. The autotuner (`webgpu/autotune.py`) times them.
    """
    first = choose_config(m, n, k, batch, max_workgroup_bytes)
    rows = max(32, 1 << (m - 1).bit_length())
    cols = max(32, 1 << (n - 1).bit_length())
    rest = [CONFIGS[name] for name in LADDER] + list(CONFIGS.values())
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


def split_sum_params(total: int, mn: int, splits: int, out_off: int = 0,
                     most: int = 65535) -> tuple[bytes, tuple[int, int, int]]:
    """matmul_split_sum.wgsl's uniform and dispatch for `total` (batch * mn) sums of `splits`
    partials each (`most`: workgroups per dispatch dimension)."""
    groups = -(-total // 256)
    row = min(groups, most)
    return (struct.pack("<8I", total, mn, splits, out_off, row, 0, 0, 0),
            (row, -(-groups // row), 1))


def is_aligned(n: int, k: int, offsets: tuple[int, ...] = (), *, m: int = 0,
               layout: str = "nn") -> bool:
    """Whether the vec4 variant applies: storage rows of A (K, or M when A is stored
    transposed), of B (N, or K) and of C (N) are whole vec4s, and every element offset, leading
    dimension or batch stride in `offsets` is a multiple of 4."""
    rows = (k if layout[0] == "n" else m, n if layout[1] == "n" else k, n)
    return all(r % 4 == 0 for r in rows) and all(o % 4 == 0 for o in offsets)


LAYOUTS = ("nn", "nt", "tn", "tt")  # A then B: "n" row-major, "t" stored transposed


def params_bytes(
    m: int, n: int, k: int, batch: int = 1, stride_a: int = 0, stride_b: int = 0, stride_c: int = 0,
    *, layout: str = "nn", lda: int = 0, ldb: int = 0, off_a: int = 0, off_b: int = 0,
    splits: int = 1, k_split: int = 0,
) -> bytes:
    """The 64-byte uniform `Params` (strides, leading dimensions and offsets in elements; a
    batch stride of 0 broadcasts that operand; `lda`/`ldb` 0: the matrix's own row length,
    K or M for A, N or K for B, by `layout`; `splits` slices of K, each `k_split` long, a
    multiple of every BK, batched on the dispatch's z after the products)."""
    if stride_c == 0 and batch > 1:
        stride_c = m * n
    lda = lda or (k if layout[0] == "n" else m)
    ldb = ldb or (n if layout[1] == "n" else k)
    return struct.pack("<16I", m, n, k, batch, stride_a, stride_b, stride_c, lda, ldb,
                       off_a, off_b, splits, k_split or max(k, 1), 0, 0, 0)


def _load_fn(name: str, buf: str, rows: str, cols: str, ld: str, aligned: bool) -> str:
    """`fn name(base, row, col) -> vec4<f32>`: elements col..col+3 of storage row `row` of an
    operand (rows x cols in its storage order, rows `ld` apart), zeros outside it."""
    if aligned:
        return f"""\
fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{
    if (row < {rows} && col < {cols}) {{
        return {buf}[(base + row * {ld} + col) / 4u];
    }}
    return vec4<f32>(0.0);
}}"""
    return f"""\
fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{
    var v = vec4<f32>(0.0);
    if (row < {rows}) {{
        let i = base + row * {ld} + col;
        for (var e = 0u; e < 4u; e++) {{
            if (col + e < {cols}) {{
                v[e] = {buf}[i + e];
            }}
        }}
    }}
    return v;
}}"""


_STORE_ALIGNED = """\
fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if (row < p.m && col < p.n) {
        c[(base + row * p.n + col) / 4u] = v;
    }
}"""

_STORE_SCALAR = """\
fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if (row < p.m) {
        let i = base + row * p.n + col;
        for (var e = 0u; e < 4u; e++) {
            if (col + e < p.n) {
                c[i + e] = v[e];
            }
        }
    }
}"""


def _io(aligned: bool, layout: str) -> str:
    """load_a4 / load_b4 / store_c4 of a plain matmul in `layout`."""
    a_dims = ("p.m", "p.k") if layout[0] == "n" else ("p.k", "p.m")
    b_dims = ("p.k", "p.n") if layout[1] == "n" else ("p.n", "p.k")
    return "\n\n".join((_load_fn("load_a4", "a", *a_dims, "p.lda", aligned),
                         _load_fn("load_b4", "b", *b_dims, "p.ldb", aligned),
                         _STORE_ALIGNED if aligned else _STORE_SCALAR))


def _code_blocks(cfg: TileConfig, layout: str = "nn") -> dict[str, str]:
    ri, cj = cfg.tm // 4, cfg.tn // 4  # vec4 groups of rows / columns per thread
    ind = "\n    "
    acc = [f"acc{r}_{j}" for r in range(cfg.tm) for j in range(cj)]
    acc_decl = ind.join(f"var {name} = vec4<f32>(0.0);" for name in acc)

    step, setup = [], []
    share = cfg.unroll * ri // 4  # subgroup variant: A vec4s each lane of a quad reads per step
    if cfg.subgroup:
        # lane q of the quad reads vec4s q*share .. q*share+share-1 of the row's unroll * ri,
        # numbered f = u * ri + i (k = kk + u, rows group i): offsets from `ai` computed once
        setup = ["let quad = sid & ~3u;", "let q = sid & 3u;"]
        setup += [f"let so{j} = ((q * {share}u + {j}u) / {ri}u) * AS_ROW"
                  f" + ((q * {share}u + {j}u) % {ri}u) * WG_Y;" for j in range(share)]
        step += [f"let sa{j} = As[ai + so{j}];" for j in range(share)]
    for u in range(cfg.unroll):
        ka = f" + {u * cfg.bm // 4}u" if u else ""  # u rows of the A tile further on
        kb = f" + {u * cfg.bn // 4}u" if u else ""
        if cfg.subgroup:
            step += [f"let va{u}_{i} = subgroupShuffle(sa{(u * ri + i) % share},"
                     f" quad + {(u * ri + i) // share}u);" for i in range(ri)]
        else:
            step += [f"let va{u}_{i} = As[ai{ka} + {i}u * WG_Y];" for i in range(ri)]
        step += [f"let vb{u}_{j} = Bs[bi{kb} + {j}u * WG_X];" for j in range(cj)]
        for r in range(cfg.tm):
            comp = "xyzw"[r % 4]
            step += [
                f"acc{r}_{j} = fma(vec4<f32>(va{u}_{r // 4}.{comp}), vb{u}_{j}, acc{r}_{j});"
                for j in range(cj)
            ]
    acc_step = (ind + "        ").join(step)

    store = []
    for r in range(cfg.tm):
        row = f"m0 + ({r // 4}u * WG_Y + ty) * 4u + {r % 4}u"
        store += [
            f"store_c4(base_c, {row}, n0 + ({j}u * WG_X + tx) * 4u, acc{r}_{j});" for j in range(cj)
        ]
    acc_store = ind.join(store)

    kq = cfg.bk // 4  # vec4s along K of a tile row
    mq = cfg.bm // 4  # vec4s per row of a k-major A tile
    nq = cfg.bn // 4  # vec4s per row of a k-major B tile
    decl = [f"var pa{i} = vec4<f32>(0.0);" for i in range(cfg.loads_a)]
    decl += [f"var pb{i} = vec4<f32>(0.0);" for i in range(cfg.loads_b)]
    load, st = [], []
    for i in range(cfg.loads_a):
        j = f"(t + {i}u * NT)"
        if layout[0] == "n":  # rows of A along M, vec4s along K: transposed into As
            load.append(f"pa{i} = load_a4(base_a, m0 + {j} / {kq}u, k0 + ({j} % {kq}u) * 4u);")
            st.append(_scatter("As", "AS_BUF", "AS_ROW", f"pa{i}", f"{j} / {kq}u",
                               f"({j} % {kq}u) * 4u"))
        else:  # A stored transposed: rows along K, vec4s along M, as As holds them
            load.append(f"pa{i} = load_a4(base_a, k0 + {j} / {mq}u, m0 + ({j} % {mq}u) * 4u);")
            st.append(f"As[buf * AS_BUF + ({j} / {mq}u) * AS_ROW + {j} % {mq}u] = pa{i};")
    for i in range(cfg.loads_b):
        j = f"(t + {i}u * NT)"
        if layout[1] == "n":  # rows of B along K, vec4s along N, as Bs holds them
            load.append(f"pb{i} = load_b4(base_b, k0 + {j} / {nq}u, n0 + ({j} % {nq}u) * 4u);")
            st.append(f"Bs[buf * BS_BUF + ({j} / {nq}u) * BS_ROW + {j} % {nq}u] = pb{i};")
        else:  # B stored transposed: rows along N, vec4s along K: transposed into Bs
            load.append(f"pb{i} = load_b4(base_b, n0 + {j} / {kq}u, k0 + ({j} % {kq}u) * 4u);")
            st.append(_scatter("Bs", "BS_BUF", "BS_ROW", f"pb{i}", f"{j} / {kq}u",
                               f"({j} % {kq}u) * 4u"))
    loads, stores = ind.join(load), ind.join(st)
    return {
        "K_LOOP": _k_loop(cfg, acc_step, loads, stores),
        "SG_BUILTIN": (",\n        @builtin(subgroup_invocation_id) sid: u32"
                       if cfg.subgroup else ""),
        "SG_SETUP": ind.join(setup),
        "ACC_DECL": acc_decl,
        "ACC_STORE": acc_store,
        "PREFETCH_DECL": ind.join(decl),
        "PREFETCH_LOAD": ind.join(load),
        "PREFETCH_STORE": ind.join(st),
    }


def _k_step(cfg: TileConfig, acc_step: str, loads: str, stores: str, read: str,
            write: str) -> str:
    """One K step: prefetch the next step's tiles, multiply the tiles of buffer `read`, store
    the prefetched tiles into buffer `write` (WGSL expressions), barrier."""
    ind = "\n        "
    return ind.join((
        "let more = s + 1u < steps;",
        "if (more) {",
        "    k0 = k_begin + (s + 1u) * BK;",
        "    " + loads.replace("\n    ", "\n            "),
        "}",
        f"let ab = {read} * AS_BUF + ty;",
        f"let bb = {read} * BS_BUF + tx;",
        f"for (var kk = 0u; kk < BK; kk += {cfg.unroll}u) {{",
        "    let ai = ab + kk * AS_ROW;",
        "    let bi = bb + kk * BS_ROW;",
        "    " + acc_step,
        "}",
        "if (more) {",
        f"    {write};",
        "    " + stores.replace("\n    ", "\n            "),
        "}",
        "workgroupBarrier();",
    ))


def _k_loop(cfg: TileConfig, acc_step: str, loads: str, stores: str) -> str:
    """The loop over K steps (see the template's comment)."""
    if not cfg.pingpong:
        body = _k_step(cfg, acc_step, loads, stores, "buf", "buf = 1u - buf")
        return f"for (var s = 0u; s < steps; s++) {{\n        {body}\n    }}"
    halves = [_k_step(cfg, acc_step, loads, stores, f"{r}u", f"buf = {1 - r}u")
              for r in (0, 1)]
    return ("var s = 0u;\n    loop {\n"
            + "".join(f"        if (s >= steps) {{ break; }}\n        {{\n        {h}\n"
                      "        }\n        s += 1u;\n" for h in halves)
            + "    }")


def _scatter(tile: str, buf: str, row: str, value: str, r: str, kk: str) -> str:
    """Store the vec4 `value` (4 consecutive k's of row or column `r` of an operand) into the
    k-major workgroup tile: element e goes to k-row kk + e, lane r % 4 of vec4 r / 4."""
    return (f"{{ let r = {r}; let o = buf * {buf} + ({kk}) * {row} + r / 4u; let e = r % 4u; "
            f"{tile}[o][e] = {value}.x; {tile}[o + {row}][e] = {value}.y; "
            f"{tile}[o + 2u * {row}][e] = {value}.z; {tile}[o + 3u * {row}][e] = {value}.w; }}")


def split_header(template: str) -> tuple[str, str]:
    """(opening `//` comment block, rest of the template)."""
    lines = template.splitlines(keepends=True)
    i = 0
    while i < len(lines) and lines[i].startswith("//"):
        i += 1
    return "".join(lines[:i]), "".join(lines[i:])


def render_template(template: str, values: dict[str, object], banner: str = "") -> str:
    """Substitute `{{ name }}` placeholders in the body of a template.

    The opening comment documents the placeholders and is not substituted; it must name exactly
    the placeholders that the body uses. A placeholder missing from `values`, or a value the body
    does not use, is an error. The rendered code opens with `banner` (a comment) instead.

    The same rules as `codegen.render`, kept apart on purpose: this module stays standard
    library only and loadable by path (benchmarks/webgpu_matmul.py), while codegen imports
    pyrite's core. matmul_tiled.wgsl has no `#include` lines, which only codegen pastes.
    """
    header, body = split_header(template)
    used = set(_PLACEHOLDER.findall(body))
    documented = set(_PLACEHOLDER.findall(header))
    missing = used - values.keys()
    unused = values.keys() - used
    if missing or unused or documented != used:
        raise KeyError(
            f"matmul template placeholders: missing {sorted(missing)}, unused {sorted(unused)},"
            f" undocumented {sorted(used - documented)}, documented but absent"
            f" {sorted(documented - used)}"
        )
    return banner + _PLACEHOLDER.sub(lambda mt: str(values[mt.group(1)]), body)


@cache
def _template() -> str:
    return TEMPLATE_PATH.read_text()


_STORE_EPILOGUE_ALIGNED = """\
fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if (row < p.m && col < p.n) {
        let i = base + row * p.n + col;
        var w = v;
        for (var e = 0u; e < 4u; e++) {
            w[e] = pyrite_out(v[e], i32(i + e));
        }
        c[(base + row * p.n + col) / 4u] = w;
    }
}"""

_STORE_EPILOGUE_SCALAR = """\
fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if (row < p.m) {
        let i = base + row * p.n + col;
        for (var e = 0u; e < 4u; e++) {
            if (col + e < p.n) {
                c[i + e] = pyrite_out(v[e], i32(i + e));
            }
        }
    }
}"""


def _io_fns(aligned: bool, epilogue: str, layout: str = "nn") -> str:
    """The load/store functions; with an `epilogue` (module-scope WGSL defining
    `pyrite_out(v, i) -> f32`, i the element's index in c), every stored value goes through
    it first."""
    io = _io(aligned, layout)
    if not epilogue:
        return io
    store = _STORE_EPILOGUE_ALIGNED if aligned else _STORE_EPILOGUE_SCALAR
    return io.split("fn store_c4")[0] + store + "\n\n" + epilogue


@lru_cache(maxsize=64)
def render(cfg: TileConfig, aligned: bool, epilogue: str = "", layout: str = "nn",
           io: str = "") -> str:
    """WGSL for `cfg`; `aligned` selects vec4 storage access (see `is_aligned`); `epilogue`
    is module-scope WGSL defining `pyrite_out(v: f32, i: i32) -> f32` (i: the element's index
    in c, dense), applied to every element before it is stored (fusion's epilogue), or empty;
    `layout` (one of LAYOUTS) how A and B are stored. `io`, when given, replaces the plain
    matmul's `load_a4`, `load_b4` and `store_c4` (and `epilogue`): module-scope WGSL that
    gathers the operands and scatters C some other way (`conv_gemm.py`'s implicit GEMM)."""
    if layout not in LAYOUTS:
        raise ValueError(f"matmul layout {layout!r}: expected one of {LAYOUTS}")
    values: dict[str, object] = {
        "BM": cfg.bm,
        "BN": cfg.bn,
        "BK": cfg.bk,
        "TM": cfg.tm,
        "TN": cfg.tn,
        "WG_X": cfg.wg_x,
        "WG_Y": cfg.wg_y,
        "THREADS": cfg.threads,
        "LOADS_A": cfg.loads_a,
        "LOADS_B": cfg.loads_b,
        "ELEM": "vec4<f32>" if aligned else "f32",
        "IO_FNS": io or _io_fns(aligned, epilogue, layout),
    }
    values.update(_code_blocks(cfg, layout))
    banner = (
        f"// matmul_tiled.wgsl rendered for {cfg.name}"
        f" ({'vec4' if aligned else 'scalar'} access, layout {layout}): C[b] = A[b] @ B[b],"
        f" fp32.\n"
        f"// Bindings: 0 a, 1 b (read), 2 c (read_write), 3 Params (uniform).\n"
    )
    return render_template(_template(), values, banner)
