// attention_inputs.wgsl: the bindings every attention kernel over q, k and v opens with (the row
// kernels attention_forward.wgsl and attention_backward.wgsl, the register-blocked
// attention_tiled_*.wgsl), through attention_forward_io.wgsl or attention_backward_io.wgsl:
// 0 info: array<i32> (attention_common.wgsl's words), 1 q, 2 k, 3 v, 4 mask (a 4-byte zero when
// there is none), array<f32> read through their strides.
// No placeholders.
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
