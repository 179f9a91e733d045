// softmax.wgsl: softmax or log_softmax along one dim; one workgroup per row, three passes
// (max, sum of exp(x - max), write), all in f32.
// Bindings: 0 info: array<i32> = [n_rows, rank, len, step, offset, out_step, shape[rank],
//             strides[rank], out_strides[rank]] (shape with the dim 1; input strides; the
//             dense output's strides), 1 src: array<{{ io_type }}>, 2 dst: array<{{ io_type }}>.
// Placeholders: {{ enable }}, {{ io_type }} (f32 or f16), {{ result }} (the output from
//   x, m (row max) and s (row sum of exp(x - m))), {{ workgroup }}.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<{{ io_type }}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{ io_type }}>;

var<workgroup> partial: array<f32, {{ workgroup }}>;

fn tree_max(lid: u32) -> f32 {
  for (var s = {{ workgroup }}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      partial[lid] = max(partial[lid], partial[lid + s]);
    }
    workgroupBarrier();
  }
  return partial[0];
}

fn tree_sum(lid: u32) -> f32 {
  for (var s = {{ workgroup }}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      partial[lid] = partial[lid] + partial[lid + s];
    }
    workgroupBarrier();
  }
  return partial[0];
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = pyrite_flat(wid, nwg, 1u);
  let rank = info[1];
  let len = select(0, info[2], row < info[0]);
  let stride = info[3];
  let out_step = info[5];
  let at = pyrite_offsets(row, rank, 6, vec4<i32>(6 + rank, 6 + 2 * rank, 0, 0));
  let base = info[4] + at.x;
  let out_base = at.y;
  var m = pyrite_bits(0xff800000u);
  for (var k = i32(lid); k < len; k += {{ workgroup }}) {
    m = max(m, f32(src[base + k * stride]));
  }
  partial[lid] = m;
  workgroupBarrier();
  m = tree_max(lid);
  workgroupBarrier();
  var s = 0.0;
  for (var k = i32(lid); k < len; k += {{ workgroup }}) {
    s += exp(f32(src[base + k * stride]) - m);
  }
  partial[lid] = s;
  workgroupBarrier();
  s = tree_sum(lid);
  for (var k = i32(lid); k < len; k += {{ workgroup }}) {
    let x = f32(src[base + k * stride]);
    dst[out_base + k * out_step] = {{ io_type }}({{ result }});
  }
}
