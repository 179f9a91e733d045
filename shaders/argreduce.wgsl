// argreduce.wgsl: index of the largest (argmax) or smallest (argmin) element along one dim.
// One workgroup per output element; ties go to the first index and NaN counts as the extreme,
// as numpy's argmax/argmin do.
// Bindings: 0 info: array<i32> = [n_out, rank, len, step, offset, shape[rank], strides[rank]]
//             (as in reduce.wgsl), 1 src: array<{{ in_type }}>, 2 dst: array<i32> (dense).
// Placeholders: {{ enable }}, {{ in_type }}, {{ acc_type }}, {{ load }} (src[i] as acc_type),
//   {{ identity }} (the worst value), {{ order }} (">" for argmax, "<" for argmin),
//   {{ workgroup }},
//   {{ nan_test }} (a NaN test of v on its bits, or false for integers).
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<{{ in_type }}>;
@group(0) @binding(2) var<storage, read_write> dst: array<i32>;

var<workgroup> best_v: array<{{ acc_type }}, {{ workgroup }}>;
var<workgroup> best_i: array<i32, {{ workgroup }}>;

// NaN test on the bits: `v != v` is folded away by some drivers
fn is_nan(v: {{ acc_type }}) -> bool {
  return {{ nan_test }};
}

// whether (w, j) beats (v, i)
fn better(v: {{ acc_type }}, i: i32, w: {{ acc_type }}, j: i32) -> bool {
  let w_nan = is_nan(w);
  let v_nan = is_nan(v);
  if (w_nan || v_nan) {
    return w_nan && (!v_nan || j < i);
  }
  return (w {{ order }} v) || (w == v && j < i);
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = pyrite_flat(wid, nwg, 1u);
  let live = row < info[0];
  var v: {{ acc_type }} = {{ identity }};
  var vi = 2147483647;
  if (live) {
    let base = info[4] + pyrite_offset(row, info[1], 5, 5 + info[1]);
    let len = info[2];
    let stride = info[3];
    for (var k = i32(lid); k < len; k += {{ workgroup }}) {
      let i = base + k * stride;
      let w = {{ load }};
      if (better(v, vi, w, k)) {
        v = w;
        vi = k;
      }
    }
  }
  best_v[lid] = v;
  best_i[lid] = vi;
  workgroupBarrier();
  for (var s = {{ workgroup }}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s && better(best_v[lid], best_i[lid], best_v[lid + s], best_i[lid + s])) {
      best_v[lid] = best_v[lid + s];
      best_i[lid] = best_i[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u && live) {
    dst[row] = select(best_i[0], 0, best_i[0] == 2147483647);
  }
}
