// scatter_add.wgsl: out = x, plus value[c'] added at c' with c'[dim] replaced by index[c'],
// for every c' of index's shape. Written gather-style (each output sums the entries that land
// on it, in index order), so it needs no atomics and is deterministic.
// Bindings: 0 info: array<i32> = [numel, rank, count, x_offset, index_offset, value_offset,
//             i_step, v_step, shape[rank] (x's), bound[rank], x_strides[rank],
//             index_strides[rank], value_strides[rank], along[rank]]: count is index's size
//             along dim, i_step and v_step index's and value's strides along it (0 in their
//             stride blocks); bound is index's shape with x's size at dim (an output outside
//             it receives nothing); along is 1 at dim and 0 elsewhere (a view whose offset is
//             the coordinate along dim),
//           1 x: array<{{ io_type }}>, 2 index: array<i32>, 3 value: array<{{ io_type }}>,
//           4 out: array<{{ io_type }}> (dense).
// Placeholders: {{ enable }}, {{ io_type }}, {{ acc_type }}, {{ load_x }}, {{ load_v }}
//   (x[xp], value[vp + j * v_step] as acc_type), {{ store }} (acc as io_type),
//   {{ workgroup }}.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<{{ io_type }}>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read> value: array<{{ io_type }}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{ io_type }}>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (g >= info[0]) {
    return;
  }
  let rank = info[1];
  let at = pyrite_offsets(g, rank, 8, vec4<i32>(8 + 2 * rank, 8 + 3 * rank, 8 + 4 * rank,
                                                8 + 5 * rank));
  let xp = info[3] + at.x;
  var acc: {{ acc_type }} = {{ load_x }};
  if (pyrite_within(g, rank, 8, 8 + rank)) {
    let ip = info[4] + at.y;
    let vp = info[5] + at.z;
    let i_step = info[6];
    let v_step = info[7];
    for (var j = 0; j < info[2]; j++) {
      if (index[ip + j * i_step] == at.w) {
        acc += {{ load_v }};
      }
    }
  }
  out[g] = {{ store }};
}
