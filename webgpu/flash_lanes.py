"""How the row kernels of flash attention (`shaders/attention_forward.wgsl`,
`attention_backward.wgsl`) spread rows over threads: RPT rows a thread and LANES threads a row.

A thread that owns several rows uses each vec4 it loads from a staged tile for all of them
(more multiply-adds per workgroup-memory load), at the price of registers for each row. LANES
threads sharing a row each hold every LANES-th vec4 of it (fewer registers a thread, so more
threads resident and no spills) and add their partial dot products with subgroupShuffleXor:
that needs the device's `subgroup` feature and lanes that are consecutive invocations, which
WGSL does not promise, so `flash_attention.lanes_usable` checks it once per device. Without
subgroups (the page, which does not request the feature) LANES is 1 and `lane_sum` is the
identity. This module owns the shapes and the `lane_sum` source; the launches are in
`flash_attention.py`.
"""

from __future__ import annotations

#: per row kernel, (rows a thread, threads a row) with subgroups, for heads of LANE_HEADS; one
#: row a thread and one thread a row elsewhere. On the H100 at (8, 8, 1024, 64), of 6 shapes x
#: 32 or 64 keys a tile x 128 or 256 rows a workgroup, ms against (1, 1) with 32 and 128
#: (benchmarks/results/attention_rows_prefetch_h100_s5.json, the `_p0` runs): forward (2, 2)
#: 0.865 / 0.93; dq (2, 2) 1.135 / 1.499 ((4, 4) with 256 rows: 1.097); dk, dv (1, 2) 1.533 /
#: 2.203 (two rows a thread: 1.707)
SHAPES: dict[str, tuple[int, int]] = {"forward": (2, 2), "query_grads": (2, 2),
                                      "key_grads": (1, 2)}
#: the head widths (max(d_k, d_v), inclusive) SHAPES applies to (where the register-blocked
#: kernels of flash_tiles.py do not run). On the H100 at (8, 8, 1024, d), forward / dq / dk, dv
#: ms with SHAPES against one thread a row (benchmarks/results/attention_h100_s5.json, `d_N`
#: `rows_lanes` / `rows`): d = 16 0.34 / 0.42 / 0.54 against 0.29 / 0.36 / 0.49; d = 32 0.47 /
#: 0.62 / 0.83 against 0.50 / 0.65 / 0.84; d = 64 0.88 / 1.09 / 1.58 against 0.98 / 1.47 / 2.30;
#: d = 128 3.19 / 4.52 / 4.43 against 3.98 / 5.92 / 9.13. The low bound lies halfway between
#: 16 and 32; wider heads than 128 are not measured
LANE_HEADS = (25, 128)
#: the shapes a benchmark forces per kernel (entry -> (rpt, lanes)), whatever the head
FORCED: dict[str, tuple[int, int]] = {}
#: threads a row that `lane_sum` can add (a subgroup holds at least 4 invocations)
LANES = (1, 2, 4)


def lane_sum(lanes: int) -> str:
    """The WGSL function `lane_sum(x: f32) -> f32`: x summed over the `lanes` consecutive
    subgroup lanes that share a row (butterfly of subgroupShuffleXor); x itself for one lane,
    with no subgroup builtin in the source."""
    assert lanes in LANES, lanes
    steps = "".join(f"  s += subgroupShuffleXor(s, {1 << i}u);\n"
                    for i in range(lanes.bit_length() - 1))
    return f"fn lane_sum(x: f32) -> f32 {{\n  var s = x;\n{steps}  return s;\n}}"


def shape(entry: str, dk: int, dv: int, subgroups: bool) -> tuple[int, int]:
    """(rows a thread, threads a row) of the row kernel `entry` for these head dims."""
    if entry in FORCED:
        rpt, lanes = FORCED[entry]
        return (rpt, lanes) if subgroups or lanes == 1 else (rpt, 1)
    low, high = LANE_HEADS
    if not subgroups or not low <= max(dk, dv) <= high:
        return 1, 1
    return SHAPES[entry]


def threads(rows: int, rpt: int, lanes: int) -> int:
    """Invocations of a workgroup of `rows` rows."""
    return rows // rpt * lanes


def fit(rows: int, rpt: int, lanes: int, most: int) -> int:
    """`rows` a workgroup, halved while its invocations pass `most` (the adapter's limit)."""
    while rows > rpt and threads(rows, rpt, lanes) > most:
        rows //= 2
    return rows
