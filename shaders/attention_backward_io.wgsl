// attention_backward_io.wgsl: the bindings of the attention gradient kernels
// (attention_backward.wgsl, attention_tiled_query.wgsl, attention_tiled_key.wgsl):
// attention_inputs.wgsl's, then 5 dout (the output gradient, read through its strides),
// 6 stats: array<vec2<f32>> (lse, delta) a query row (attention_delta.wgsl), 7 grad: the
// kernel's output; and `read_g`, dout's element i (attention_load.wgsl).
// No placeholders.
#include "attention_inputs.wgsl"
@group(0) @binding(5) var<storage, read> dout: array<f32>;
@group(0) @binding(6) var<storage, read> stats: array<vec2<f32>>;
@group(0) @binding(7) var<storage, read_write> grad: array<f32>;

fn read_g(i: i32) -> f32 {
  return dout[i];
}
