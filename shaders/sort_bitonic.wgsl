// sort_bitonic.wgsl: stable sort of every row of a strided tensor (values and indices),
// as a bitonic network over (value, index) pairs in rows padded to a power of two.
// Entry points: `init` copies rows into keys/idx, `exchange` is one compare-exchange pass (k, j),
// `finish` writes the first len entries of each row densely. Ties keep index order (stable);
// NaN sorts as the largest value, as numpy does; padding always sorts last.
// Bindings: 0 info: array<i32> = [rows, len, pow2, descending, k, j, rank, offset, step,
//             shape[rank], strides[rank]] (the row dims of the input view),
//           1 src: array<{{ in_type }}>, 2 keys: array<{{ acc_type }}>, 3 idx: array<i32>,
//           4 out_v: array<{{ in_type }}>, 5 out_i: array<i32>.
// Placeholders: {{ enable }}, {{ in_type }}, {{ acc_type }}, {{ zero }} (of acc_type),
//   {{ load }} (src[s] as acc_type), {{ store }} (v as in_type), {{ workgroup }},
//   {{ nan_test }} (a NaN test of v on its bits, or false for integers).
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<{{ in_type }}>;
@group(0) @binding(2) var<storage, read_write> keys: array<{{ acc_type }}>;
@group(0) @binding(3) var<storage, read_write> idx: array<i32>;
@group(0) @binding(4) var<storage, read_write> out_v: array<{{ in_type }}>;
@group(0) @binding(5) var<storage, read_write> out_i: array<i32>;

// NaN test on the bits: `v != v` is folded away by some drivers
fn is_nan(v: {{ acc_type }}) -> bool {
  return {{ nan_test }};
}

// whether (v, i) goes before (w, j) in the sorted row
fn before(v: {{ acc_type }}, i: i32, w: {{ acc_type }}, j: i32) -> bool {
  let len = info[1];
  if (i >= len || j >= len) {
    return i < j;
  }
  let desc = info[3] != 0;
  let v_nan = is_nan(v);
  let w_nan = is_nan(w);
  if (v_nan || w_nan) {
    if (v_nan && w_nan) {
      return i < j;
    }
    return select(w_nan, v_nan, desc);
  }
  if (v == w) {
    return i < j;
  }
  return select((v < w), (v > w), desc);
}

@compute @workgroup_size({{ workgroup }})
fn init(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = pyrite_flat(gid, nwg, {{ workgroup }}u);
  let pow2 = info[2];
  if (g >= info[0] * pow2) {
    return;
  }
  let row = g / pow2;
  let i = g % pow2;
  var v: {{ acc_type }} = {{ zero }};
  if (i < info[1]) {
    let s = info[7] + i * info[8] + pyrite_offset(row, info[6], 9, 9 + info[6]);
    v = {{ load }};
  }
  keys[g] = v;
  idx[g] = i;
}

@compute @workgroup_size({{ workgroup }})
fn exchange(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = pyrite_flat(gid, nwg, {{ workgroup }}u);
  let pow2 = info[2];
  if (g >= info[0] * pow2) {
    return;
  }
  let k = info[4];
  let j = info[5];
  let i = g % pow2;
  let l = i ^ j;
  if (l <= i) {
    return;
  }
  let p = g;
  let q = g - i + l;
  let ascending_block = (i & k) == 0;
  let q_first = before(keys[q], idx[q], keys[p], idx[p]);
  let p_first = before(keys[p], idx[p], keys[q], idx[q]);
  if ((ascending_block && q_first) || (!ascending_block && p_first)) {
    let tv = keys[p];
    keys[p] = keys[q];
    keys[q] = tv;
    let ti = idx[p];
    idx[p] = idx[q];
    idx[q] = ti;
  }
}

@compute @workgroup_size({{ workgroup }})
fn finish(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = pyrite_flat(gid, nwg, {{ workgroup }}u);
  let len = info[1];
  if (g >= info[0] * len) {
    return;
  }
  let src_pos = (g / len) * info[2] + g % len;
  let v = keys[src_pos];
  out_v[g] = {{ store }};
  out_i[g] = idx[src_pos];
}
