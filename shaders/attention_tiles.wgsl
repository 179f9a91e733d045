// attention_tiles.wgsl: what the register-blocked attention kernels share
// (attention_tiled_forward.wgsl, attention_tiled_query.wgsl, attention_tiled_key.wgsl): the tile
// shape, the workgroup arrays, the staging of tiles into them and the two products (a chunk of
// scores; the weights times a tile's rows). The including kernel declares info, q, k, v
// (bindings 0-3), `fn read_g(i: i32) -> f32` (the output gradient's element i; 0 in the
// forward, which has none) and the constants GX, QM, BK, RV, DK4, DV4, HAS_MASK, and includes
// attention_common.wgsl first. The layout is described in attention_tiled_forward.wgsl.
// No placeholders.
const GY: u32 = 16u;
const QUAD: u32 = 4u;  // rows a vec4 of a_t or p_t holds
const TM: u32 = QUAD * QM;  // rows a thread owns: 4 rows in each of QM quads
const TN: u32 = 4u;
const QUADS: u32 = GY * QM;  // quads of rows a workgroup owns
const BR: u32 = QUAD * QUADS;
const BC: u32 = 4u * GX;
const THREADS: u32 = GX * GY;
const NEG_INF: u32 = 0xff800000u;
// row strides of the transposed chunks and of p_t, one vec4 longer than their rows: a warp's
// stores (consecutive head-dim elements, or consecutive columns) then fall in distinct banks
const A_ROW: u32 = QUADS + 1u;
const B_ROW: u32 = GX + 1u;
const P_ROW: u32 = QUADS + 1u;

// a_t[kk * A_ROW + g]: element kk of the chunk for rows 4g .. 4g + 3 (the workgroup's rows;
// thread ty owns quads ty + GY qm);
// b_t[kk * B_ROW + g]: element kk for columns g, g + GX, g + 2 GX, g + 3 GX of the tile (thread
// tx owns columns tx + GX jj); p_t[j * P_ROW + g]: the weights of column j for rows 4g .. 4g + 3;
// rows_t[j * GX * RV + u]: vec4 u of the tile's row j.
var<workgroup> a_t: array<vec4<f32>, BK * A_ROW>;
var<workgroup> b_t: array<vec4<f32>, BK * B_ROW>;
var<workgroup> p_t: array<vec4<f32>, BC * P_ROW>;
var<workgroup> rows_t: array<vec4<f32>, BC * GX * RV>;

// Where a (batch, head)'s rows are in one of q, k, v, dout: row r's element d is at
// base + r * seq + d * step.
struct View {
  base: i32,
  seq: i32,
  step: i32,
}

fn view_of(view: i32, b: i32, h: i32) -> View {
  return View(view_base(view, b, h, 0), info[view + 3], info[view + 4]);
}

#include "attention_load.wgsl"

// The staging is split in two so the kernels can prefetch: `fetch_*` reads a stage's elements
// from global memory into the thread's registers (its share: element lid + THREADS e of the
// stage), `store_*` writes them into workgroup memory. A kernel fetches the next stage before it
// computes on the current one (the loads are in flight during the multiply-adds) and stores it
// after the barrier that ends the computation.
const NA: u32 = (BK * QUADS + THREADS - 1u) / THREADS;  // a_t vec4s a thread stages
const NB: u32 = (BK * GX + THREADS - 1u) / THREADS;  // b_t vec4s
const NR: u32 = (BC * GX * RV + THREADS - 1u) / THREADS;  // rows_t vec4s
// Whether a tile's rows are prefetched too (during the last chunk's multiply-adds, held over the
// softmax) or fetched just before they are stored: on the H100 the prefetch took the tiled
// kernels 1.1-1.35x faster with 8 or 12 output vec4s a row and thread (TM * RV 16 and 24), and
// 1.4-2.6x slower with 32 (d = 128 at 8 rows a thread: registers spilled)
// (benchmarks/results/attention_kernels_prefetch_h100_s4b.json).
const PREFETCH_ROWS: bool = TM * RV <= 24u;

// Chunk `ch` (head-dim elements ch * BK ..) of the workgroup's rows (first `r0` of `seq`, of
// `which` through `at`, `n` wide), times `mul`, for a_t. Consecutive threads read consecutive
// elements of a row.
fn fetch_a(which: u32, at: View, r0: i32, seq: i32, ch: i32, n: i32, mul: f32, lid: u32)
    -> array<vec4<f32>, NA> {
  var x: array<vec4<f32>, NA>;
  for (var ea = 0u; ea < NA; ea++) {
    let e = lid + THREADS * ea;
    let d = ch * i32(BK) + i32(e % BK);
    if (e < BK * QUADS && d < n) {
      let col = at.base + d * at.step;
      let r = r0 + 4 * i32(e / BK);
      for (var i = 0u; i < QUAD; i++) {
        x[ea][i] = load(which, col + min(r + i32(i), seq - 1) * at.seq) * mul;
      }
    }
  }
  return x;
}

fn store_a(x: array<vec4<f32>, NA>, lid: u32) {
  for (var ea = 0u; ea < NA; ea++) {
    let e = lid + THREADS * ea;
    if (e < BK * QUADS) {
      a_t[(e % BK) * A_ROW + e / BK] = x[ea];
    }
  }
}

// The same for the tile's columns (first `c0`), for b_t: vec4 g holds columns g + GX i.
fn fetch_b(which: u32, at: View, c0: i32, seq: i32, ch: i32, n: i32, mul: f32, lid: u32)
    -> array<vec4<f32>, NB> {
  var x: array<vec4<f32>, NB>;
  for (var eb = 0u; eb < NB; eb++) {
    let e = lid + THREADS * eb;
    let d = ch * i32(BK) + i32(e % BK);
    if (e < BK * GX && d < n) {
      let col = at.base + d * at.step;
      let c = c0 + i32(e / BK);
      for (var i = 0u; i < QUAD; i++) {
        x[eb][i] = load(which, col + min(c + i32(GX * i), seq - 1) * at.seq) * mul;
      }
    }
  }
  return x;
}

fn store_b(x: array<vec4<f32>, NB>, lid: u32) {
  for (var eb = 0u; eb < NB; eb++) {
    let e = lid + THREADS * eb;
    if (e < BK * GX) {
      b_t[(e % BK) * B_ROW + e / BK] = x[eb];
    }
  }
}

// The tile's rows (first `c0` of `seq`, `n` wide) whole, for rows_t (zeros past n).
fn fetch_rows(which: u32, at: View, c0: i32, seq: i32, n: i32, lid: u32)
    -> array<vec4<f32>, NR> {
  var x: array<vec4<f32>, NR>;
  for (var er = 0u; er < NR; er++) {
    let e = lid + THREADS * er;
    let d = 4 * i32(e % (GX * RV));
    if (e < BC * GX * RV) {
      let row = at.base + min(c0 + i32(e / (GX * RV)), seq - 1) * at.seq;
      for (var i = 0u; i < QUAD; i++) {
        x[er][i] = select(0.0, load(which, row + min(d + i32(i), n - 1) * at.step),
                          d + i32(i) < n);
      }
    }
  }
  return x;
}

fn store_rows(x: array<vec4<f32>, NR>, lid: u32) {
  for (var er = 0u; er < NR; er++) {
    let e = lid + THREADS * er;
    if (e < BC * GX * RV) {
      rows_t[e] = x[er];
    }
  }
}

// acc[4 qm + i] += the thread's block of the staged chunks' product: rows 4 (ty + GY qm) + i of
// a_t times its columns tx + GX jj of b_t.
fn chunk_product(acc: array<vec4<f32>, TM>, tx: u32, ty: u32) -> array<vec4<f32>, TM> {
  var s = acc;
  for (var kk = 0u; kk < BK; kk++) {
    let y = b_t[kk * B_ROW + tx];
    for (var qm = 0u; qm < QM; qm++) {
      let x = a_t[kk * A_ROW + ty + GY * qm];
      for (var i = 0u; i < QUAD; i++) {
        s[4u * qm + i] = fma(vec4<f32>(x[i]), y, s[4u * qm + i]);
      }
    }
  }
  return s;
}

// The thread's block of weights `s` into p_t for rows_product (s[4 qm + i][jj]: row
// 4 (ty + GY qm) + i, column tx + GX jj; a vec4 of p_t holds a column of 4 rows).
fn store_weights(s: array<vec4<f32>, TM>, tx: u32, ty: u32) {
  for (var qm = 0u; qm < QM; qm++) {
    for (var jj = 0u; jj < TN; jj++) {
      p_t[(tx + GX * jj) * P_ROW + ty + GY * qm] = vec4<f32>(
        s[4u * qm][jj], s[4u * qm + 1u][jj], s[4u * qm + 2u][jj], s[4u * qm + 3u][jj]);
    }
  }
}

// acc[(4 qm + i) RV + u] += the weights of the staged tile's first n columns (p_t) times its
// rows (rows_t): the thread's rows 4 (ty + GY qm) + i and vec4 columns tx + GX u of the output.
fn rows_product(acc: array<vec4<f32>, TM * RV>, n: u32, tx: u32, ty: u32)
    -> array<vec4<f32>, TM * RV> {
  var o = acc;
  for (var j = 0u; j < n; j++) {
    var w: array<vec4<f32>, QM>;
    for (var qm = 0u; qm < QM; qm++) {
      w[qm] = p_t[j * P_ROW + ty + GY * qm];
    }
    for (var u = 0u; u < RV; u++) {
      let y = rows_t[j * GX * RV + tx + GX * u];
      for (var qm = 0u; qm < QM; qm++) {
        for (var i = 0u; i < QUAD; i++) {
          o[(4u * qm + i) * RV + u] = fma(vec4<f32>(w[qm][i]), y, o[(4u * qm + i) * RV + u]);
        }
      }
    }
  }
  return o;
}
