// attention_backward.wgsl: the gradients of attention_forward.wgsl's output with respect to q, k
// and v, recomputing the weights p = exp(q k^T * scale + mask - lse) tile by tile instead of
// reading them (nothing of size seq_q * seq_k is ever stored). With dp = dout v^T and
// ds = p * (dp - delta) (delta from attention_delta.wgsl): dv = p^T dout, dk = ds^T q * scale,
// dq = ds k * scale. Two entry points, neither needing atomics:
//   key_grads: a workgroup owns ROWS keys of one (batch, head), one a thread, and walks the
//     queries in tiles of COLS (their q, dout and stats in workgroup memory); it writes
//     grad = (batch, heads, seq_k, d_k + d_v) dense, dk then dv in each row. PART 0 computes
//     both; PART 1 only dk and PART 2 only dv, two launches that each hold two or three head
//     rows a thread instead of four (wide heads: fewer registers, no spills).
// With the causal flag a key past a query's frontier (j > i + seq_k - seq_q) weighs nothing, and
// the tiles wholly past it are skipped: key_grads starts at the first query that sees its
// first key, query_grads stops after its last query's frontier.
//   query_grads: a workgroup owns ROWS queries and walks the keys in tiles of COLS (their k and
//     v in workgroup memory); it writes grad = dq, (batch, heads, seq_q, d_k) dense.
// Bindings: 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a 4-byte
//   zero when there is none), 5 dout, all array<f32> read through their strides; 6 stats:
//   array<vec2<f32>> (lse, delta) a query row, 7 grad: array<f32>.
// Placeholders: {{ enable }} (the header), {{ rows }} (invocations a workgroup), {{ cols }}
//   (rows a tile), {{ dk4 }}, {{ dv4 }} (head dims in vec4s, rounded up), {{ has_mask }},
//   {{ part }} (key_grads: 0 dk and dv, 1 dk, 2 dv).
// The loops `for (var c = 0u; c < DK4; c++)` (and DV4) over a row's vec4s are written out
// when rendered (`flash_attention.unrolled`), so the row arrays are indexed by constants.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<f32>;
@group(0) @binding(6) var<storage, read> stats: array<vec2<f32>>;
@group(0) @binding(7) var<storage, read_write> grad: array<f32>;

const ROWS: u32 = {{ rows }}u;
const COLS: u32 = {{ cols }}u;
const DK4: u32 = {{ dk4 }}u;
const DV4: u32 = {{ dv4 }}u;
const HAS_MASK: bool = {{ has_mask }};
const PART: u32 = {{ part }}u;
const WITH_DK: bool = PART != 2u;
const WITH_DV: bool = PART != 1u;

#include "attention_common.wgsl"
#include "attention_reads.wgsl"

// a tile of d_k-wide rows (q or k) and one of d_v-wide rows (dout or v)
var<workgroup> dk_tile: array<vec4<f32>, COLS * DK4>;
var<workgroup> dv_tile: array<vec4<f32>, COLS * DV4>;
var<workgroup> stats_tile: array<vec2<f32>, COLS>;

fn read_dout(base: i32, step: i32, c: u32, n: i32) -> vec4<f32> {
  let d = i32(c) * 4;
  return vec4<f32>(select(0.0, dout[base + min(d, n - 1) * step], d < n),
                   select(0.0, dout[base + min(d + 1, n - 1) * step], d + 1 < n),
                   select(0.0, dout[base + min(d + 2, n - 1) * step], d + 2 < n),
                   select(0.0, dout[base + min(d + 3, n - 1) * step], d + 3 < n));
}

fn write_grad(base: i32, c: u32, n: i32, x: vec4<f32>) {
  let d = i32(c) * 4;
  for (var i = 0; i < 4; i++) {
    if (d + i < n) {
      grad[base + d + i] = x[i];
    }
  }
}

@compute @workgroup_size(ROWS)
fn key_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let at = attention_block(pyrite_flat(wid, nwg, 1u), ROWS, seq_k);
  if (at.x < 0) { return; }  // the grid's padding: a whole workgroup, so uniform
  let b = at.x; let h = at.y;
  let scale = bitcast<f32>(info[6]);
  let key = at.z + i32(lid);
  let j = min(key, seq_k - 1);  // keys past the end compute key seq_k - 1 and store nothing
  var kr: array<vec4<f32>, DK4>;
  var vr: array<vec4<f32>, DV4>;
  var gk: array<vec4<f32>, DK4>;
  var gv: array<vec4<f32>, DV4>;
  let k_at = view_base(K_VIEW, b, h, j);
  for (var c = 0u; c < DK4; c++) {
    kr[c] = read_k(k_at, info[K_VIEW + 4], c, dk) * scale;
  }
  if (WITH_DK) {
    let v_at = view_base(V_VIEW, b, h, j);
    for (var c = 0u; c < DV4; c++) {
      vr[c] = read_v(v_at, info[V_VIEW + 4], c, dv);
    }
  }
  let q_at = view_base(Q_VIEW, b, h, 0);
  let g_at = view_base(G_VIEW, b, h, 0);
  let m_at = view_base(M_VIEW, b, h, 0) + j * info[M_VIEW + 4];
  let row0 = (b * info[1] + h) * seq_q;
  let off = causal_offset();
  // the first query that sees this workgroup's first key (uniform): causal skips those before
  let first = clamp(at.z - off, 0, seq_q);
  for (var t = first; t < seq_q; t += i32(COLS)) {
    for (var e = lid; e < COLS * DK4; e += ROWS) {
      let i = min(t + i32(e / DK4), seq_q - 1);
      dk_tile[e] = read_q(q_at + i * info[Q_VIEW + 3], info[Q_VIEW + 4], e % DK4, dk);
    }
    for (var e = lid; e < COLS * DV4; e += ROWS) {
      let i = min(t + i32(e / DV4), seq_q - 1);
      dv_tile[e] = read_dout(g_at + i * info[G_VIEW + 3], info[G_VIEW + 4], e % DV4, dv);
    }
    for (var e = lid; e < COLS; e += ROWS) {
      let i = t + i32(e);
      // a row past the end weighs nothing: lse = +inf gives p = 0
      stats_tile[e] = select(vec2<f32>(pyrite_bits(0x7f800000u), 0.0),
                             stats[row0 + min(i, seq_q - 1)], i < seq_q);
    }
    workgroupBarrier();
    for (var r = 0u; r < COLS; r++) {
      var acc = vec4<f32>(0.0);
      for (var c = 0u; c < DK4; c++) {
        acc = fma(dk_tile[r * DK4 + c], kr[c], acc);
      }
      var s = acc.x + acc.y + acc.z + acc.w;
      if (HAS_MASK) {
        s += mask[m_at + min(t + i32(r), seq_q - 1) * info[M_VIEW + 3]];
      }
      let st = stats_tile[r];
      // a key past this query's causal frontier weighs nothing
      let p = select(exp(s - st.x), 0.0, j > t + i32(r) + off);
      if (WITH_DV) {
        for (var c = 0u; c < DV4; c++) {
          gv[c] = fma(vec4<f32>(p), dv_tile[r * DV4 + c], gv[c]);
        }
      }
      if (WITH_DK) {
        var dacc = vec4<f32>(0.0);
        for (var c = 0u; c < DV4; c++) {
          dacc = fma(dv_tile[r * DV4 + c], vr[c], dacc);
        }
        let ds = p * (dacc.x + dacc.y + dacc.z + dacc.w - st.y);
        for (var c = 0u; c < DK4; c++) {
          gk[c] = fma(vec4<f32>(ds), dk_tile[r * DK4 + c], gk[c]);
        }
      }
    }
    workgroupBarrier();
  }
  if (key < seq_k) {
    let out_at = ((b * info[1] + h) * seq_k + key) * (dk + dv);
    if (WITH_DK) {
      for (var c = 0u; c < DK4; c++) {
        write_grad(out_at, c, dk, gk[c] * scale);
      }
    }
    if (WITH_DV) {
      for (var c = 0u; c < DV4; c++) {
        write_grad(out_at + dk, c, dv, gv[c]);
      }
    }
  }
}

@compute @workgroup_size(ROWS)
fn query_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let at = attention_block(pyrite_flat(wid, nwg, 1u), ROWS, seq_q);
  if (at.x < 0) { return; }
  let b = at.x; let h = at.y;
  let scale = bitcast<f32>(info[6]);
  let row = at.z + i32(lid);
  let i = min(row, seq_q - 1);
  var qr: array<vec4<f32>, DK4>;
  var gr: array<vec4<f32>, DV4>;
  var gq: array<vec4<f32>, DK4>;
  let q_at = view_base(Q_VIEW, b, h, i);
  for (var c = 0u; c < DK4; c++) {
    qr[c] = read_q(q_at, info[Q_VIEW + 4], c, dk) * scale;
  }
  let g_at = view_base(G_VIEW, b, h, i);
  for (var c = 0u; c < DV4; c++) {
    gr[c] = read_dout(g_at, info[G_VIEW + 4], c, dv);
  }
  let st = stats[(b * info[1] + h) * seq_q + i];
  let k_at = view_base(K_VIEW, b, h, 0);
  let v_at = view_base(V_VIEW, b, h, 0);
  let m_at = view_base(M_VIEW, b, h, i);
  let off = causal_offset();
  // the keys any query of this workgroup sees (uniform): causal attention skips the rest
  let last = min(seq_k, min(at.z + i32(ROWS) - 1, seq_q - 1) + off + 1);
  for (var t = 0; t < last; t += i32(COLS)) {
    for (var e = lid; e < COLS * DK4; e += ROWS) {
      let key = min(t + i32(e / DK4), seq_k - 1);
      dk_tile[e] = read_k(k_at + key * info[K_VIEW + 3], info[K_VIEW + 4], e % DK4, dk);
    }
    for (var e = lid; e < COLS * DV4; e += ROWS) {
      let key = min(t + i32(e / DV4), seq_k - 1);
      dv_tile[e] = read_v(v_at + key * info[V_VIEW + 3], info[V_VIEW + 4], e % DV4, dv);
    }
    workgroupBarrier();
    for (var j = 0u; j < COLS; j++) {
      let key = t + i32(j);
      var acc = vec4<f32>(0.0);
      for (var c = 0u; c < DK4; c++) {
        acc = fma(qr[c], dk_tile[j * DK4 + c], acc);
      }
      var s = acc.x + acc.y + acc.z + acc.w;
      if (HAS_MASK) {
        s += mask[m_at + min(key, seq_k - 1) * info[M_VIEW + 4]];
      }
      // a key past the end weighs nothing
      let p = select(0.0, exp(s - st.x), key < seq_k && key <= i + off);
      var dacc = vec4<f32>(0.0);
      for (var c = 0u; c < DV4; c++) {
        dacc = fma(gr[c], dv_tile[j * DV4 + c], dacc);
      }
      let ds = p * (dacc.x + dacc.y + dacc.z + dacc.w - st.y);
      for (var c = 0u; c < DK4; c++) {
        gq[c] = fma(vec4<f32>(ds), dk_tile[j * DK4 + c], gq[c]);
      }
    }
    workgroupBarrier();
  }
  if (row < seq_q) {
    let out_at = ((b * info[1] + h) * seq_q + row) * dk;
    for (var c = 0u; c < DK4; c++) {
      write_grad(out_at, c, dk, gq[c] * scale);
    }
  }
}
