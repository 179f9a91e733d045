// matmul_weight_only.wgsl: c (m, n) = x (m, k) @ dequantize(w) (k, n) for a weight kept packed
// (pack_int.wgsl: BITS-bit values, 32 / BITS a u32 word along k, stored transposed as (n, kw)
// words). Each value is unpacked and dequantized in registers, (q - offset) * scale, with the
// params of its block: block `kk / block` along k, one (scale, offset) per (block, column);
// per-tensor and per-channel params arrive expanded to that layout. x is f32 (m, k) dense.
// One invocation per output, 16 x 16 per workgroup, x read through workgroup memory.
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
var<workgroup> tile_x: array<array<f32, 32>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let m = info[0];
  let n = info[1];
  let k = info[2];
  let kw = info[3];
  let block = info[4];
  let row = i32(wid.y) * 16 + i32(lid.y);
  let col = i32(wid.x) * 16 + i32(lid.x);
  let lrow = i32(lid.y);
  let lx = i32(lid.x);
  var acc = 0.0;
  // 32 values of k a step: one word of 8-bit values is 4 of them, of 4-bit values 8
  for (var k0 = 0; k0 < k; k0 += 32) {
    for (var l = 0; l < 2; l++) {
      let kk = k0 + lx * 2 + l;
      var v = 0.0;
      if (row < m && kk < k) {
        v = x[row * k + kk];
      }
      tile_x[lrow][lx * 2 + l] = v;
    }
    workgroupBarrier();
    if (col < n) {
      for (var j = 0; j < 32; j += PER_WORD) {
        let kk = k0 + j;
        if (kk < k) {
          let word = w[col * kw + kk / PER_WORD];
          for (var t = 0; t < PER_WORD; t++) {
            let kt = kk + t;
            if (kt < k) {
              let shift = 32u - BITS * u32(t + 1);
              let q = bitcast<i32>(word << shift) >> (32u - BITS);
              let p = (kt / block) * n + col;
              acc += tile_x[lrow][j + t] * (f32(q - offset[p]) * scale[p]);
            }
          }
        }
      }
    }
    workgroupBarrier();
  }
  if (row < m && col < n) {
    c[row * n + col] = acc;
  }
}
