// reduce.wgsl: reduce one dim of a strided tensor; one workgroup per output element.
// Each invocation folds a strided run of the row; a shared-memory tree combines the runs.
// Bindings: 0 info: array<i32> = [n_out, rank, len, step, offset, shape[rank], strides[rank]]
//             (shape is the output's, the reduced dim 1; strides are the input's),
//           1 src: array<{{ in_type }}> (strided input), 2 dst: array<{{ out_type }}> (dense).
// Placeholders: {{ enable }} (enable f16 or nothing), {{ in_type }}, {{ out_type }},
//   {{ acc_type }} (compute type), {{ combine }} (registry expression over acc and x),
//   {{ identity }}, {{ load }} (src[i] as acc_type), {{ store }} (acc as out_type),
//   {{ workgroup }} (invocations per workgroup, a power of two).
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<{{ in_type }}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{ out_type }}>;

var<workgroup> partial: array<{{ acc_type }}, {{ workgroup }}>;

fn combine(acc: {{ acc_type }}, x: {{ acc_type }}) -> {{ acc_type }} {
  return {{ combine }};
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = pyrite_flat(wid, nwg, 1u);
  let live = row < info[0];
  var acc: {{ acc_type }} = {{ identity }};
  if (live) {
    let base = info[4] + pyrite_offset(row, info[1], 5, 5 + info[1]);
    let len = info[2];
    let stride = info[3];
    for (var k = i32(lid); k < len; k += {{ workgroup }}) {
      let i = base + k * stride;
      acc = combine(acc, {{ load }});
    }
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = {{ workgroup }}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      partial[lid] = combine(partial[lid], partial[lid + s]);
    }
    workgroupBarrier();
  }
  if (lid == 0u && live) {
    let acc_out = partial[0];
    dst[row] = {{ store }};
  }
}
