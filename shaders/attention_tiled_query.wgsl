// attention_tiled_query.wgsl: the gradient of attention with respect to q, register-blocked
// (the layout of attention_tiled_forward.wgsl, through attention_tiles.wgsl); the same output as
// attention_backward.wgsl's query_grads. A workgroup owns BR = 64 queries and walks the keys in
// tiles of BC: per tile two chunked products give the 4 x 4 blocks s = q k^T * scale and
// dp = dout v^T of each thread; p = exp(s + mask - lse) (0 past the end or the causal
// frontier), ds = p (dp - delta) goes through workgroup memory (p_t) with the tile's rows of k
// (rows_t), and dq += ds k. Entry: query_grads.
// Bindings: 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a
//   4-byte zero when there is none), 5 dout, array<f32> read through their strides; 6 stats:
//   array<vec2<f32>> (lse, delta) a query row; 7 grad: dq, (batch, heads, seq_q, d_k) dense.
// Placeholders: {{ enable }} (the header), {{ constants }} (attention_tiled_constants.wgsl,
//   rendered: GX, QM, BK, RV, DK4, DV4, HAS_MASK; RV here is ceil(d_k / 4 / GX)).
// Loops over TM, TN, RV, NA, NB and NR are written out when rendered (`flash_tiles.unrolled`).
// Every stage's global loads are prefetched into registers during the previous stage's
// multiply-adds (attention_tiles.wgsl).
{{ enable }}
#include "attention_backward_io.wgsl"

{{ constants }}

#include "attention_common.wgsl"
#include "attention_tiles.wgsl"

@compute @workgroup_size(THREADS)
fn query_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
  let at = attention_block(pyrite_flat(wid, nwg, 1u), BR, info[2]);
  if (at.x < 0) { return; }  // the grid's padding: a whole workgroup, so uniform
  let b = at.x; let h = at.y;
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let scale = bitcast<f32>(info[6]);
  let tx = lid % GX; let ty = lid / GX;
  let qv = view_of(Q_VIEW, b, h); let kv = view_of(K_VIEW, b, h);
  let vv = view_of(V_VIEW, b, h); let dov = view_of(G_VIEW, b, h);
  let off = causal_offset();
  // the keys any query of this workgroup sees (uniform): causal attention skips the rest
  let last = min(seq_k, min(at.z + i32(BR) - 1, seq_q - 1) + off + 1);
  var g: array<vec4<f32>, TM * RV>;
  var s: array<vec4<f32>, TM>;
  var dp: array<vec4<f32>, TM>;
  var st: array<vec2<f32>, TM>;
  var row: array<i32, TM>;  // the thread's queries
  var m_at: array<i32, TM>;
  for (var qm = 0u; qm < QM; qm++) {
    for (var i = 0u; i < QUAD; i++) {
      row[4u * qm + i] = at.z + i32(4u * (ty + GY * qm) + i);
    }
  }
  for (var r = 0u; r < TM; r++) {
    let clamped = min(row[r], seq_q - 1);
    m_at[r] = view_base(M_VIEW, b, h, clamped);
    st[r] = stats[(b * info[1] + h) * seq_q + clamped];
  }
  let chunks_k = (dk + i32(BK) - 1) / i32(BK);
  let steps = chunks_k + (dv + i32(BK) - 1) / i32(BK);  // the chunks of s, then of dp
  // the next step's chunks (q and k for s, dout and v for dp) and the tile's rows of k
  var ra = fetch_a(0u, qv, at.z, seq_q, 0, dk, scale, lid);
  var rb = fetch_b(1u, kv, 0, seq_k, 0, dk, 1.0, lid);
  var rr: array<vec4<f32>, NR>;
  for (var t = 0; t < last; t += i32(BC)) {
    for (var r = 0u; r < TM; r++) {
      s[r] = vec4<f32>(0.0);
      dp[r] = vec4<f32>(0.0);
    }
    for (var p = 0; p < steps; p++) {
      store_a(ra, lid);
      store_b(rb, lid);
      workgroupBarrier();
      let next = p + 1;  // prefetch its chunks, or after the last step the tile's rows of k
      if (next < chunks_k) {
        ra = fetch_a(0u, qv, at.z, seq_q, next, dk, scale, lid);
        rb = fetch_b(1u, kv, t, seq_k, next, dk, 1.0, lid);
      } else if (next < steps) {
        ra = fetch_a(3u, dov, at.z, seq_q, next - chunks_k, dv, 1.0, lid);
        rb = fetch_b(2u, vv, t, seq_k, next - chunks_k, dv, 1.0, lid);
      } else if (PREFETCH_ROWS) {
        rr = fetch_rows(1u, kv, t, seq_k, dk, lid);
      }
      if (p < chunks_k) {
        s = chunk_product(s, tx, ty);
      } else {
        dp = chunk_product(dp, tx, ty);
      }
      workgroupBarrier();
    }
    let c0 = t + i32(tx);  // the thread's first key; it owns keys c0 + GX jj
    for (var r = 0u; r < TM; r++) {
      for (var jj = 0u; jj < TN; jj++) {
        let key = c0 + i32(GX * jj);
        var x = s[r][jj];
        if (HAS_MASK) {
          x += mask[m_at[r] + min(key, seq_k - 1) * info[M_VIEW + 4]];
        }
        // a key past the end or the causal frontier weighs nothing
        let p = select(exp(x - st[r].x), 0.0, key >= seq_k || key > row[r] + off);
        s[r][jj] = p * (dp[r][jj] - st[r].y);
      }
    }
    store_weights(s, tx, ty);
    if (!PREFETCH_ROWS) {
      rr = fetch_rows(1u, kv, t, seq_k, dk, lid);
    }
    store_rows(rr, lid);
    workgroupBarrier();
    if (t + i32(BC) < last) {  // prefetch the next tile's first step
      ra = fetch_a(0u, qv, at.z, seq_q, 0, dk, scale, lid);
      rb = fetch_b(1u, kv, t + i32(BC), seq_k, 0, dk, 1.0, lid);
    }
    let n = min(BC, u32(last - t));  // the last tile may be short (uniform)
    g = rows_product(g, n, tx, ty);
    workgroupBarrier();
  }
  for (var r = 0u; r < TM; r++) {
    if (row[r] < seq_q) {
      let at_row = ((b * info[1] + h) * seq_q + row[r]) * dk;
      for (var u = 0u; u < RV; u++) {
        write_grad(at_row, tx + GX * u, dk, g[r * RV + u] * scale);
      }
    }
  }
}

fn write_grad(base: i32, c: u32, n: i32, x: vec4<f32>) {
  let d = i32(c) * 4;
  for (var e = 0; e < 4; e++) {
    if (d + e < n) {
      grad[base + d + e] = x[e];
    }
  }
}
