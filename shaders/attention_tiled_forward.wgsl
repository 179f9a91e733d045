// attention_tiled_forward.wgsl: softmax(q k^T * scale + mask) v with the score block
// register-blocked like the tiled matmul; the same outputs as attention_forward.wgsl (out and
// each row's lse; a row whose every score is -inf writes 0 and lse = +inf). Entry: forward.
// Layout (shared by attention_tiled_query.wgsl and attention_tiled_key.wgsl through
// attention_tiles.wgsl): a workgroup owns BR = 64 rows of one (batch, head) and walks the other
// side in tiles of BC = 4 GX columns. Its GY x GX threads (GY = 16) tile the BR x BC score
// block: thread (ty, tx) holds the scores of rows 4ty .. 4ty + 3 and columns tx + GX jj
// (jj < 4) in registers (s[i]: row i, a vec4 over the 4 columns). The block is a small matmul
// over the head dim, walked in chunks of BK: both sides' chunk staged transposed in workgroup
// memory (a_t: [BK][BR], b_t: [BK][BC], each a vec4 over a thread's 4 rows or columns), so a
// step is two vec4 loads and 16 multiply-adds; with a single chunk the forward stages its
// queries once. The thread also owns, of its 4 rows of the output, the vec4 columns tx,
// tx + GX, ..: the weights go through workgroup memory (p_t: [BC][BR], a vec4 over 4 rows) with
// the tile's rows of v (rows_t: [BC][GX * RV] vec4s), and the update is one vec4 of weights and
// RV vec4 loads for 16 RV multiply-adds. The score matrix never reaches global memory.
// Online softmax: the maximum of a row over a tile is reduced across the GX threads that share
// the row through `red`; each thread keeps its own partial row sums (all rescaled by the same
// maxima), added once at the end. Quiet softmax starts from m = 0 and a sum of 1 (the extra
// logit 0, counted by the tx = 0 thread). With the causal flag a key past a query's frontier
// scores -inf and the tiles wholly past the workgroup's last frontier are skipped.
// Bindings: 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a
//   4-byte zero when there is none), array<f32> read through their strides; 5 out: (batch,
//   heads, seq_q, d_v) dense, 6 lse: (batch, heads, seq_q) dense.
// Placeholders: {{ enable }} (the header), {{ constants }} (attention_tiled_constants.wgsl,
//   rendered: GX, QM, BK, RV, DK4, DV4, HAS_MASK; RV here is ceil(d_v / 4 / GX)).
// Loops `for (var i = 0u; i < TM; i++)` (and over jj < TN, u < RV, the staged NA, NB, NR) are
// written out when rendered (`flash_tiles.unrolled`), so the register arrays have constant
// indices. The global loads of the next stage (chunk, rows of v, the next tile's first chunk)
// are issued before the current one's multiply-adds and stored after its barrier.
{{ enable }}
#include "attention_forward_io.wgsl"

{{ constants }}

#include "attention_common.wgsl"
#include "attention_tiles.wgsl"

var<workgroup> red: array<f32, BR * GX>;

@compute @workgroup_size(THREADS)
fn forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let at = attention_block(pyrite_flat(wid, nwg, 1u), BR, info[2]);
  if (at.x < 0) { return; }  // the grid's padding: a whole workgroup, so uniform
  let b = at.x; let h = at.y;
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let scale = bitcast<f32>(info[6]);
  let tx = lid % GX; let ty = lid / GX;
  let qv = view_of(Q_VIEW, b, h); let kv = view_of(K_VIEW, b, h);
  let vv = view_of(V_VIEW, b, h);
  let quiet = (info[7] & 1) != 0;
  let off = causal_offset();
  // the keys any query of this workgroup sees (uniform): causal attention skips the rest
  let last = min(seq_k, min(at.z + i32(BR) - 1, seq_q - 1) + off + 1);
  var o: array<vec4<f32>, TM * RV>;
  var s: array<vec4<f32>, TM>;
  var m: array<f32, TM>;  // the rows' running maxima
  var l: array<f32, TM>;  // this thread's part of the rows' sums
  var lrow: array<u32, TM>;  // the rows in the block
  var m_at: array<i32, TM>;
  for (var qm = 0u; qm < QM; qm++) {
    for (var i = 0u; i < QUAD; i++) {
      lrow[4u * qm + i] = 4u * (ty + GY * qm) + i;
    }
  }
  for (var r = 0u; r < TM; r++) {
    m[r] = select(-3.0e38, 0.0, quiet);
    l[r] = select(0.0, 1.0, quiet && tx == 0u);
    m_at[r] = view_base(M_VIEW, b, h, min(at.z + i32(lrow[r]), seq_q - 1));
  }
  let chunks = (dk + i32(BK) - 1) / i32(BK);
  var ra: array<vec4<f32>, NA>;  // the next chunk of q (when the head is several chunks)
  var rb = fetch_b(1u, kv, 0, seq_k, 0, dk, 1.0, lid);  // the next chunk of k
  var rr: array<vec4<f32>, NR>;  // the tile's rows of v
  if (chunks == 1) {  // the whole head in one chunk: the queries are staged once
    store_a(fetch_a(0u, qv, at.z, seq_q, 0, dk, scale, lid), lid);
  } else {
    ra = fetch_a(0u, qv, at.z, seq_q, 0, dk, scale, lid);
  }
  for (var t = 0; t < last; t += i32(BC)) {
    for (var r = 0u; r < TM; r++) {
      s[r] = vec4<f32>(0.0);
    }
    for (var ch = 0; ch < chunks; ch++) {
      if (chunks > 1) {
        store_a(ra, lid);
      }
      store_b(rb, lid);
      workgroupBarrier();
      // prefetch: the next chunk, or after the last the tile's rows of v
      if (ch + 1 < chunks) {
        ra = fetch_a(0u, qv, at.z, seq_q, ch + 1, dk, scale, lid);
        rb = fetch_b(1u, kv, t, seq_k, ch + 1, dk, 1.0, lid);
      } else if (PREFETCH_ROWS) {
        rr = fetch_rows(2u, vv, t, seq_k, dv, lid);
      }
      s = chunk_product(s, tx, ty);
      workgroupBarrier();
    }
    let c0 = t + i32(tx);  // the thread's first key; it owns keys c0 + GX jj
    for (var r = 0u; r < TM; r++) {
      let row = at.z + i32(lrow[r]);
      for (var jj = 0u; jj < TN; jj++) {
        let key = c0 + i32(GX * jj);
        if (HAS_MASK) {
          s[r][jj] += mask[m_at[r] + min(key, seq_k - 1) * info[M_VIEW + 4]];
        }
        if (key >= seq_k || key > row + off) {
          s[r][jj] = pyrite_bits(NEG_INF);
        }
      }
      red[lrow[r] * GX + tx] = max(max(s[r].x, s[r].y), max(s[r].z, s[r].w));
    }
    workgroupBarrier();
    for (var r = 0u; r < TM; r++) {
      var top = m[r];
      for (var g = 0u; g < GX; g++) {
        top = max(top, red[lrow[r] * GX + g]);
      }
      let fade = exp(m[r] - top);
      m[r] = top;
      s[r] = exp(s[r] - vec4<f32>(top));
      l[r] = l[r] * fade + s[r].x + s[r].y + s[r].z + s[r].w;
      for (var u = 0u; u < RV; u++) {
        o[r * RV + u] *= fade;
      }
    }
    store_weights(s, tx, ty);
    if (!PREFETCH_ROWS) {
      rr = fetch_rows(2u, vv, t, seq_k, dv, lid);
    }
    store_rows(rr, lid);
    workgroupBarrier();
    if (t + i32(BC) < last) {  // prefetch the next tile's first chunk
      if (chunks > 1) {
        ra = fetch_a(0u, qv, at.z, seq_q, 0, dk, scale, lid);
      }
      rb = fetch_b(1u, kv, t + i32(BC), seq_k, 0, dk, 1.0, lid);
    }
    let n = min(BC, u32(last - t));  // the last tile may be short (uniform)
    o = rows_product(o, n, tx, ty);
    workgroupBarrier();
  }
  for (var r = 0u; r < TM; r++) {
    red[lrow[r] * GX + tx] = l[r];
  }
  workgroupBarrier();
  for (var r = 0u; r < TM; r++) {
    let row = at.z + i32(lrow[r]);
    var sum = 0.0;
    for (var g = 0u; g < GX; g++) {
      sum += red[lrow[r] * GX + g];
    }
    if (row < seq_q) {
      let at_row = (b * info[1] + h) * seq_q + row;
      let inv = select(0.0, 1.0 / sum, sum > 0.0);
      for (var u = 0u; u < RV; u++) {
        write_row(at_row * dv, tx + GX * u, dv, o[r * RV + u] * inv);
      }
      if (tx == 0u) {
        lse[at_row] = select(m[r] + log(sum), pyrite_bits(0x7f800000u), sum == 0.0);
      }
    }
  }
}

fn write_row(base: i32, c: u32, n: i32, x: vec4<f32>) {
  let d = i32(c) * 4;
  for (var e = 0; e < 4; e++) {
    if (d + e < n) {
      out[base + d + e] = x[e];
    }
  }
}
