// attention_tiles.wgsl: what the register-blocked attention kernels share
// (attention_tiled_forward.wgsl, attention_tiled_query.wgsl, attention_tiled_key.wgsl): the tile
// shape, the workgroup arrays and the staging of tiles into them. The including kernel declares
// info, q, k, v (bindings 0-3), `fn read_g(i: i32) -> f32` (the output gradient's element i; 0 in
// the forward, which has none) and the constants GX, QM, BK, RV, DK4, DV4, HAS_MASK, and includes
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

// Element i of q, k, v or dout (`which` 0..3).
fn load(which: u32, i: i32) -> f32 {
  if (which == 0u) {
    return q[i];
  }
  if (which == 1u) {
    return k[i];
  }
  if (which == 2u) {
    return v[i];
  }
  return read_g(i);
}

// Stage chunk `ch` (head-dim elements ch * BK ..) of the workgroup's rows (first `r0` of `seq`,
// of `which` through `at`, `n` wide) into a_t, times `mul`. Consecutive threads read
// consecutive elements of a row.
fn stage_a(which: u32, at: View, r0: i32, seq: i32, ch: i32, n: i32, mul: f32, lid: u32) {
  for (var e = lid; e < BK * QUADS; e += THREADS) {
    let kk = e % BK;
    let g = i32(e / BK);
    let d = ch * i32(BK) + i32(kk);
    var x = vec4<f32>(0.0);
    if (d < n) {
      let col = at.base + d * at.step;
      for (var i = 0u; i < QUAD; i++) {
        x[i] = load(which, col + min(r0 + 4 * g + i32(i), seq - 1) * at.seq) * mul;
      }
    }
    a_t[kk * A_ROW + u32(g)] = x;
  }
}

// The same for the tile's columns (first `c0`) into b_t: vec4 g holds columns g + GX i.
fn stage_b(which: u32, at: View, c0: i32, seq: i32, ch: i32, n: i32, mul: f32, lid: u32) {
  for (var e = lid; e < BK * GX; e += THREADS) {
    let kk = e % BK;
    let g = i32(e / BK);
    let d = ch * i32(BK) + i32(kk);
    var x = vec4<f32>(0.0);
    if (d < n) {
      let col = at.base + d * at.step;
      for (var i = 0u; i < QUAD; i++) {
        x[i] = load(which, col + min(c0 + g + i32(GX * i), seq - 1) * at.seq) * mul;
      }
    }
    b_t[kk * B_ROW + u32(g)] = x;
  }
}

// Stage the tile's rows (first `c0` of `seq`, `n` wide) whole into rows_t (zeros past n).
fn stage_rows(which: u32, at: View, c0: i32, seq: i32, n: i32, lid: u32) {
  for (var e = lid; e < BC * GX * RV; e += THREADS) {
    let j = i32(e / (GX * RV));
    let d = 4 * i32(e % (GX * RV));
    let row = at.base + min(c0 + j, seq - 1) * at.seq;
    var x = vec4<f32>(0.0);
    for (var i = 0u; i < QUAD; i++) {
      x[i] = select(0.0, load(which, row + min(d + i32(i), n - 1) * at.step), d + i32(i) < n);
    }
    rows_t[e] = x;
  }
}
