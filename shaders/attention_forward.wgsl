// attention_forward.wgsl: softmax(q k^T * scale + mask) v in one pass over the keys (flash
// attention's online softmax): a workgroup owns ROWS queries of one (batch, head) and walks the
// keys in tiles of COLS, each tile of k and v staged in workgroup memory. A thread owns RPT
// queries (each vec4 it loads from a tile serves all of them), and LANES consecutive threads
// share a query (attention_reads.wgsl's row layout). A thread keeps its part of its queries,
// their running max m, running sum l and output rows in registers, rescaling l and the output
// when a key raises the max (rarely after the first keys; no per-tile array of scores, which
// CPU implementations such as lavapipe would keep in memory); the score matrix never reaches memory. It writes the output and each row's log of
// the softmax denominator, lse = m + log(l), which the backward pass recomputes the weights from
// (exp(s - lse)). A row whose every score is -inf writes 0 and lse = +inf. Entry point: forward.
// Quiet softmax (exp(x) / (1 + sum exp(x))) starts from m = 0, l = 1: the extra logit 0.
// With the causal flag, a key past a query's frontier scores -inf, and the workgroup stops at
// the tile holding its last query's frontier: the tiles above the diagonal are never read.
// Bindings: 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a
//   4-byte zero when there is none: HAS_MASK is false), all array<f32> read through their
//   strides; 5 out: (batch, heads, seq_q, d_v) dense, 6 lse: (batch, heads, seq_q) dense.
// Placeholders: {{ enable }} (the header), {{ constants }} (attention_row_constants.wgsl,
//   rendered: ROWS queries a workgroup, COLS keys a tile, DK4, DV4, HAS_MASK, RPT queries a
//   thread, LANES threads a query), {{ lane_sum }} (the function `lane_sum`, from
//   `flash_lanes.lane_sum`), {{ staging }} (attention_stage.wgsl for d_k- and d_v-wide rows:
//   `flash_attention.staging`).
// The loops `for (var c = 0u; c < KL; c++)` (and VL, RPT) over register arrays are written out
// when rendered (`flash_tiles.unrolled`), so the arrays are indexed by constants.
{{ enable }}
#include "attention_forward_io.wgsl"

{{ constants }}

#include "attention_common.wgsl"
#include "attention_reads.wgsl"

{{ lane_sum }}

{{ staging }}

// the tile's keys: dk_tile[j * DKP + c] is vec4 c of key j, dv_tile the same for its value
var<workgroup> dk_tile: array<vec4<f32>, COLS * DKP>;
var<workgroup> dv_tile: array<vec4<f32>, COLS * DVP>;

@compute @workgroup_size(THREADS)
fn forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let at = attention_block(pyrite_flat(wid, nwg, 1u), ROWS, info[2]);
  if (at.x < 0) { return; }  // the grid's padding: a whole workgroup, so uniform
  let b = at.x; let h = at.y;
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let scale = bitcast<f32>(info[6]);
  let lane = lid % LANES;
  let quiet = (info[7] & 1) != 0;
  let off = causal_offset();
  var row: array<i32, RPT>;  // the thread's queries
  var frontier: array<i32, RPT>;  // the last key each sees
  var m_at: array<i32, RPT>;
  var qr: array<vec4<f32>, RPT * KL>;
  var o: array<vec4<f32>, RPT * VL>;
  var m: array<f32, RPT>;
  var l: array<f32, RPT>;
  for (var i = 0u; i < RPT; i++) {
    row[i] = at.z + i32(lid / LANES + LANE_GROUPS * i);
    // rows past the end compute row seq_q - 1 and store nothing
    let r = min(row[i], seq_q - 1);
    frontier[i] = r + off;
    m_at[i] = view_base(M_VIEW, b, h, r);
    let x = row_dk(0u, Q_VIEW, b, h, r, dk, lane);
    for (var c = 0u; c < KL; c++) {
      qr[i * KL + c] = x[c] * scale;
    }
    m[i] = select(-3.0e38, 0.0, quiet);
    l[i] = select(0.0, 1.0, quiet);
  }
  // the keys any query of this workgroup sees (uniform): causal attention skips the rest
  let last = min(seq_k, min(at.z + i32(ROWS) - 1, seq_q - 1) + off + 1);
  for (var t = 0; t < last; t += i32(COLS)) {
    stage_dk(1u, K_VIEW, b, h, t, seq_k, dk, lid);
    stage_dv(2u, V_VIEW, b, h, t, seq_k, dv, lid);
    workgroupBarrier();
    let n = min(COLS, u32(last - t));  // the last tile may be short (uniform)
    for (var j = 0u; j < n; j++) {
      var acc: array<vec4<f32>, RPT>;  // zeroed by hand: naga zeroes a var once
      for (var i = 0u; i < RPT; i++) {
        acc[i] = vec4<f32>(0.0);
      }
      for (var c = 0u; c < KL; c++) {
        let y = dk_tile[j * DKP + c * LANES + lane];
        for (var i = 0u; i < RPT; i++) {
          acc[i] = fma(qr[i * KL + c], y, acc[i]);
        }
      }
      var p: array<f32, RPT>;
      for (var i = 0u; i < RPT; i++) {
        var x = lane_sum(acc[i].x + acc[i].y + acc[i].z + acc[i].w);
        if (HAS_MASK) {
          x += mask[m_at[i] + (t + i32(j)) * info[M_VIEW + 4]];
        }
        if (t + i32(j) > frontier[i]) {
          x = pyrite_bits(0xff800000u);  // -inf: a key past the causal frontier
        }
        if (x > m[i]) {  // a new maximum: what was summed so far shrinks by exp(m - x)
          let fade = exp(m[i] - x);
          l[i] *= fade;
          for (var c = 0u; c < VL; c++) {
            o[i * VL + c] *= fade;
          }
          m[i] = x;
        }
        p[i] = exp(x - m[i]);
        l[i] += p[i];
      }
      for (var c = 0u; c < VL; c++) {
        let y = dv_tile[j * DVP + c * LANES + lane];
        for (var i = 0u; i < RPT; i++) {
          o[i * VL + c] = fma(vec4<f32>(p[i]), y, o[i * VL + c]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < RPT; i++) {
    if (row[i] < seq_q) {
      let at_row = (b * info[1] + h) * seq_q + row[i];
      let inv = select(0.0, 1.0 / l[i], l[i] > 0.0);
      for (var c = 0u; c < VL; c++) {
        write_row(at_row * dv, c * LANES + lane, dv, o[i * VL + c] * inv);
      }
      if (lane == 0u) {
        lse[at_row] = select(m[i] + log(l[i]), pyrite_bits(0x7f800000u), l[i] == 0.0);
      }
    }
  }
}

fn write_row(base: i32, c: u32, n: i32, x: vec4<f32>) {
  let d = i32(c) * 4;
  for (var i = 0; i < 4; i++) {
    if (d + i < n) {
      out[base + d + i] = x[i];
    }
  }
}
