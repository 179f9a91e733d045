// attention_tiles.wgsl: what the register-blocked attention kernels share
// (attention_tiled_forward.wgsl, attention_tiled_query.wgsl, attention_tiled_key.wgsl): the tile
// shape, the workgroup arrays and the staging of tiles into them. The including kernel declares
// info, q, k, v (bindings 0-3), `fn read_g(i: i32) -> f32` (the output gradient's element i; 0 in
// the forward, which has none) and the constants GX, BK, RV, DK4, DV4, HAS_MASK, and includes
// attention_common.wgsl first. The layout is described in attention_tiled_forward.wgsl.
// No placeholders.
const GY: u32 = 16u;
const TM: u32 = 4u;
const TN: u32 = 4u;
const BR: u32 = 64u;
const BC: u32 = 4u * GX;
const THREADS: u32 = GX * GY;
const NEG_INF: u32 = 0xff800000u;

var<workgroup> a_t: array<vec4<f32>, BK * GY>;
var<workgroup> b_t: array<vec4<f32>, BK * GX>;
var<workgroup> p_t: array<vec4<f32>, BC * GY>;
var<workgroup> rows_t: array<vec4<f32>, BC * GX * RV>;

// One element of a row of q, k, v or dout (`which` 0..3) through its view; 0 past `n`.
fn element(which: u32, base: i32, d: i32, n: i32) -> f32 {
  if (d >= n) {
    return 0.0;
  }
  if (which == 0u) {
    return q[base + d * info[Q_VIEW + 4]];
  }
  if (which == 1u) {
    return k[base + d * info[K_VIEW + 4]];
  }
  if (which == 2u) {
    return v[base + d * info[V_VIEW + 4]];
  }
  return read_g(base + d * info[G_VIEW + 4]);
}

// Stage chunk `ch` (head-dim elements ch * BK ..) of the workgroup's rows (first row `r0`, of
// `seq`, in the view `which`, `n` wide) into a_t, times `mul`.
fn stage_a(which: u32, view: i32, b: i32, h: i32, r0: i32, seq: i32, ch: i32, n: i32,
           mul: f32, lid: u32) {
  for (var e = lid; e < BK * GY; e += THREADS) {
    let kk = i32(e % BK);
    let g = i32(e / BK);
    var x: vec4<f32>;
    for (var i = 0u; i < TM; i++) {
      let r = min(r0 + 4 * g + i32(i), seq - 1);
      x[i] = element(which, view_base(view, b, h, r), ch * i32(BK) + kk, n);
    }
    a_t[u32(kk) * GY + u32(g)] = x * mul;
  }
}

// The same for the tile's columns (first `c0`) into b_t.
fn stage_b(which: u32, view: i32, b: i32, h: i32, c0: i32, seq: i32, ch: i32, n: i32,
           mul: f32, lid: u32) {
  for (var e = lid; e < BK * GX; e += THREADS) {
    let kk = i32(e % BK);
    let g = i32(e / BK);
    var x: vec4<f32>;
    for (var i = 0u; i < TM; i++) {
      let r = min(c0 + 4 * g + i32(i), seq - 1);
      x[i] = element(which, view_base(view, b, h, r), ch * i32(BK) + kk, n);
    }
    b_t[u32(kk) * GX + u32(g)] = x * mul;
  }
}

// Stage the tile's rows (first `c0` of `seq`, view `which`, `n` wide) whole into rows_t: row j,
// vec4 column u at j * GX * RV + u (zeros past n).
fn stage_rows(which: u32, view: i32, b: i32, h: i32, c0: i32, seq: i32, n: i32, lid: u32) {
  for (var e = lid; e < BC * GX * RV; e += THREADS) {
    let j = i32(e / (GX * RV));
    let u = i32(e % (GX * RV));
    let base = view_base(view, b, h, min(c0 + j, seq - 1));
    let d = 4 * u;
    rows_t[e] = vec4<f32>(element(which, base, d, n), element(which, base, d + 1, n),
                          element(which, base, d + 2, n), element(which, base, d + 3, n));
  }
}
