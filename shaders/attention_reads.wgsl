// attention_reads.wgsl: what the row kernels (attention_forward.wgsl, attention_backward.wgsl)
// share: the row layout and strided reads of q, k and v rows as vec4s (what they do alike
// with d_k- and d_v-wide rows is attention_stage.wgsl, rendered for each). The including kernel
// declares the storage arrays q, k and v, `fn read_g(i: i32) -> f32` (the output gradient's
// element i), the workgroup arrays dk_tile and dv_tile (staged rows d_k and d_v wide) and the
// constants ROWS, COLS, DK4, DV4, RPT, LANES, and includes attention_common.wgsl
// first.
// Row layout: a workgroup's ROWS rows are held by LANE_GROUPS groups of LANES consecutive
// threads, group g holding rows g, g + LANE_GROUPS, .. (RPT of them); lane l of a group holds
// vec4s l, l + LANES, .. of each (KL of a d_k-wide row, VL of a d_v-wide one). A staged tile's
// rows are DKP (DVP) vec4s long, zeros past the head, so every lane reads within its row.
// No placeholders.
const KL: u32 = (DK4 + LANES - 1u) / LANES;
const VL: u32 = (DV4 + LANES - 1u) / LANES;
const DKP: u32 = KL * LANES;
const DVP: u32 = VL * LANES;
const LANE_GROUPS: u32 = ROWS / RPT;
const THREADS: u32 = LANE_GROUPS * LANES;

#include "attention_load.wgsl"

// Elements 4c .. 4c + 3 of a row of `which` at `base` with element stride `step`; 0 past `n`.
fn read4(which: u32, base: i32, step: i32, c: u32, n: i32) -> vec4<f32> {
  let d = i32(c) * 4;
  return vec4<f32>(select(0.0, load(which, base + min(d, n - 1) * step), d < n),
                   select(0.0, load(which, base + min(d + 1, n - 1) * step), d + 1 < n),
                   select(0.0, load(which, base + min(d + 2, n - 1) * step), d + 2 < n),
                   select(0.0, load(which, base + min(d + 3, n - 1) * step), d + 3 < n));
}

// A tile is staged (attention_stage.wgsl's `stage_dk`, `stage_dv`) straight from global memory:
// fetching the next tile during the current one's multiply-adds, as the register-blocked
// kernels do, took 0.93-1.86x the time, median 1.06x, over 72 kernel timings on the H100 at
// d = 64 (benchmarks/results/attention_rows_prefetch_h100_s5.json, `_p1` against `_p0`).
const NK: u32 = (COLS * DKP + THREADS - 1u) / THREADS;  // dk_tile vec4s a thread stages
const NV: u32 = (COLS * DVP + THREADS - 1u) / THREADS;  // dv_tile vec4s
