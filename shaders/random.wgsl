// random.wgsl: counter-based random numbers: element i of call `counter` under `seed` is a
// hash of (seed, counter, i), so results do not depend on dispatch order or device.
// Hash: the PCG output permutation (O'Neill, "PCG: a family of ... RNGs"), chained.
// Bindings: 0 info: array<i32> = [numel, seed, counter, p0, p1] (p0/p1 are f32 bits for float
//             distributions: low/high, mean/std, prob; i32 low/high for integer uniform),
//           1 out: array<{{ out_type }}> (dense).
// Placeholders: {{ enable }}, {{ out_type }}, {{ sample }} (a compute value from u(lane)
//   in [0, 1), bits(lane), p0, p1), {{ store }} (v as out_type), {{ workgroup }}.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<{{ out_type }}>;

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (g >= info[0]) {
    return;
  }
  let stream = pcg(u32(info[1]) ^ pcg(u32(info[2]) + 0x9e3779b9u));
  let h0 = pcg(stream ^ pcg(2u * u32(g)));
  let h1 = pcg(stream ^ pcg(2u * u32(g) + 1u));
  let u0 = f32(h0 >> 8u) * (1.0 / 16777216.0);
  let u1 = f32(h1 >> 8u) * (1.0 / 16777216.0);
  let v = {{ sample }};
  out[g] = {{ store }};
}
