// index.wgsl: the index arithmetic every kernel shares: the linear id of an invocation, and the
// offset of an element of a shape in strided views of it. Templates take it with the line
// `#include "index.wgsl"`, generated kernels with `codegen.include("index.wgsl")`; either way it
// is pasted once per kernel.
// The functions read shapes and strides from the kernel's metadata by word position, so every
// kernel that includes this declares it as binding 0:
//   @group(0) @binding(0) var<storage, read> info: array<i32>;
// A block is `rank` words at info[at..at + rank), outermost dim first. Coordinates come from
// the row-major order of a shape block; no view's own offset is added.
// No placeholders.

// The linear index of `id` in a grid of `groups` workgroups of `size` invocations, folded into
// x and y as Kernels.grid does: (global_invocation_id, num_workgroups, workgroup size) numbers
// invocations, (workgroup_id, num_workgroups, 1u) numbers workgroups.
fn pyrite_flat(id: vec3<u32>, groups: vec3<u32>, size: u32) -> i32 {
  return i32(id.x + id.y * groups.x * size);
}

// The offsets of element i of the shape block at info[shape] in up to four views of that shape,
// one a lane, whose stride blocks start at the words in `strides`, from one decomposition of i.
// A lane the caller does not need names block 0 (the first rank words always exist).
fn pyrite_offsets(i: i32, rank: i32, shape: i32, strides: vec4<i32>) -> vec4<i32> {
  var at = vec4<i32>(0);
  var r = i;
  for (var d = rank - 1; d >= 0; d--) {
    let size = info[shape + d];
    at += (r % size) * vec4<i32>(info[strides.x + d], info[strides.y + d],
                                 info[strides.z + d], info[strides.w + d]);
    r = r / size;
  }
  return at;
}

// pyrite_offsets for one view.
fn pyrite_offset(i: i32, rank: i32, shape: i32, strides: i32) -> i32 {
  return pyrite_offsets(i, rank, shape, vec4<i32>(strides, 0, 0, 0)).x;
}

// Whether every coordinate of element i of the shape block at info[shape] is below the matching
// word of the block at info[bound] (i lies in a box at the origin).
fn pyrite_within(i: i32, rank: i32, shape: i32, bound: i32) -> bool {
  var r = i;
  for (var d = rank - 1; d >= 0; d--) {
    let size = info[shape + d];
    if (r % size >= info[bound + d]) {
      return false;
    }
    r = r / size;
  }
  return true;
}

// The coordinates of i in a rank-4 row-major shape given by its three inner sizes, innermost
// first, and returned innermost first: pyrite_unravel(i, vec3(W, H, C)) is (x, y, c, n).
fn pyrite_unravel(i: i32, inner: vec3<i32>) -> vec4<i32> {
  let r = i / inner.x;
  let q = r / inner.y;
  return vec4<i32>(i % inner.x, r % inner.y, q % inner.z, q / inner.z);
}
