// attention_forward_io.wgsl: the bindings of the attention forwards (attention_forward.wgsl,
// attention_tiled_forward.wgsl): attention_inputs.wgsl's, then 5 out: (batch, heads, seq_q,
// d_v) dense and 6 lse: (batch, heads, seq_q) dense; and `read_g` (attention_load.wgsl's output
// gradient), 0: a forward has none.
// No placeholders.
#include "attention_inputs.wgsl"
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

fn read_g(i: i32) -> f32 {
  return 0.0;
}
