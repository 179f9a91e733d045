// gather.wgsl: out[c] = src[c with c[dim] replaced by index[c]], out dense of index's shape.
// select() uses it too, with a 1-D index viewed as stride 0 outside dim.
// Bindings: 0 info: array<i32> = [numel, rank, dim, src_offset, index_offset, shape[rank],
//             src_strides[rank], index_strides[rank]] (shape is the output's),
//           1 src: array<{{ io_type }}>, 2 index: array<i32>, 3 out: array<{{ io_type }}>.
// Placeholders: {{ enable }}, {{ io_type }}, {{ workgroup }}.
{{ enable }}
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<{{ io_type }}>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<{{ io_type }}>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = i32(gid.x + gid.y * nwg.x * {{ workgroup }}u);
  if (g >= info[0]) {
    return;
  }
  let rank = info[1];
  let dim = info[2];
  var s = info[3];
  var ip = info[4];
  var r = g;
  for (var d = rank - 1; d >= 0; d--) {
    let size = info[5 + d];
    let c = r % size;
    r = r / size;
    ip += c * info[5 + 2 * rank + d];
    if (d != dim) {
      s += c * info[5 + rank + d];
    }
  }
  s += index[ip] * info[5 + rank + dim];
  out[g] = src[s];
}
