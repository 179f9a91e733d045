// attention_forward.wgsl: softmax(q k^T * scale + mask) v in one pass over the keys (flash
// attention's online softmax): a workgroup owns ROWS queries of one (batch, head), one query a
// thread, and walks the keys in tiles of COLS, each tile of k and v staged in workgroup memory.
// A thread keeps its query, its running max m, its running sum l and its output row in
// registers, rescaling l and the output when a key raises the max (rarely after the first
// keys; no per-tile array of scores, which CPU implementations such as lavapipe would keep in
// memory); the score matrix never reaches memory. It writes the output and each row's log of
// the softmax denominator, lse = m + log(l), which the backward pass recomputes the weights from
// (exp(s - lse)). A row whose every score is -inf writes 0 and lse = +inf. Entry point: forward.
// Quiet softmax (exp(x) / (1 + sum exp(x))) starts from m = 0, l = 1: the extra logit 0.
// With the causal flag, a key past a query's frontier scores -inf, and the workgroup stops at
// the tile holding its last query's frontier: the tiles above the diagonal are never read.
// Bindings: 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a
//   4-byte zero when there is none: HAS_MASK is false), all array<f32> read through their
//   strides; 5 out: (batch, heads, seq_q, d_v) dense, 6 lse: (batch, heads, seq_q) dense.
// Placeholders: {{ enable }} (the header), {{ rows }} (queries = invocations a workgroup),
//   {{ cols }} (keys a tile), {{ dk4 }}, {{ dv4 }} (head dims in vec4s, rounded up),
//   {{ has_mask }} (true or false).
// The loops `for (var c = 0u; c < DK4; c++)` (and DV4) over a row's vec4s are written out
// when rendered (`flash_attention.unrolled`), so the row arrays are indexed by constants.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

const ROWS: u32 = {{ rows }}u;
const COLS: u32 = {{ cols }}u;
const DK4: u32 = {{ dk4 }}u;
const DV4: u32 = {{ dv4 }}u;
const HAS_MASK: bool = {{ has_mask }};

#include "attention_common.wgsl"
#include "attention_reads.wgsl"

var<workgroup> k_tile: array<vec4<f32>, COLS * DK4>;
var<workgroup> v_tile: array<vec4<f32>, COLS * DV4>;

@compute @workgroup_size(ROWS)
fn forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let at = attention_block(pyrite_flat(wid, nwg, 1u), ROWS, info[2]);
  if (at.x < 0) { return; }  // the grid's padding: a whole workgroup, so uniform
  let b = at.x; let h = at.y;
  let seq_q = info[2]; let seq_k = info[3]; let dk = info[4]; let dv = info[5];
  let scale = bitcast<f32>(info[6]);
  let row = at.z + i32(lid);
  let r = min(row, seq_q - 1);  // rows past the end compute row seq_q - 1 and store nothing
  let q_at = view_base(Q_VIEW, b, h, r);
  var qr: array<vec4<f32>, DK4>;
  for (var c = 0u; c < DK4; c++) {
    qr[c] = read_q(q_at, info[Q_VIEW + 4], c, dk) * scale;
  }
  var o: array<vec4<f32>, DV4>;
  let quiet = (info[7] & 1) != 0;
  let off = causal_offset();
  let frontier = r + off;  // the last key this query sees
  // the keys any query of this workgroup sees (uniform): causal attention skips the rest
  let last = min(seq_k, min(at.z + i32(ROWS) - 1, seq_q - 1) + off + 1);
  var m = select(-3.0e38, 0.0, quiet);
  var l = select(0.0, 1.0, quiet);
  let k_at = view_base(K_VIEW, b, h, 0);
  let v_at = view_base(V_VIEW, b, h, 0);
  let m_at = view_base(M_VIEW, b, h, r);
  for (var t = 0; t < last; t += i32(COLS)) {
    for (var e = lid; e < COLS * DK4; e += ROWS) {
      let key = min(t + i32(e / DK4), seq_k - 1);
      k_tile[e] = read_k(k_at + key * info[K_VIEW + 3], info[K_VIEW + 4], e % DK4, dk);
    }
    for (var e = lid; e < COLS * DV4; e += ROWS) {
      let key = min(t + i32(e / DV4), seq_k - 1);
      v_tile[e] = read_v(v_at + key * info[V_VIEW + 3], info[V_VIEW + 4], e % DV4, dv);
    }
    workgroupBarrier();
    let n = min(COLS, u32(last - t));  // the last tile may be short (uniform)
    for (var j = 0u; j < n; j++) {
      var acc = vec4<f32>(0.0);
      for (var c = 0u; c < DK4; c++) {
        acc = fma(qr[c], k_tile[j * DK4 + c], acc);
      }
      var x = acc.x + acc.y + acc.z + acc.w;
      if (HAS_MASK) {
        x += mask[m_at + (t + i32(j)) * info[M_VIEW + 4]];
      }
      if (t + i32(j) > frontier) {
        x = pyrite_bits(0xff800000u);  // -inf: a key past the causal frontier
      }
      if (x > m) {  // a new maximum: what was summed so far shrinks by exp(m - x)
        let fade = exp(m - x);
        l *= fade;
        for (var c = 0u; c < DV4; c++) {
          o[c] *= fade;
        }
        m = x;
      }
      let p = exp(x - m);
      l += p;
      for (var c = 0u; c < DV4; c++) {
        o[c] = fma(vec4<f32>(p), v_tile[j * DV4 + c], o[c]);
      }
    }
    workgroupBarrier();
  }
  if (row < seq_q) {
    let at_row = (b * info[1] + h) * seq_q + row;
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var c = 0u; c < DV4; c++) {
      write_row(at_row * dv, c, dv, o[c] * inv);
    }
    lse[at_row] = select(m + log(l), pyrite_bits(0x7f800000u), l == 0.0);
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
