// matmul_int8.wgsl: c (m, n) = a (m, k) @ b (k, n) on int8 values, exact int32 accumulators.
// Both operands arrive packed four int8 a u32 word along k (pack_int.wgsl): a as (m, kw) words,
// b transposed as (n, kw) words, kw = ceil(k / 4), padding zero. Each workgroup computes a
// TILE x TILE tile (TILE = 16 * R), each invocation R x R outputs (rows ty + 16 i, columns
// tx + 16 j: neighbouring invocations read neighbouring words of workgroup memory, and write
// neighbouring outputs), stepping through k eight words (32 values) at a time. The tiles are
// kept k-major ([word][row]).
// Bindings: 0 info: array<i32> = [m, n, kw], 1 a: array<u32>, 2 b: array<u32>,
//           3 c: array<i32>.
// Placeholders: {{ enable }} (the language extension line, or empty), {{ dot }} (a function
//   `fn dot4(x: u32, y: u32) -> i32`: WGSL's dot4I8Packed where the adapter has it, else a
//   portable unpacking one), {{ r }} (R: 4, or 8 for large products: more reuse per load).
{{ enable }}
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> c: array<i32>;

{{ dot }}

const KT: i32 = 8;
const R: i32 = {{ r }};
const TILE: i32 = 16 * R;
const LOADS: i32 = TILE * KT / 256;  // words of each operand's tile per invocation
var<workgroup> tile_a: array<array<u32, TILE>, KT>;
var<workgroup> tile_b: array<array<u32, TILE>, KT>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let m = info[0];
  let n = info[1];
  let kw = info[2];
  let row0 = i32(wid.y) * TILE;
  let col0 = i32(wid.x) * TILE;
  let tx = i32(lid.x);
  let ty = i32(lid.y);
  let flat = ty * 16 + tx;
  var acc: array<array<i32, R>, R>;
  for (var k0 = 0; k0 < kw; k0 += KT) {
    for (var l = 0; l < LOADS; l++) {
      let slot = flat + l * 256;
      let r = slot / KT;
      let w = slot % KT;
      var va = 0u;
      var vb = 0u;
      if (row0 + r < m && k0 + w < kw) {
        va = a[(row0 + r) * kw + k0 + w];
      }
      if (col0 + r < n && k0 + w < kw) {
        vb = b[(col0 + r) * kw + k0 + w];
      }
      tile_a[w][r] = va;
      tile_b[w][r] = vb;
    }
    workgroupBarrier();
    for (var w = 0; w < KT; w++) {
      var xs: array<u32, R>;
      var ys: array<u32, R>;
      for (var i = 0; i < R; i++) {
        xs[i] = tile_a[w][ty + 16 * i];
        ys[i] = tile_b[w][tx + 16 * i];
      }
      for (var i = 0; i < R; i++) {
        for (var j = 0; j < R; j++) {
          acc[i][j] += dot4(xs[i], ys[j]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0; i < R; i++) {
    let row = row0 + ty + 16 * i;
    for (var j = 0; j < R; j++) {
      let col = col0 + tx + 16 * j;
      if (row < m && col < n) {
        c[row * n + col] = acc[i][j];
      }
    }
  }
}
