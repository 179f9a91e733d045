// matmul_int8.wgsl: c (m, n) = a (m, k) @ b (k, n) on int8 values, exact int32 accumulators.
// Both operands arrive packed four int8 a u32 word along k (pack_int.wgsl): a as (m, kw) words,
// b transposed as (n, kw) words, kw = ceil(k / 4), padding zero (so a ragged k adds zeros).
// Each workgroup of 16 x 16 invocations computes a TILE x TILE tile of c (TILE = 16 * R),
// stepping through k KT words (4 * KT values) at a time: the packed tiles of a and b are staged
// in workgroup memory k-major (row w holds word w of the tile's TILE rows, as vec4<u32> of four
// neighbouring rows), double-buffered, with the next step's words held in registers while the
// current step is multiplied (one barrier per step, as in matmul_tiled.wgsl). Each invocation
// multiplies an R x R block held in named vec4<i32> registers (arrays of accumulators get
// spilled). Its rows are the 4-row groups ty + 16 g, its columns the 4-column groups
// tx + 16 h, so one vec4 read of workgroup memory gives four rows (or columns) and neighbouring
// invocations read neighbouring vec4s. Loads outside the matrices read zero words; stores
// outside c are skipped.
// Bindings: 0 info: array<i32> = [m, n, kw], 1 a: array<u32>, 2 b: array<u32>,
//           3 c: array<i32>.
// Placeholders: {{ enable }} (the language extension line, or empty), {{ dot }} (a function
//   `fn dot4(x: u32, y: u32) -> i32`: WGSL's dot4I8Packed where the adapter has it, else a
//   portable unpacking one), {{ r }} (R: 4, or 8 for large products: more reuse per load),
//   {{ kt }} (KT, words of k per step: 2 buffers of 2 tiles, 16 * R * KT * 16 bytes of
//   workgroup memory <= 16 KiB), {{ acc_decl }}, {{ acc_step }}, {{ acc_store }} (the R x R
//   block's registers: declared, updated for word w of the staged tiles, stored),
//   {{ prefetch_decl }}, {{ prefetch_load }}, {{ prefetch_store }} (the registers holding an
//   invocation's words of the next step: declared, loaded, stored into workgroup memory);
//   all six written out by webgpu/quantized.py.
{{ enable }}
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> c: array<i32>;

{{ dot }}

const KT: u32 = {{ kt }}u;
const TILE: u32 = 16u * {{ r }}u;
const ROW: u32 = TILE / 4u;  // vec4s in one k-row of a staged tile
var<workgroup> tile_a: array<vec4<u32>, 2u * KT * ROW>;
var<workgroup> tile_b: array<vec4<u32>, 2u * KT * ROW>;

// word `slot % KT` of row `slot / KT` of the tile at (row0, k0) of a (or b), 0 outside
fn load_a(row0: u32, k0: u32, slot: u32, m: u32, kw: u32) -> u32 {
  let r = row0 + slot / KT;
  let kk = k0 + slot % KT;
  if (r < m && kk < kw) {
    return a[r * kw + kk];
  }
  return 0u;
}

fn load_b(col0: u32, k0: u32, slot: u32, n: u32, kw: u32) -> u32 {
  let r = col0 + slot / KT;
  let kk = k0 + slot % KT;
  if (r < n && kk < kw) {
    return b[r * kw + kk];
  }
  return 0u;
}

fn put(buf: u32, slot: u32, va: u32, vb: u32) {
  let r = slot / KT;
  let i = (buf * KT + slot % KT) * ROW + r / 4u;
  tile_a[i][r % 4u] = va;
  tile_b[i][r % 4u] = vb;
}

fn dot4x4(x: u32, y: vec4<u32>) -> vec4<i32> {
  return vec4<i32>(dot4(x, y.x), dot4(x, y.y), dot4(x, y.z), dot4(x, y.w));
}

fn store4(row: u32, col: u32, m: u32, n: u32, v: vec4<i32>) {
  if (row < m) {
    let base = row * n + col;
    if (col + 3u < n) {
      c[base] = v.x;
      c[base + 1u] = v.y;
      c[base + 2u] = v.z;
      c[base + 3u] = v.w;
    } else {
      if (col < n) { c[base] = v.x; }
      if (col + 1u < n) { c[base + 1u] = v.y; }
      if (col + 2u < n) { c[base + 2u] = v.z; }
    }
  }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let m = u32(info[0]);
  let n = u32(info[1]);
  let kw = u32(info[2]);
  let row0 = wid.y * TILE;
  let col0 = wid.x * TILE;
  let tx = lid.x;
  let ty = lid.y;
  let flat = ty * 16u + tx;
  {{ acc_decl }}
  {{ prefetch_decl }}
  let steps = (kw + KT - 1u) / KT;
  var k0 = 0u;
  {{ prefetch_load }}
  var buf = 0u;
  {{ prefetch_store }}
  workgroupBarrier();
  for (var s = 0u; s < steps; s++) {
    let more = s + 1u < steps;
    if (more) {
      k0 = (s + 1u) * KT;
      {{ prefetch_load }}
    }
    let base = buf * KT * ROW;
    for (var w = 0u; w < KT; w++) {
      {{ acc_step }}
    }
    if (more) {
      buf = 1u - buf;
      {{ prefetch_store }}
    }
    workgroupBarrier();
  }
  {{ acc_store }}
}
