// unpack_f16.wgsl: half-precision values (as uploaded: two per u32 word, little-endian) to f32,
// with WGSL's core unpack2x16float (no shader-f16 feature needed). What loading a half-
// precision record onto an f32 device does, instead of converting each value on the host.
// Bindings: 0 info: array<i32> = [numel, first], 1 src: array<u32> (the values from word
//           `first` on, ceil(numel / 2) words: a record's tensors share one staging buffer),
//           2 out: array<f32> (dense).
// Placeholders: {{ enable }}, {{ workgroup }}.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (g >= info[0]) {
    return;
  }
  let pair = unpack2x16float(src[info[1] + g / 2]);
  out[g] = select(pair.x, pair.y, (g & 1) == 1);
}
