// attention_tiled_key.wgsl: the gradients of attention with respect to k and v, register-blocked
// (the layout of attention_tiled_forward.wgsl, through attention_tiles.wgsl, with keys as the
// rows); the same output as attention_backward.wgsl's key_grads (PART 0). A workgroup owns
// BR = 64 keys and walks the queries in tiles of BC: per tile two chunked products give each
// thread's 4 x 4 blocks of s^T = k q^T * scale and dp^T = v dout^T; p^T = exp(s^T + mask^T - lse)
// (0 past the end or the causal frontier) goes through workgroup memory (p_t) with the tile's
// rows of dout (rows_t): dv += p^T dout; then ds^T = p^T (dp^T - delta) with the tile's rows of
// q: dk += ds^T q. With the causal flag the workgroup starts at the first query that sees its
// first key. Entry: key_grads.
// Bindings: 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a
//   4-byte zero when there is none), 5 dout, array<f32> read through their strides; 6 stats:
//   array<vec2<f32>> (lse, delta) a query row; 7 grad: (batch, heads, seq_k, d_k + d_v) dense,
//   dk then dv in each row.
// Placeholders: {{ enable }} (the header), {{ constants }} (attention_tiled_constants.wgsl,
//   rendered: GX, QM, BK, RV, DK4, DV4, HAS_MASK; RV here is ceil(max(d_k, d_v) / 4 / GX)).
// Loops over TM, TN, RV, NA, NB and NR are written out when rendered (`flash_tiles.unrolled`).
// Every stage's global loads are prefetched into registers during the previous stage's
// multiply-adds (attention_tiles.wgsl).
{{ enable }}
#include "attention_backward_io.wgsl"

{{ constants }}

#include "attention_common.wgsl"
#include "attention_tiles.wgsl"

@compute @workgroup_size(THREADS)
fn key_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let at = attention_block(pyrite_flat(wid, nwg, 1u), BR, seq_k);
  if (at.x < 0) { return; }  // the grid's padding: a whole workgroup, so uniform
  let b = at.x; let h = at.y;
  let scale = bitcast<f32>(info[6]);
  let tx = lid % GX; let ty = lid / GX;
  let qv = view_of(Q_VIEW, b, h); let kv = view_of(K_VIEW, b, h);
  let vv = view_of(V_VIEW, b, h); let dov = view_of(G_VIEW, b, h);
  let off = causal_offset();
  let rows = (b * info[1] + h) * seq_q;  // the (batch, head)'s first stats row
  let m_at = view_base(M_VIEW, b, h, 0);
  var gk: array<vec4<f32>, TM * RV>;
  var gv: array<vec4<f32>, TM * RV>;
  var s: array<vec4<f32>, TM>;
  var dp: array<vec4<f32>, TM>;
  var st: array<vec2<f32>, TN>;
  var key: array<i32, TM>;  // the thread's keys
  for (var qm = 0u; qm < QM; qm++) {
    for (var i = 0u; i < QUAD; i++) {
      key[4u * qm + i] = at.z + i32(4u * (ty + GY * qm) + i);
    }
  }
  let chunks_k = (dk + i32(BK) - 1) / i32(BK);
  let steps = chunks_k + (dv + i32(BK) - 1) / i32(BK);  // the chunks of s^T, then of dp^T
  // the first query that sees this workgroup's first key (uniform): causal skips those before
  let first = clamp(at.z - off, 0, seq_q);
  // the next step's chunks (k and q for s^T, v and dout for dp^T) and the tile's rows (of
  // dout, then of q)
  var ra = fetch_a(1u, kv, at.z, seq_k, 0, dk, 1.0, lid);
  var rb = fetch_b(0u, qv, first, seq_q, 0, dk, scale, lid);
  var rr: array<vec4<f32>, NR>;
  for (var t = first; t < seq_q; t += i32(BC)) {
    for (var r = 0u; r < TM; r++) {
      s[r] = vec4<f32>(0.0);
      dp[r] = vec4<f32>(0.0);
    }
    for (var p = 0; p < steps; p++) {
      store_a(ra, lid);
      store_b(rb, lid);
      workgroupBarrier();
      let next = p + 1;  // prefetch its chunks, or after the last step the tile's rows of dout
      if (next < chunks_k) {
        ra = fetch_a(1u, kv, at.z, seq_k, next, dk, 1.0, lid);
        rb = fetch_b(0u, qv, t, seq_q, next, dk, scale, lid);
      } else if (next < steps) {
        ra = fetch_a(2u, vv, at.z, seq_k, next - chunks_k, dv, 1.0, lid);
        rb = fetch_b(3u, dov, t, seq_q, next - chunks_k, dv, 1.0, lid);
      } else if (PREFETCH_ROWS) {
        rr = fetch_rows(3u, dov, t, seq_q, dv, lid);
      }
      if (p < chunks_k) {
        s = chunk_product(s, tx, ty);
      } else {
        dp = chunk_product(dp, tx, ty);
      }
      workgroupBarrier();
    }
    let c0 = t + i32(tx);  // the thread's first query; it owns queries c0 + GX jj
    for (var jj = 0u; jj < TN; jj++) {
      // a query past the end weighs nothing: lse = +inf gives p = 0
      st[jj] = select(vec2<f32>(pyrite_bits(0x7f800000u), 0.0),
                      stats[rows + min(c0 + i32(GX * jj), seq_q - 1)], c0 + i32(GX * jj) < seq_q);
    }
    for (var r = 0u; r < TM; r++) {
      for (var jj = 0u; jj < TN; jj++) {
        let query = c0 + i32(GX * jj);
        var x = s[r][jj];
        if (HAS_MASK) {
          x += mask[m_at + min(query, seq_q - 1) * info[M_VIEW + 3]
                    + min(key[r], seq_k - 1) * info[M_VIEW + 4]];
        }
        // a key past this query's causal frontier weighs nothing
        let p = select(exp(x - st[jj].x), 0.0, key[r] > query + off);
        s[r][jj] = p;
        dp[r][jj] = p * (dp[r][jj] - st[jj].y);
      }
    }
    store_weights(s, tx, ty);
    if (!PREFETCH_ROWS) {
      rr = fetch_rows(3u, dov, t, seq_q, dv, lid);
    }
    store_rows(rr, lid);
    workgroupBarrier();
    if (PREFETCH_ROWS) {
      rr = fetch_rows(0u, qv, t, seq_q, dk, lid);  // prefetch the tile's rows of q
    }
    gv = rows_product(gv, BC, tx, ty);
    workgroupBarrier();
    store_weights(dp, tx, ty);
    if (!PREFETCH_ROWS) {
      rr = fetch_rows(0u, qv, t, seq_q, dk, lid);
    }
    store_rows(rr, lid);
    workgroupBarrier();
    if (t + i32(BC) < seq_q) {  // prefetch the next tile's first step
      ra = fetch_a(1u, kv, at.z, seq_k, 0, dk, 1.0, lid);
      rb = fetch_b(0u, qv, t + i32(BC), seq_q, 0, dk, scale, lid);
    }
    gk = rows_product(gk, BC, tx, ty);
    workgroupBarrier();
  }
  for (var r = 0u; r < TM; r++) {
    if (key[r] < seq_k) {
      let at_row = ((b * info[1] + h) * seq_k + key[r]) * (dk + dv);
      for (var u = 0u; u < RV; u++) {
        write_grad(at_row, tx + GX * u, dk, gk[r * RV + u] * scale);
        write_grad(at_row + dk, tx + GX * u, dv, gv[r * RV + u]);
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
