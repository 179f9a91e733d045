// scatter_add.wgsl: out = x, plus value[c'] added at c' with c'[dim] replaced by index[c'],
// for every c' of index's shape. Written gather-style (each output sums the entries that land
// on it, in index order), so it needs no atomics and is deterministic.
// Bindings: 0 info: array<i32> = [numel, rank, dim, x_offset, index_offset, value_offset,
//             shape[rank] (x's), index_shape[rank], x_strides[rank], index_strides[rank],
//             value_strides[rank]],
//           1 x: array<{{ io_type }}>, 2 index: array<i32>, 3 value: array<{{ io_type }}>,
//           4 out: array<{{ io_type }}> (dense).
// Placeholders: {{ enable }}, {{ io_type }}, {{ acc_type }}, {{ load_x }}, {{ load_v }}
//   (x[xp], value[vp] as acc_type), {{ store }} (acc as io_type), {{ workgroup }}.
{{ enable }}
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<{{ io_type }}>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read> value: array<{{ io_type }}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{ io_type }}>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = i32(gid.x + gid.y * nwg.x * {{ workgroup }}u);
  if (g >= info[0]) {
    return;
  }
  let rank = info[1];
  let dim = info[2];
  var xp = info[3];
  var ip = info[4];
  var vp = info[5];
  var inside = true;
  var want = 0;
  var r = g;
  for (var d = rank - 1; d >= 0; d--) {
    let size = info[6 + d];
    let c = r % size;
    r = r / size;
    xp += c * info[6 + 2 * rank + d];
    if (d == dim) {
      want = c;
    } else {
      inside = inside && c < info[6 + rank + d];
      ip += c * info[6 + 3 * rank + d];
      vp += c * info[6 + 4 * rank + d];
    }
  }
  var acc: {{ acc_type }} = {{ load_x }};
  if (inside) {
    let count = info[6 + rank + dim];
    let i_step = info[6 + 3 * rank + dim];
    let v_step = info[6 + 4 * rank + dim];
    for (var j = 0; j < count; j++) {
      if (index[ip + j * i_step] == want) {
        acc += {{ load_v }};
      }
    }
  }
  out[g] = {{ store }};
}
