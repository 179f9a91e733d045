// matmul_naive.wgsl: batched c = a @ b with 16x16 shared-memory tiles, one output per
// invocation. Simple and correct on any adapter; the tuned kernel is matmul_tiled.wgsl.
// a and b are strided views (any row/col strides, broadcast batch dims have stride 0);
// c is dense (batch..., M, N).
// Bindings: 0 info: array<i32> = [M, N, K, batch_rank, a_offset, b_offset, a_row_stride,
//             a_col_stride, b_row_stride, b_col_stride, batch_start, batch_shape[batch_rank],
//             a_batch_strides[batch_rank], b_batch_strides[batch_rank]],
//           1 a, 2 b: array<{{ io_type }}>, 3 c: array<{{ io_type }}>.
// Placeholders: {{ enable }}, {{ io_type }} (storage type), {{ acc_type }} (compute type),
//   {{ zero }} (0 of acc_type), {{ load_a }}, {{ load_b }} (a[ia], b[ib] as acc_type),
//   {{ store }} (acc as io_type).
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> a: array<{{ io_type }}>;
@group(0) @binding(2) var<storage, read> b: array<{{ io_type }}>;
@group(0) @binding(3) var<storage, read_write> c: array<{{ io_type }}>;

var<workgroup> tile_a: array<array<{{ acc_type }}, 16>, 16>;
var<workgroup> tile_b: array<array<{{ acc_type }}, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let m = info[0];
  let n = info[1];
  let k = info[2];
  let rank = info[3];
  let batch = i32(wid.z) + info[10];
  let at = pyrite_offsets(batch, rank, 11, vec4<i32>(11 + rank, 11 + 2 * rank, 0, 0));
  let ao = info[4] + at.x;
  let bo = info[5] + at.y;
  let row = i32(wid.y * 16u + lid.y);
  let col = i32(wid.x * 16u + lid.x);
  var acc: {{ acc_type }} = {{ zero }};
  for (var t = 0; t < k; t += 16) {
    let ka = t + i32(lid.x);
    var va: {{ acc_type }} = {{ zero }};
    if (row < m && ka < k) {
      let ia = ao + row * info[6] + ka * info[7];
      va = {{ load_a }};
    }
    tile_a[lid.y][lid.x] = va;
    let kb = t + i32(lid.y);
    var vb: {{ acc_type }} = {{ zero }};
    if (kb < k && col < n) {
      let ib = bo + kb * info[8] + col * info[9];
      vb = {{ load_b }};
    }
    tile_b[lid.y][lid.x] = vb;
    workgroupBarrier();
    for (var i = 0; i < 16; i++) {
      acc += tile_a[lid.y][i] * tile_b[i][lid.x];
    }
    workgroupBarrier();
  }
  if (row < m && col < n) {
    c[(batch * m + row) * n + col] = {{ store }};
  }
}
