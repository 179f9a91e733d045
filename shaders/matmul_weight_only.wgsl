// matmul_weight_only.wgsl: c (m, n) = x (m, k) @ dequantize(w) (k, n) for a weight kept packed
// (pack_int.wgsl: BITS-bit values, 32 / BITS a u32 word along k, stored transposed as (n, kw)
// words). Each workgroup computes a 128 x 128 tile of c, each invocation 8 x 8 outputs (the
// 4-row groups ty + 16 g, the 4-column groups tx + 16 h) in named vec4 registers (arrays of
// accumulators get spilled); both tiles are k-major vec4s of four rows (columns); per step
// of 16 values of k the workgroup unpacks and dequantizes the weight tile into workgroup memory,
// (q - offset) * scale with the params of the value's block (block `kk / block` along k, one
// (scale, offset) per (block, column); per-tensor and per-channel params arrive expanded to
// that layout), so each weight is unpacked once per 128 rows. x is f32 (m, k) dense.
// Bindings: 0 info: array<i32> = [m, n, k, kw, block], 1 x: array<f32>, 2 w: array<u32>,
//           3 scale: array<f32> (blocks * n), 4 offset: array<i32> (blocks * n),
//           5 c: array<f32>.
// Placeholders: {{ bits }} (4 or 8).
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> scale: array<f32>;
@group(0) @binding(4) var<storage, read> offset: array<i32>;
@group(0) @binding(5) var<storage, read_write> c: array<f32>;

const BITS: u32 = {{ bits }}u;
const PER_WORD: i32 = 32 / {{ bits }};
const KS: i32 = 16;  // values of k per step
const WORDS: i32 = KS / PER_WORD;  // words of one column per step
var<workgroup> tile_x: array<vec4<f32>, 512>;  // [kk][row / 4]: 8 KiB
var<workgroup> tile_w: array<vec4<f32>, 512>;  // [kk][col / 4]: 8 KiB, 16 KiB in all (the
// default limit of workgroup storage)

fn store4(row: i32, col: i32, m: i32, n: i32, v: vec4<f32>) {
  if (row < m) {
    let base = row * n + col;
    if (col < n) { c[base] = v.x; }
    if (col + 1 < n) { c[base + 1] = v.y; }
    if (col + 2 < n) { c[base + 2] = v.z; }
    if (col + 3 < n) { c[base + 3] = v.w; }
  }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let m = info[0];
  let n = info[1];
  let k = info[2];
  let kw = info[3];
  let block = info[4];
  let row0 = i32(wid.y) * 128;
  let col0 = i32(wid.x) * 128;
  let tx = i32(lid.x);
  let ty = i32(lid.y);
  let flat = ty * 16 + tx;
  var acc0_0 = vec4<f32>(0.0);
  var acc0_1 = vec4<f32>(0.0);
  var acc1_0 = vec4<f32>(0.0);
  var acc1_1 = vec4<f32>(0.0);
  var acc2_0 = vec4<f32>(0.0);
  var acc2_1 = vec4<f32>(0.0);
  var acc3_0 = vec4<f32>(0.0);
  var acc3_1 = vec4<f32>(0.0);
  var acc4_0 = vec4<f32>(0.0);
  var acc4_1 = vec4<f32>(0.0);
  var acc5_0 = vec4<f32>(0.0);
  var acc5_1 = vec4<f32>(0.0);
  var acc6_0 = vec4<f32>(0.0);
  var acc6_1 = vec4<f32>(0.0);
  var acc7_0 = vec4<f32>(0.0);
  var acc7_1 = vec4<f32>(0.0);
  for (var k0 = 0; k0 < k; k0 += KS) {
    // x: 128 rows x 16 values, 8 per invocation
    for (var l = 0; l < 8; l++) {
      let slot = flat + l * 256;
      let r = slot / KS;
      let kk = slot % KS;
      var v = 0.0;
      if (row0 + r < m && k0 + kk < k) {
        v = x[(row0 + r) * k + k0 + kk];
      }
      tile_x[kk * 32 + r / 4][r % 4] = v;
    }
    // w: 128 columns x WORDS words, each word unpacked into PER_WORD values
    for (var slot = flat; slot < 128 * WORDS; slot += 256) {
      let col = slot / WORDS;
      let j = slot % WORDS;
      let gcol = col0 + col;
      let kbase = k0 + j * PER_WORD;
      var word = 0u;
      if (gcol < n && kbase < k) {
        word = w[gcol * kw + kbase / PER_WORD];
      }
      for (var t = 0; t < PER_WORD; t++) {
        let kt = kbase + t;
        var v = 0.0;
        if (gcol < n && kt < k) {
          let q = bitcast<i32>(word << (32u - BITS * u32(t + 1))) >> (32u - BITS);
          let p = (kt / block) * n + gcol;
          v = f32(q - offset[p]) * scale[p];
        }
        tile_w[(j * PER_WORD + t) * 32 + col / 4][col % 4] = v;
      }
    }
    workgroupBarrier();
    for (var kk = 0; kk < KS; kk++) {
      let xa0 = tile_x[kk * 32 + ty + 0];
      let xa1 = tile_x[kk * 32 + ty + 16];
      let wb0 = tile_w[kk * 32 + tx + 0];
      let wb1 = tile_w[kk * 32 + tx + 16];
      acc0_0 = fma(vec4<f32>(xa0.x), wb0, acc0_0);
      acc0_1 = fma(vec4<f32>(xa0.x), wb1, acc0_1);
      acc1_0 = fma(vec4<f32>(xa0.y), wb0, acc1_0);
      acc1_1 = fma(vec4<f32>(xa0.y), wb1, acc1_1);
      acc2_0 = fma(vec4<f32>(xa0.z), wb0, acc2_0);
      acc2_1 = fma(vec4<f32>(xa0.z), wb1, acc2_1);
      acc3_0 = fma(vec4<f32>(xa0.w), wb0, acc3_0);
      acc3_1 = fma(vec4<f32>(xa0.w), wb1, acc3_1);
      acc4_0 = fma(vec4<f32>(xa1.x), wb0, acc4_0);
      acc4_1 = fma(vec4<f32>(xa1.x), wb1, acc4_1);
      acc5_0 = fma(vec4<f32>(xa1.y), wb0, acc5_0);
      acc5_1 = fma(vec4<f32>(xa1.y), wb1, acc5_1);
      acc6_0 = fma(vec4<f32>(xa1.z), wb0, acc6_0);
      acc6_1 = fma(vec4<f32>(xa1.z), wb1, acc6_1);
      acc7_0 = fma(vec4<f32>(xa1.w), wb0, acc7_0);
      acc7_1 = fma(vec4<f32>(xa1.w), wb1, acc7_1);
    }
    workgroupBarrier();
  }
  store4(row0 + 4 * (ty + 0) + 0, col0 + 4 * (tx + 0), m, n, acc0_0);
  store4(row0 + 4 * (ty + 0) + 0, col0 + 4 * (tx + 16), m, n, acc0_1);
  store4(row0 + 4 * (ty + 0) + 1, col0 + 4 * (tx + 0), m, n, acc1_0);
  store4(row0 + 4 * (ty + 0) + 1, col0 + 4 * (tx + 16), m, n, acc1_1);
  store4(row0 + 4 * (ty + 0) + 2, col0 + 4 * (tx + 0), m, n, acc2_0);
  store4(row0 + 4 * (ty + 0) + 2, col0 + 4 * (tx + 16), m, n, acc2_1);
  store4(row0 + 4 * (ty + 0) + 3, col0 + 4 * (tx + 0), m, n, acc3_0);
  store4(row0 + 4 * (ty + 0) + 3, col0 + 4 * (tx + 16), m, n, acc3_1);
  store4(row0 + 4 * (ty + 16) + 0, col0 + 4 * (tx + 0), m, n, acc4_0);
  store4(row0 + 4 * (ty + 16) + 0, col0 + 4 * (tx + 16), m, n, acc4_1);
  store4(row0 + 4 * (ty + 16) + 1, col0 + 4 * (tx + 0), m, n, acc5_0);
  store4(row0 + 4 * (ty + 16) + 1, col0 + 4 * (tx + 16), m, n, acc5_1);
  store4(row0 + 4 * (ty + 16) + 2, col0 + 4 * (tx + 0), m, n, acc6_0);
  store4(row0 + 4 * (ty + 16) + 2, col0 + 4 * (tx + 16), m, n, acc6_1);
  store4(row0 + 4 * (ty + 16) + 3, col0 + 4 * (tx + 0), m, n, acc7_0);
  store4(row0 + 4 * (ty + 16) + 3, col0 + 4 * (tx + 16), m, n, acc7_1);
}
