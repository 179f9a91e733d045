// attention_backward.wgsl: the gradients of attention_forward.wgsl's output with respect to q, k
// and v, recomputing the weights p = exp(q k^T * scale + mask - lse) tile by tile instead of
// reading them (nothing of size seq_q * seq_k is ever stored). With dp = dout v^T and
// ds = p * (dp - delta) (delta from attention_delta.wgsl): dv = p^T dout, dk = ds^T q * scale,
// dq = ds k * scale. Two entry points, neither needing atomics:
//   key_grads: a workgroup owns ROWS keys of one (batch, head), RPT a thread, and walks the
//     queries in tiles of COLS (their q, dout and stats in workgroup memory); it writes
//     grad = (batch, heads, seq_k, d_k + d_v) dense, dk then dv in each row. PART 0 computes
//     both; PART 1 only dk and PART 2 only dv, two launches that each hold two or three head
//     rows a thread instead of four (wide heads: fewer registers, no spills).
// With the causal flag a key past a query's frontier (j > i + seq_k - seq_q) weighs nothing, and
// the tiles wholly past it are skipped: key_grads starts at the first query that sees its
// first key, query_grads stops after its last query's frontier.
//   query_grads: a workgroup owns ROWS queries, RPT a thread, and walks the keys in tiles of
//     COLS (their k and v in workgroup memory); it writes grad = dq, (batch, heads, seq_q, d_k)
//     dense.
// LANES consecutive threads share a row, each holding every LANES-th vec4 of it; `lane_sum` adds
// their partial dot products (attention_reads.wgsl's row layout).
// Bindings: 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a 4-byte
//   zero when there is none), 5 dout, all array<f32> read through their strides; 6 stats:
//   array<vec2<f32>> (lse, delta) a query row, 7 grad: array<f32>.
// Placeholders: {{ enable }} (the header), {{ constants }} (attention_row_constants.wgsl,
//   rendered: ROWS, COLS rows a tile, DK4, DV4, HAS_MASK, RPT rows a thread, LANES threads a
//   row), {{ part }} (key_grads: 0 dk and dv, 1 dk, 2 dv), {{ lane_sum }} (the function
//   `lane_sum`, from `flash_lanes.lane_sum`), {{ staging }} (attention_stage.wgsl for d_k- and
//   d_v-wide rows: `flash_attention.staging`).
// The loops `for (var c = 0u; c < KL; c++)` (and VL, RPT) over register arrays are written out
// when rendered (`flash_tiles.unrolled`), so the arrays are indexed by constants.
{{ enable }}
#include "attention_backward_io.wgsl"

{{ constants }}
const PART: u32 = {{ part }}u;
const WITH_DK: bool = PART != 2u;
const WITH_DV: bool = PART != 1u;

#include "attention_common.wgsl"
#include "attention_reads.wgsl"

{{ lane_sum }}

{{ staging }}

// a tile of d_k-wide rows (q or k) and one of d_v-wide rows (dout or v)
var<workgroup> dk_tile: array<vec4<f32>, COLS * DKP>;
var<workgroup> dv_tile: array<vec4<f32>, COLS * DVP>;
var<workgroup> stats_tile: array<vec2<f32>, COLS>;

fn write_grad(base: i32, c: u32, n: i32, x: vec4<f32>) {
  let d = i32(c) * 4;
  for (var i = 0; i < 4; i++) {
    if (d + i < n) {
      grad[base + d + i] = x[i];
    }
  }
}

@compute @workgroup_size(THREADS)
fn key_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let at = attention_block(pyrite_flat(wid, nwg, 1u), ROWS, seq_k);
  if (at.x < 0) { return; }  // the grid's padding: a whole workgroup, so uniform
  let b = at.x; let h = at.y;
  let scale = bitcast<f32>(info[6]);
  let lane = lid % LANES;
  var key: array<i32, RPT>;  // the thread's keys
  var m_at: array<i32, RPT>;
  var kr: array<vec4<f32>, RPT * KL>;
  var vr: array<vec4<f32>, RPT * VL>;
  var gk: array<vec4<f32>, RPT * KL>;
  var gv: array<vec4<f32>, RPT * VL>;
  for (var i = 0u; i < RPT; i++) {
    key[i] = at.z + i32(lid / LANES + LANE_GROUPS * i);
    // keys past the end compute key seq_k - 1 and store nothing
    let j = min(key[i], seq_k - 1);
    m_at[i] = view_base(M_VIEW, b, h, 0) + j * info[M_VIEW + 4];
    let x = row_dk(1u, K_VIEW, b, h, j, dk, lane);
    for (var c = 0u; c < KL; c++) {
      kr[i * KL + c] = x[c] * scale;
    }
    if (WITH_DK) {
      let y = row_dv(2u, V_VIEW, b, h, j, dv, lane);
      for (var c = 0u; c < VL; c++) {
        vr[i * VL + c] = y[c];
      }
    }
  }
  let row0 = (b * info[1] + h) * seq_q;
  let off = causal_offset();
  // the first query that sees this workgroup's first key (uniform): causal skips those before
  let first = clamp(at.z - off, 0, seq_q);
  for (var t = first; t < seq_q; t += i32(COLS)) {
    stage_dk(0u, Q_VIEW, b, h, t, seq_q, dk, lid);
    stage_dv(3u, G_VIEW, b, h, t, seq_q, dv, lid);
    if (lid < COLS) {  // a query past the end weighs nothing: lse = +inf gives p = 0
      let i = t + i32(lid);
      stats_tile[lid] = select(vec2<f32>(pyrite_bits(0x7f800000u), 0.0),
                               stats[row0 + min(i, seq_q - 1)], i < seq_q);
    }
    workgroupBarrier();
    for (var r = 0u; r < COLS; r++) {
      var acc: array<vec4<f32>, RPT>;  // zeroed by hand: naga zeroes a var once
      for (var i = 0u; i < RPT; i++) {
        acc[i] = vec4<f32>(0.0);
      }
      for (var c = 0u; c < KL; c++) {
        let y = dk_tile[r * DKP + c * LANES + lane];
        for (var i = 0u; i < RPT; i++) {
          acc[i] = fma(y, kr[i * KL + c], acc[i]);
        }
      }
      let st = stats_tile[r];
      var p: array<f32, RPT>;
      for (var i = 0u; i < RPT; i++) {
        var s = lane_sum(acc[i].x + acc[i].y + acc[i].z + acc[i].w);
        if (HAS_MASK) {
          s += mask[m_at[i] + min(t + i32(r), seq_q - 1) * info[M_VIEW + 3]];
        }
        // a key past this query's causal frontier weighs nothing
        p[i] = select(exp(s - st.x), 0.0, key[i] > t + i32(r) + off);
      }
      var dacc: array<vec4<f32>, RPT>;  // zeroed by hand: naga zeroes a var once
      for (var i = 0u; i < RPT; i++) {
        dacc[i] = vec4<f32>(0.0);
      }
      for (var c = 0u; c < VL; c++) {
        let y = dv_tile[r * DVP + c * LANES + lane];
        for (var i = 0u; i < RPT; i++) {
          if (WITH_DV) {
            gv[i * VL + c] = fma(vec4<f32>(p[i]), y, gv[i * VL + c]);
          }
          if (WITH_DK) {
            dacc[i] = fma(y, vr[i * VL + c], dacc[i]);
          }
        }
      }
      if (WITH_DK) {
        var ds: array<f32, RPT>;
        for (var i = 0u; i < RPT; i++) {
          ds[i] = p[i] * (lane_sum(dacc[i].x + dacc[i].y + dacc[i].z + dacc[i].w) - st.y);
        }
        for (var c = 0u; c < KL; c++) {
          let y = dk_tile[r * DKP + c * LANES + lane];
          for (var i = 0u; i < RPT; i++) {
            gk[i * KL + c] = fma(vec4<f32>(ds[i]), y, gk[i * KL + c]);
          }
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < RPT; i++) {
    if (key[i] < seq_k) {
      let out_at = ((b * info[1] + h) * seq_k + key[i]) * (dk + dv);
      if (WITH_DK) {
        for (var c = 0u; c < KL; c++) {
          write_grad(out_at, c * LANES + lane, dk, gk[i * KL + c] * scale);
        }
      }
      if (WITH_DV) {
        for (var c = 0u; c < VL; c++) {
          write_grad(out_at + dk, c * LANES + lane, dv, gv[i * VL + c]);
        }
      }
    }
  }
}

@compute @workgroup_size(THREADS)
fn query_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let at = attention_block(pyrite_flat(wid, nwg, 1u), ROWS, seq_q);
  if (at.x < 0) { return; }
  let b = at.x; let h = at.y;
  let scale = bitcast<f32>(info[6]);
  let lane = lid % LANES;
  let off = causal_offset();
  var row: array<i32, RPT>;  // the thread's queries
  var frontier: array<i32, RPT>;  // the last key each sees
  var m_at: array<i32, RPT>;
  var st: array<vec2<f32>, RPT>;
  var qr: array<vec4<f32>, RPT * KL>;
  var gr: array<vec4<f32>, RPT * VL>;
  var gq: array<vec4<f32>, RPT * KL>;
  for (var i = 0u; i < RPT; i++) {
    row[i] = at.z + i32(lid / LANES + LANE_GROUPS * i);
    let r = min(row[i], seq_q - 1);
    frontier[i] = r + off;
    m_at[i] = view_base(M_VIEW, b, h, r);
    st[i] = stats[(b * info[1] + h) * seq_q + r];
    let x = row_dk(0u, Q_VIEW, b, h, r, dk, lane);
    for (var c = 0u; c < KL; c++) {
      qr[i * KL + c] = x[c] * scale;
    }
    let y = row_dv(3u, G_VIEW, b, h, r, dv, lane);
    for (var c = 0u; c < VL; c++) {
      gr[i * VL + c] = y[c];
    }
  }
  // the keys any query of this workgroup sees (uniform): causal attention skips the rest
  let last = min(seq_k, min(at.z + i32(ROWS) - 1, seq_q - 1) + off + 1);
  for (var t = 0; t < last; t += i32(COLS)) {
    stage_dk(1u, K_VIEW, b, h, t, seq_k, dk, lid);
    stage_dv(2u, V_VIEW, b, h, t, seq_k, dv, lid);
    workgroupBarrier();
    for (var j = 0u; j < COLS; j++) {
      let key = t + i32(j);
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
      var dacc: array<vec4<f32>, RPT>;  // zeroed by hand: naga zeroes a var once
      for (var i = 0u; i < RPT; i++) {
        dacc[i] = vec4<f32>(0.0);
      }
      for (var c = 0u; c < VL; c++) {
        let y = dv_tile[j * DVP + c * LANES + lane];
        for (var i = 0u; i < RPT; i++) {
          dacc[i] = fma(gr[i * VL + c], y, dacc[i]);
        }
      }
      var ds: array<f32, RPT>;
      for (var i = 0u; i < RPT; i++) {
        var s = lane_sum(acc[i].x + acc[i].y + acc[i].z + acc[i].w);
        if (HAS_MASK) {
          s += mask[m_at[i] + min(key, seq_k - 1) * info[M_VIEW + 4]];
        }
        // a key past the end or this query's causal frontier weighs nothing
        let p = select(0.0, exp(s - st[i].x), key < seq_k && key <= frontier[i]);
        ds[i] = p * (lane_sum(dacc[i].x + dacc[i].y + dacc[i].z + dacc[i].w) - st[i].y);
      }
      for (var c = 0u; c < KL; c++) {
        let y = dk_tile[j * DKP + c * LANES + lane];
        for (var i = 0u; i < RPT; i++) {
          gq[i * KL + c] = fma(vec4<f32>(ds[i]), y, gq[i * KL + c]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < RPT; i++) {
    if (row[i] < seq_q) {
      let out_at = ((b * info[1] + h) * seq_q + row[i]) * dk;
      for (var c = 0u; c < KL; c++) {
        write_grad(out_at, c * LANES + lane, dk, gq[i * KL + c] * scale);
      }
    }
  }
}
