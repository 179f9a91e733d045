"""Rendering of the tiled fp32 matmul template (`shaders/matmul_tiled.wgsl`) for one tile.

`matmul_config.py` owns the tile shapes and the choice among them; this module turns one
`TileConfig` into WGSL: the load and store functions of each operand layout (or a caller's own,
such as `conv_gemm.py`'s implicit GEMM), the accumulator registers, the register staging of the
next K step and the walk over K. Standard library only, like `matmul_config.py`, so the
benchmark can load both by path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from . import matmul_options

if TYPE_CHECKING:
    from .matmul_config import TileConfig

TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "shaders" / "matmul_tiled.wgsl"
LAYOUTS = ("nn", "nt", "tn", "tt")  # A then B: "n" row-major, "t" stored transposed

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _load_fn(name: str, buf: str, rows: str, cols: str, ld: str, aligned: bool,
             guarded: bool = True) -> str:
    """`fn name(base, row, col) -> vec4<f32>`: elements col..col+3 of storage row `row` of an
    operand (rows x cols in its storage order, rows `ld` apart), zeros outside it; without
    `guarded` (an interior tile, `matmul_options.py`'s `_in`) every load is inside it and no
    bound is compared."""
    if aligned:
        read = f"return {buf}[(base + row * {ld} + col) / 4u];"
        if not guarded:
            return f"fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{\n    {read}\n}}"
        return f"""\
fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{
    if (row < {rows} && col < {cols}) {{
        {read}
    }}
    return vec4<f32>(0.0);
}}"""
    if not guarded:
        return f"""\
fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{
    let i = base + row * {ld} + col;
    return vec4<f32>({buf}[i], {buf}[i + 1u], {buf}[i + 2u], {buf}[i + 3u]);
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


def _clamped_load_fn(name: str, buf: str, rows: str, cols: str, ld: str, aligned: bool,
                     k_rows: bool) -> str:
    """`_load_fn` for a product whose K is a multiple of the K step (`matmul_options.py`'s
    `_cl`): the index along K is always inside the operand and is not compared; the one along
    M or N (the storage column where `k_rows`, else the row) is clamped to the last row or
    vec4 instead of compared. A clamped load repeats a value of the last row or column, which
    only reaches rows or columns of C past its edge, and those are not stored."""
    if aligned:  # cols is a multiple of 4 here
        row, col = ("row", f"min(col, {cols} - 4u)") if k_rows else (f"min(row, {rows} - 1u)",
                                                                     "col")
        return (f"fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{\n"
                f"    return {buf}[(base + {row} * {ld} + {col}) / 4u];\n}}")
    if k_rows:
        reads = ", ".join(f"{buf}[i + min(col + {e}u, {cols} - 1u)]" for e in range(4))
        return (f"fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{\n"
                f"    let i = base + row * {ld};\n    return vec4<f32>({reads});\n}}")
    return (f"fn {name}(base: u32, row: u32, col: u32) -> vec4<f32> {{\n"
            f"    let i = base + min(row, {rows} - 1u) * {ld} + col;\n"
            f"    return vec4<f32>({buf}[i], {buf}[i + 1u], {buf}[i + 2u], {buf}[i + 3u]);\n}}")


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

# interior tiles (`_in`): every element of C the workgroup writes is inside C
_STORE_ALIGNED_INTERIOR = """\
fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    c[(base + row * p.n + col) / 4u] = v;
}"""

_STORE_SCALAR_INTERIOR = """\
fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    let i = base + row * p.n + col;
    c[i] = v.x;
    c[i + 1u] = v.y;
    c[i + 2u] = v.z;
    c[i + 3u] = v.w;
}"""


def _io(aligned: bool, layout: str, guarded: bool = True, clamped: bool = False) -> str:
    """load_a4 / load_b4 / store_c4 of a plain matmul in `layout` (without bound compares
    where not `guarded`)."""
    a_dims = ("p.m", "p.k") if layout[0] == "n" else ("p.k", "p.m")
    b_dims = ("p.k", "p.n") if layout[1] == "n" else ("p.n", "p.k")
    stores = ((_STORE_ALIGNED, _STORE_SCALAR) if guarded
              else (_STORE_ALIGNED_INTERIOR, _STORE_SCALAR_INTERIOR))
    fns = [_load_fn("load_a4", "a", *a_dims, "p.lda", aligned, guarded),
           _load_fn("load_b4", "b", *b_dims, "p.ldb", aligned, guarded)]
    if clamped:  # K whole steps, M and N ragged (`_cl`): loads clamped, stores guarded
        fns = [_clamped_load_fn("load_a4", "a", *a_dims, "p.lda", aligned, layout[0] == "t"),
               _clamped_load_fn("load_b4", "b", *b_dims, "p.ldb", aligned, layout[1] == "n")]
    if not guarded:  # by index (`_ha`): a vec4's index, or its first element's
        fns += [f"const E: u32 = {4 if aligned else 1}u;"]
        fns += [f"fn load_{x}4i(i: u32) -> vec4<f32> {{\n    return {x}[i];\n}}" if aligned else
                f"fn load_{x}4i(i: u32) -> vec4<f32> {{\n"
                f"    return vec4<f32>({x}[i], {x}[i + 1u], {x}[i + 2u], {x}[i + 3u]);\n}}"
                for x in "ab"]
    # the store last: `_io_fns` replaces it with an epilogue's
    return "\n\n".join([*fns, stores[0] if aligned else stores[1]])


def _code_blocks(cfg: TileConfig, layout: str = "nn") -> dict[str, str]:
    ri, cj = cfg.tm // 4, cfg.tn // 4  # vec4 groups of rows / columns per thread
    ind = "\n    "
    acc = [f"acc{r}_{j}" for r in range(cfg.tm) for j in range(cj)]
    acc_decl = ind.join(f"var {name} = vec4<f32>(0.0);" for name in acc)

    setup: list[str] = []
    share = cfg.unroll * ri // 4  # subgroup variant: A vec4s each lane of a quad reads per step
    if cfg.subgroup:
        # lane q of the quad reads vec4s q*share .. q*share+share-1 of the row's unroll * ri,
        # numbered f = u * ri + i (k = kk + u, rows group i): offsets from `ai` computed once
        setup = ["let quad = sid & ~3u;", "let q = sid & 3u;"]
        setup += [f"let so{j} = ((q * {share}u + {j}u) / {ri}u) * AS_ROW"
                  f" + ((q * {share}u + {j}u) % {ri}u) * WG_Y;" for j in range(share)]

    def krow(u: int) -> str:
        """const_rows: the k-row of unrolled step u, a constant when the step is written out."""
        return f"{u}u" if cfg.unroll == cfg.bk else f"kk + {u}u" if u else "kk"

    def products(read: str) -> str:
        """The outer-product updates of one inner-loop iteration, reading buffer `read`."""
        step = [f"let sa{j} = As[ai + so{j}];" for j in range(share)] if cfg.subgroup else []
        for u in range(cfg.unroll):
            ka = f" + {u * cfg.bm // 4}u" if u else ""  # u rows of the A tile further on
            kb = f" + {u * cfg.bn // 4}u" if u else ""
            if cfg.subgroup:
                step += [f"let va{u}_{i} = subgroupShuffle(sa{(u * ri + i) % share},"
                         f" quad + {(u * ri + i) // share}u);" for i in range(ri)]
            elif cfg.const_rows:  # k-row kk + u of the step; the thread's column at run time
                step += [f"let va{u}_{i} = As[{read}][{krow(u)}][{i}u][ty];" for i in range(ri)]
            else:
                step += [f"let va{u}_{i} = As[ai{ka} + {i}u * WG_Y];" for i in range(ri)]
            if cfg.const_rows:
                step += [f"let vb{u}_{j} = Bs[{read}][{krow(u)}][{j}u][tx];" for j in range(cj)]
            else:
                step += [f"let vb{u}_{j} = Bs[bi{kb} + {j}u * WG_X];" for j in range(cj)]
            for r in range(cfg.tm):
                comp = "xyzw"[r % 4]
                step += [
                    f"acc{r}_{j} = fma(vec4<f32>(va{u}_{r // 4}.{comp}), vb{u}_{j}, acc{r}_{j});"
                    for j in range(cj)
                ]
        return (ind + "        ").join(step)

    store = []
    for r in range(cfg.tm):
        row = f"m0 + ({r // 4}u * WG_Y + ty) * 4u + {r % 4}u"
        store += [
            f"store_c4(base_c, {row}, n0 + ({j}u * WG_X + tx) * 4u, acc{r}_{j});" for j in range(cj)
        ]
    acc_store = ind.join(store)

    def staging(pa: str, pb: str) -> tuple[list[str], list[str], list[str]]:
        """(declarations, loads, stores) of one set of staging registers `pa{i}`, `pb{i}`."""
        decl = [f"var {pa}{i} = vec4<f32>(0.0);" for i in range(cfg.loads_a)]
        decl += [f"var {pb}{i} = vec4<f32>(0.0);" for i in range(cfg.loads_b)]
        load, st = _staging(cfg, layout, pa, pb)
        return decl, load, st

    decl, load, st = staging("pa", "pb")
    if cfg.hoist:
        decl = _hoisted_indices(cfg, layout) + decl
    if cfg.hoist_stores:
        decl = _store_indices(cfg, layout) + decl
    sets = [(ind.join(load), ind.join(st))]
    prologue = st
    if cfg.prefetch == 2:  # a second set, loaded a step earlier (matmul_options.py)
        decl2, load2, st2 = staging("qa", "qb")
        decl += decl2
        sets.append((ind.join(load2), ind.join(st2)))
        prologue = st + ["if (steps > 1u) {", "    k0 = k_begin + BK;",
                         *("    " + line for line in load2), "}"]
    return {
        "TILES": _tiles(cfg),
        "K_LOOP": _k_loop(cfg, products, sets),
        "SG_BUILTIN": (",\n        @builtin(subgroup_invocation_id) sid: u32"
                       if cfg.subgroup else ""),
        "THREAD_MAP": matmul_options.thread_map(cfg),
        "SG_SETUP": ind.join(setup),
        "ACC_DECL": acc_decl,
        "ACC_STORE": acc_store,
        "PREFETCH_DECL": ind.join(decl),
        "PREFETCH_LOAD": ind.join(load),
        "PREFETCH_STORE": ind.join(prologue),
    }


def _staging(cfg: TileConfig, layout: str, pa: str, pb: str) -> tuple[list[str], list[str]]:
    """The global loads of one K step's tiles into registers `pa{i}` / `pb{i}` and their stores
    into workgroup buffer `buf`. With `cfg.hoist`, each load reads at its index of the first
    K step (`_hoisted_indices`) plus the step's offset `da` / `db`."""
    kq = cfg.bk // 4  # vec4s along K of a tile row
    mq = cfg.bm // 4  # vec4s per row of a k-major A tile
    nq = cfg.bn // 4  # vec4s per row of a k-major B tile
    load, st = [], []
    if cfg.hoist:
        load = ["let dk = k0 - k_begin;", "let da = " + _step_offset(layout[0] == "t", "p.lda"),
                "let db = " + _step_offset(layout[1] == "n", "p.ldb")]
    for i in range(cfg.loads_a):
        j = f"(t + {i}u * NT)"
        if layout[0] == "n":  # rows of A along M, vec4s along K: transposed into As
            row, col = f"{j} / {kq}u", f"({j} % {kq}u) * 4u"
            load.append(f"{pa}{i} = load_a4(base_a, m0 + {row}, k0 + {col});")
            st.append(_scatter(cfg, "As", f"{pa}{i}", row, col, f"sa{i}"))
        else:  # A stored transposed: rows along K, vec4s along M, as As holds them
            load.append(f"{pa}{i} = load_a4(base_a, k0 + {j} / {mq}u, m0 + ({j} % {mq}u) * 4u);")
            st.append(f"{_at(cfg, 'As', f'{j} / {mq}u', f'{j} % {mq}u', f'sa{i}')} = {pa}{i};")
        if cfg.hoist:
            load[-1] = f"{pa}{i} = load_a4i(ia{i} + da);"
    for i in range(cfg.loads_b):
        j = f"(t + {i}u * NT)"
        if layout[1] == "n":  # rows of B along K, vec4s along N, as Bs holds them
            load.append(f"{pb}{i} = load_b4(base_b, k0 + {j} / {nq}u, n0 + ({j} % {nq}u) * 4u);")
            st.append(f"{_at(cfg, 'Bs', f'{j} / {nq}u', f'{j} % {nq}u', f'sb{i}')} = {pb}{i};")
        else:  # B stored transposed: rows along N, vec4s along K: transposed into Bs
            row, col = f"{j} / {kq}u", f"({j} % {kq}u) * 4u"
            load.append(f"{pb}{i} = load_b4(base_b, n0 + {row}, k0 + {col});")
            st.append(_scatter(cfg, "Bs", f"{pb}{i}", row, col, f"sb{i}"))
        if cfg.hoist:
            load[-1] = f"{pb}{i} = load_b4i(ib{i} + db);"
    return load, st


def _store_indices(cfg: TileConfig, layout: str) -> list[str]:
    """`cfg.hoist_stores` (constant-row tiles): each staging register's workgroup-memory
    indices, computed once per thread: k-row `s?{i}k`, vec4 group `s?{i}g`, thread row or
    column `s?{i}t`, and for a transposing store the lane `s?{i}e`."""
    kq, mq, nq = cfg.bk // 4, cfg.bm // 4, cfg.bn // 4
    out = []
    for tile, count, rowq, transposing, grid in (
            ("sa", cfg.loads_a, mq, layout[0] == "n", "WG_Y"),
            ("sb", cfg.loads_b, nq, layout[1] == "t", "WG_X")):
        for i in range(count):
            j, h = f"(t + {i}u * NT)", f"{tile}{i}"
            if transposing:  # row j / kq of the operand, k's (j % kq) * 4 .. + 3
                out += [f"let {h}k = ({j} % {kq}u) * 4u;", f"let {h}e = ({j} / {kq}u) % 4u;",
                        f"let {h}g = ({j} / {kq}u / 4u) / {grid};",
                        f"let {h}t = ({j} / {kq}u / 4u) % {grid};"]
            else:  # k-row j / rowq, vec4 j % rowq
                out += [f"let {h}k = {j} / {rowq}u;", f"let {h}g = ({j} % {rowq}u) / {grid};",
                        f"let {h}t = ({j} % {rowq}u) % {grid};"]
    return out


def _step_offset(strided: bool, ld: str) -> str:
    """WGSL: how far (in storage elements, or vec4s where `ELEM` is one) the loads of K step
    `k0` are from those of `k_begin` (`dk` terms of K along storage rows when `strided`, along a
    row otherwise)."""
    return f"dk * {ld} / E;" if strided else "dk / E;"


def _hoisted_indices(cfg: TileConfig, layout: str) -> list[str]:
    """`cfg.hoist`: each global load's index at the first K step, computed once per thread:
    `ia{i}` / `ib{i}` in storage elements (or vec4s: `E` is the element's width)."""
    kq, mq, nq = cfg.bk // 4, cfg.bm // 4, cfg.bn // 4
    out = []
    for i in range(cfg.loads_a):
        j = f"(t + {i}u * NT)"
        row, col = ((f"m0 + {j} / {kq}u", f"k_begin + ({j} % {kq}u) * 4u") if layout[0] == "n"
                    else (f"k_begin + {j} / {mq}u", f"m0 + ({j} % {mq}u) * 4u"))
        out.append(f"let ia{i} = (base_a + ({row}) * p.lda + {col}) / E;")
    for i in range(cfg.loads_b):
        j = f"(t + {i}u * NT)"
        row, col = ((f"k_begin + {j} / {nq}u", f"n0 + ({j} % {nq}u) * 4u") if layout[1] == "n"
                    else (f"n0 + {j} / {kq}u", f"k_begin + ({j} % {kq}u) * 4u"))
        out.append(f"let ib{i} = (base_b + ({row}) * p.ldb + {col}) / E;")
    return out


def _tiles(cfg: TileConfig) -> str:
    """The workgroup tiles, two buffers (or `cfg.buffers`) each of the k-major A and B tiles.
    Flat arrays, or (`cfg.const_rows`) arrays [buffer][k-row][vec4 group of the thread][thread's
    row or column of the grid], the same memory order: naga's Vulkan backend clamps every
    run-time index into workgroup memory, so with a flat index each unrolled read costs its own
    add and clamp, while here only `ty` / `tx` is a run-time index and every read is one base
    plus a constant."""
    nb = cfg.buffers  # two, or one (matmul_options.py's `_b1`)
    if not cfg.const_rows:
        return (f"var<workgroup> As: array<vec4<f32>, {nb}u * AS_BUF>;\n"
                f"var<workgroup> Bs: array<vec4<f32>, {nb}u * BS_BUF>;")
    a = f"array<array<array<vec4<f32>, WG_Y>, {cfg.tm // 4}u>, BK>"
    b = f"array<array<array<vec4<f32>, WG_X>, {cfg.tn // 4}u>, BK>"
    return (f"var<workgroup> As: array<{a}, {nb}u>;\n"
            f"var<workgroup> Bs: array<{b}, {nb}u>;")


def _at(cfg: TileConfig, tile: str, krow: str, col: str, hoisted: str = "") -> str:
    """Vec4 `col` of k-row `krow` of `tile` ("As" or "Bs") in buffer `buf` (WGSL expressions).
    With `cfg.hoist_stores` and a name `hoisted`, the k-row, group and thread indices are the
    per-thread values `{hoisted}k`, `{hoisted}g`, `{hoisted}t` (`_store_indices`)."""
    if cfg.hoist_stores and hoisted:
        return f"{tile}[buf][{hoisted}k][{hoisted}g][{hoisted}t]"
    if not cfg.const_rows:
        return f"{tile}[buf * {tile.upper()}_BUF + ({krow}) * {tile.upper()}_ROW + {col}]"
    grid = "WG_Y" if tile == "As" else "WG_X"
    return f"{tile}[buf][{krow}][({col}) / {grid}][({col}) % {grid}]"


def _k_step(cfg: TileConfig, products: Callable[[str], str], loads: str, stores: str,
            read: str, write: str, ahead: int = 1) -> str:
    """One K step: load step s + `ahead`'s tiles into registers (`loads`), multiply the tiles
    of buffer `read`, store the registers holding step s + 1 (`stores`) into buffer `write`
    (WGSL expressions), barrier. With one buffer (`cfg.buffers`), a barrier before the stores
    too: every thread has finished reading the tile they overwrite."""
    ind = "\n        "
    if cfg.const_rows and cfg.unroll == cfg.bk:  # the whole step written out: constant k-rows
        inner: list[str] = [products(read).replace(ind + "    ", ind)]
    elif cfg.const_rows:  # the k-row is the loop's; buffer, vec4 group and offsets constant
        inner = [f"for (var kk = 0u; kk < BK; kk += {cfg.unroll}u) {{",
                 "    " + products(read),
                 "}"]
    else:
        inner = [f"let ab = {read} * AS_BUF + ty;",
                 f"let bb = {read} * BS_BUF + tx;",
                 f"for (var kk = 0u; kk < BK; kk += {cfg.unroll}u) {{",
                 "    let ai = ab + kk * AS_ROW;",
                 "    let bi = bb + kk * BS_ROW;",
                 "    " + products(read),
                 "}"]
    fetch = "more" if ahead == 1 else f"s + {ahead}u < steps"
    return ind.join((
        "let more = s + 1u < steps;",
        f"if ({fetch}) {{",
        f"    k0 = k_begin + (s + {ahead}u) * BK;",
        "    " + loads.replace("\n    ", "\n            "),
        "}",
        *inner,
        *(["workgroupBarrier();"] if cfg.buffers == 1 else []),
        "if (more) {",
        f"    {write};",
        "    " + stores.replace("\n    ", "\n            "),
        "}",
        "workgroupBarrier();",
    ))


def _k_loop(cfg: TileConfig, products: Callable[[str], str], sets: list[tuple[str, str]]
            ) -> str:
    """The loop over K steps (see the template's comment); `sets`: (loads, stores) of each set
    of staging registers, two where `cfg.prefetch` is 2 (step s + 2 loaded into the set that
    held step s, while the other set's step s + 1 is stored)."""
    (loads, stores), = sets[:1]
    if cfg.buffers == 1:  # one buffer, always buffer 0: a constant index in either form
        body = _k_step(cfg, products, loads, stores, "0u", "buf = 0u")
        return f"for (var s = 0u; s < steps; s++) {{\n        {body}\n    }}"
    if not cfg.pingpong:
        body = _k_step(cfg, products, loads, stores, "buf", "buf = 1u - buf")
        return f"for (var s = 0u; s < steps; s++) {{\n        {body}\n    }}"
    if cfg.prefetch == 2:
        (p_load, p_store), (q_load, q_store) = sets
        halves = [_k_step(cfg, products, p_load, q_store, "0u", "buf = 1u", 2),
                  _k_step(cfg, products, q_load, p_store, "1u", "buf = 0u", 2)]
    else:
        halves = [_k_step(cfg, products, loads, stores, f"{r}u", f"buf = {1 - r}u")
                  for r in (0, 1)]
    return ("var s = 0u;\n    loop {\n"
            + "".join(f"        if (s >= steps) {{ break; }}\n        {{\n        {h}\n"
                      "        }\n        s += 1u;\n" for h in halves)
            + "    }")


def _scatter(cfg: TileConfig, tile: str, value: str, r: str, kk: str, hoisted: str = "") -> str:
    """Store the vec4 `value` (4 consecutive k's of row or column `r` of an operand) into the
    k-major workgroup tile: element e goes to k-row kk + e, lane r % 4 of vec4 r / 4 (indices
    computed once per thread with `cfg.hoist_stores`: `_store_indices`)."""
    if cfg.hoist_stores and hoisted:
        h = hoisted
        return " ".join(f"{tile}[buf][{h}k + {e}u][{h}g][{h}t][{h}e] = {value}.{c};"
                        for e, c in enumerate("xyzw"))
    kr = f"{{ let r = {r}; let kr = {kk}; let e = r % 4u; "
    return kr + " ".join(f"{_at(cfg, tile, f'kr + {e}u', 'r / 4u')}[e] = {value}.{c};"
                         for e, c in enumerate("xyzw")) + " }"


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


_STORE_EPILOGUE_INTERIOR = """\
fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    let i = base + row * p.n + col;
    var w = v;
    for (var e = 0u; e < 4u; e++) {
        w[e] = pyrite_out(v[e], i32(i + e));
    }
    STORE_W
}"""


def _io_fns(aligned: bool, epilogue: str, layout: str = "nn", guarded: bool = True,
            clamped: bool = False) -> str:
    """The load/store functions; with an `epilogue` (module-scope WGSL defining
    `pyrite_out(v, i) -> f32`, i the element's index in c), every stored value goes through
    it first. Without `guarded`, no bound is compared (an interior tile)."""
    io = _io(aligned, layout, guarded, clamped)
    if not epilogue:
        return io
    if guarded:
        store = _STORE_EPILOGUE_ALIGNED if aligned else _STORE_EPILOGUE_SCALAR
    else:
        store = _STORE_EPILOGUE_INTERIOR.replace(
            "STORE_W", "c[i / 4u] = w;" if aligned
            else "c[i] = w.x;\n    c[i + 1u] = w.y;\n    c[i + 2u] = w.z;\n    c[i + 3u] = w.w;")
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
    if cfg.hoist and not cfg.interior:
        raise ValueError(f"{cfg.name}: hoisted load indices (_ha) need an interior tile (_in)")
    if io and (cfg.interior or cfg.clamped):
        raise ValueError(f"{cfg.name}: an interior or clamped tile (_in, _cl) renders the plain"
                         " matmul's loads and stores; a caller's own `io` keeps its guards")
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
        "IO_FNS": io or _io_fns(aligned, epilogue, layout, not cfg.interior, cfg.clamped),
    }
    values.update(_code_blocks(cfg, layout))
    banner = (
        f"// matmul_tiled.wgsl rendered for {cfg.name}"
        f" ({'vec4' if aligned else 'scalar'} access, layout {layout}): C[b] = A[b] @ B[b],"
        f" fp32.\n"
        f"// Bindings: 0 a, 1 b (read), 2 c (read_write), 3 Params (uniform).\n"
    )
    return render_template(_template(), values, banner)
