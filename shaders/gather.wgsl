// gather.wgsl: out[c] = src[c with c[dim] replaced by index[c]], out dense of index's shape.
// select() uses it too, with a 1-D index viewed as stride 0 outside dim.
// Bindings: 0 info: array<i32> = [numel, rank, step, src_offset, index_offset, shape[rank],
//             src_strides[rank], index_strides[rank]] (shape is the output's; src's stride
//             along dim is `step`, and 0 in src_strides),
//           1 src: array<{{ io_type }}>, 2 index: array<i32>, 3 out: array<{{ io_type }}>.
// Placeholders: {{ enable }}, {{ io_type }}, {{ workgroup }}.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<{{ io_type }}>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<{{ io_type }}>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (g >= info[0]) {
    return;
  }
  let rank = info[1];
  let at = pyrite_offsets(g, rank, 5, vec4<i32>(5 + rank, 5 + 2 * rank, 0, 0));
  out[g] = src[info[3] + at.x + index[info[4] + at.y] * info[2]];
}
